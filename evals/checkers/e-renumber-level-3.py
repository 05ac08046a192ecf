"""Renumber the doors on Level 3: sort them by their current mark and give them the marks L3-D01, L3-D02, and so on (the mark is the door's Tag)."""
from .shared import edits

check = edits.doors_renumbered("Level 3", "L3-D{:02d}")
