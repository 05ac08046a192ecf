"""Renumber the doors on Level 2: sort them by their current mark and give them the marks L2-D01, L2-D02, and so on (the mark is the door's Tag)."""
from .shared import edits

check = edits.doors_renumbered("Level 2", "L2-D{:02d}")
