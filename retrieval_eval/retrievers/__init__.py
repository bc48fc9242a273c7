"""Retrievers: the contract, the registry, and one module per adapter type."""
