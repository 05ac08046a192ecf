"""Move column CA1 on Level 1 0.5 m east: it alone moves, by exactly that; no other product moves."""
import ifcopenshell.util.element as ue

from .shared import edits

check = edits.moved_by(lambda model: [c for c in model.by_type('IfcColumn')
                                      if c.Tag == 'CA1' and ue.get_container(c).Name == 'Level 1'],
                       (0.5, 0.0, 0.0))
