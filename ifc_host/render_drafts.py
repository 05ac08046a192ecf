"""IFC 4.3 draft geometry (``IFC4X3_RC*`` headers, read as the final schema: model_file.py) restated, in the render
server's copy of the model only, in the final schema's terms, so that the kernel builds it.

Two draft forms stop the kernel on files exporters wrote against the release candidates (ACCA's railway unit
tests, RC3):

- an ``IfcCurveSegment`` of an alignment's curves whose ``SegmentStart``/``SegmentLength`` are the parent curve's
  natural parameter (an arc's angle in radians, a line's multiple of its vector), tagged
  ``IfcNonNegativeLengthMeasure`` or ``IfcParameterValue``. The final schema has no ``IfcNonNegativeLengthMeasure``
  there, so such a segment is a draft's; its values become the lengths they stand for (``IfcLengthMeasure``:
  radius times angle, magnitude times parameter, a clothoid's parameter is its length already);
- an ``IfcSectionedSolidHorizontal`` whose ``CrossSectionPositions`` are distances along the directrix (measures,
  where the final schema has ``IfcAxis2PlacementLinear``). Each becomes an ``IfcAxis2PlacementLinear`` at an
  ``IfcPointByDistanceExpression`` of that distance along the directrix, no offset. The draft's
  ``FixedAxisVertical`` (dropped from the final schema; the lenient reading drops its value) is taken as TRUE, as
  ACCA's and buildingSMART's RC3 files write it: the section stays upright, so along an
  ``IfcSegmentedReferenceCurve`` it is swept along the curve's ``BaseCurve`` (the gradient curve), the cant not
  rolling it. ACCA's segmented reference curves are also placed by station, not by distance from the curve's start,
  which the kernel evaluates far off the alignment (a few km from it, at height 0); the gradient curve is right.

The user's file is never touched: the render server never writes its models. The solids are built by the kernel and
counted as built; only a cant along a segmented reference curve is not drawn (none in ACCA's files: zero cant).
"""
from __future__ import annotations

import ifcopenshell

_MEASURES = ("IfcNonNegativeLengthMeasure", "IfcParameterValue", "IfcLengthMeasure", "IfcPositiveLengthMeasure")


def restate_drafts(model: ifcopenshell.file) -> int:
    """Restate the model's draft curve segments and sectioned-solid positions in place; how many were."""
    try:
        segments = model.by_type("IfcCurveSegment")
        solids = model.by_type("IfcSectionedSolidHorizontal")
    except RuntimeError:  # a schema without them (IFC2X3, IFC4)
        return 0
    restated = 0
    for segment in segments:
        if _draft_segment(segment):
            scale = _parameter_length(segment.ParentCurve)
            for name in ("SegmentStart", "SegmentLength"):
                value = getattr(segment, name)
                setattr(segment, name, model.create_entity("IfcLengthMeasure", float(value.wrappedValue) * scale))
            restated += 1
    for solid in solids:
        positions = solid.CrossSectionPositions or ()
        if positions and all(_is_measure(p) for p in positions):
            if solid.Directrix.is_a("IfcSegmentedReferenceCurve"):  # FixedAxisVertical: the cant does not roll it
                solid.Directrix = solid.Directrix.BaseCurve
            solid.CrossSectionPositions = [model.create_entity("IfcAxis2PlacementLinear", model.create_entity(
                "IfcPointByDistanceExpression", model.create_entity("IfcLengthMeasure", float(p.wrappedValue)),
                0.0, 0.0, None, solid.Directrix), None, None) for p in positions]
            restated += 1
    return restated


def _draft_segment(segment: ifcopenshell.entity_instance) -> bool:
    values = [getattr(segment, name, None) for name in ("SegmentStart", "SegmentLength")]
    return all(_is_measure(v) for v in values) and any(v.is_a("IfcNonNegativeLengthMeasure") for v in values)


def _is_measure(value: object) -> bool:
    return isinstance(value, ifcopenshell.entity_instance) and value.is_a() in _MEASURES


def _parameter_length(curve: ifcopenshell.entity_instance) -> float:
    """Length along the curve per unit of its natural parameter."""
    if curve.is_a("IfcCircle"):
        return float(curve.Radius)
    if curve.is_a("IfcLine"):
        return float(curve.Dir.Magnitude)
    return 1.0
