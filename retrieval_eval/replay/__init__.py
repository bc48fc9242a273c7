"""Replays of production queries without labels: samples drawn from a query log, their rankings
stored per run, and how the rankings moved between two index builds (RBO, top-1 changes)."""
