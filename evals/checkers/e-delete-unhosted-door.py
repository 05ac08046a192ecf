"""Delete the door D101A (it stands in a wall without an opening)."""
from .shared import edits

check = edits.deleted(lambda model: [d for d in model.by_type("IfcDoor") if d.Tag == "D101A"])
