"""Rename the storey 'Ground Floor' to 'Level 0'."""
from .shared import edits

check = edits.storey_renamed("Ground Floor", "Level 0")
