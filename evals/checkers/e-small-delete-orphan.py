"""Delete every element that is not contained in a storey."""
import ifcopenshell.util.element as ue

from .shared import edits

check = edits.deleted(lambda model: [e for e in model.by_type("IfcElement")
                                     if not e.is_a("IfcOpeningElement") and ue.get_container(e) is None])
