"""Evaluation helpers: statistics and the routing evaluation runner."""
