"""Rendering runs, verdicts and leaderboards: text, Markdown, JSON, CSV and HTML."""
