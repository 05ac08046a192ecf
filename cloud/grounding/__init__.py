"""Grounding: a searchable index of each host's real API, so the model looks members up instead of guessing."""
