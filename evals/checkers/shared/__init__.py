"""Checking code shared by the suite's checkers (imported as `from .shared import answers`)."""
