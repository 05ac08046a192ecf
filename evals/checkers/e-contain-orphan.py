"""An element is not in any storey. It stands on Level 2: put it in Level 2."""
from .shared import edits

check = edits.orphans_contained_in("Level 2")
