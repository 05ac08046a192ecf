"""Move the column C-ORPHAN 1 m north (positive y)."""
from .shared import edits

check = edits.moved_by(lambda model: [c for c in model.by_type('IfcColumn') if c.Tag == 'C-ORPHAN'], (0.0, 1.0, 0.0))
