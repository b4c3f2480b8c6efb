"""Evaluation runners (routing; routing plus arguments) and what they share: statistics, eval files."""
