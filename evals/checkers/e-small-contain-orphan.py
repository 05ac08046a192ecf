"""Put every element that is not in a storey into Level 1."""
from .shared import edits

check = edits.orphans_contained_in("Level 1")
