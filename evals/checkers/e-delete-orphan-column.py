"""Delete the column with mark C-ORPHAN."""
from .shared import edits

check = edits.deleted(lambda model: [c for c in model.by_type("IfcColumn") if c.Tag == "C-ORPHAN"])
