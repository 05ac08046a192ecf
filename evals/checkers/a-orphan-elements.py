"""Find every building element that is not contained in any storey. Give their marks (Tag)."""
import ifcopenshell.util.element as ue

from .shared import answers


def expected(model):
    return sorted([e.Tag or e.Name for e in model.by_type('IfcElement') if not e.is_a('IfcOpeningElement') and ue.get_container(e) is None])


def others(model):
    return sorted([e.Tag for e in model.by_type('IfcElement') if getattr(e, 'Tag', None)])


check = answers.names_exactly(expected, others)
