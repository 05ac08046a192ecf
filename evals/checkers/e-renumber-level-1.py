"""Renumber the doors on Level 1: sort them by their current mark and give them the marks L1-D01, L1-D02, and so on (the mark is the door's Tag)."""
from .shared import edits

check = edits.doors_renumbered("Level 1", "L1-D{:02d}")
