"""Verdicts as data: the regression verdict's model and the significance tests it carries,
stored by the store and worded by reports (a domain package: it imports no layer above it)."""
