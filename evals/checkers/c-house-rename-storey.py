"""Rename the storey 'Dachgeschoss' to 'Attic'."""
from .shared import edits

check = edits.storey_renamed("Dachgeschoss", "Attic")
