"""Judging a run against history: the baseline rules, the regression verdict, the leaderboard of
several retrievers, and recording a judged run in the store."""
