"""The site plan of an infrastructure model draws its alignment's axis (IfcAlignment's horizontal layout)."""
from __future__ import annotations

import io
import math
from pathlib import Path

import ifcopenshell
import ifcopenshell.guid
import numpy as np
import pytest
from PIL import Image

from ifc_host.render import render_view
from ifc_host.render_alignment import alignment_lines
from ifc_host.render_axonometric import ALIGNMENT_COLOUR


def road(path: Path, with_layout: bool = True) -> Path:
    """A 4.3 model with one alignment and no storeys: 100 m east, a quarter circle of radius 50 m to the left,
    then 50 m north (the axis spans 150 m by 100 m). Without a layout, the same axis as a polyline."""
    model = ifcopenshell.file(schema="IFC4X3_ADD2")
    new = model.create_entity
    units = new("IfcUnitAssignment", [new("IfcSIUnit", UnitType="LENGTHUNIT", Name="METRE")])
    context = new("IfcGeometricRepresentationContext", ContextType="Model", CoordinateSpaceDimension=3,
                  Precision=1e-5, WorldCoordinateSystem=new("IfcAxis2Placement3D", new("IfcCartesianPoint", (0., 0., 0.))))
    project = new("IfcProject", ifcopenshell.guid.new(), Name="Road", RepresentationContexts=[context],
                  UnitsInContext=units)
    alignment = new("IfcAlignment", ifcopenshell.guid.new(), Name="Axis 1")
    new("IfcRelAggregates", ifcopenshell.guid.new(), RelatingObject=project, RelatedObjects=[alignment])
    if with_layout:
        horizontal = new("IfcAlignmentHorizontal", ifcopenshell.guid.new())
        new("IfcRelNests", ifcopenshell.guid.new(), RelatingObject=alignment, RelatedObjects=[horizontal])
        arc = math.pi / 2 * 50
        parameters = [((0.0, 0.0), 0.0, 0.0, 0.0, 100.0, "LINE"),
                      ((100.0, 0.0), 0.0, 50.0, 50.0, arc, "CIRCULARARC"),
                      ((150.0, 50.0), math.pi / 2, 0.0, 0.0, 50.0, "LINE")]
        segments = [new("IfcAlignmentSegment", ifcopenshell.guid.new(), DesignParameters=new(
            "IfcAlignmentHorizontalSegment", StartPoint=new("IfcCartesianPoint", start), StartDirection=direction,
            StartRadiusOfCurvature=r0, EndRadiusOfCurvature=r1, SegmentLength=length, PredefinedType=kind))
            for start, direction, r0, r1, length, kind in parameters]
        new("IfcRelNests", ifcopenshell.guid.new(), RelatingObject=horizontal, RelatedObjects=segments)
    else:
        points = [(0.0, 0.0), (100.0, 0.0), *((100 + 50 * math.sin(a), 50 - 50 * math.cos(a))
                                              for a in np.linspace(0, math.pi / 2, 12)[1:]), (150.0, 100.0)]
        curve = new("IfcPolyline", [new("IfcCartesianPoint", p) for p in points])
        alignment.Representation = new("IfcProductDefinitionShape", Representations=[new(
            "IfcShapeRepresentation", context, "Axis", "Curve2D", [curve])])
    model.write(str(path))
    return path


def test_the_layout_is_integrated_into_the_axis(tmp_path):
    [axis] = alignment_lines(ifcopenshell.open(str(road(tmp_path / "road.ifc"))))
    assert np.allclose(axis[0], (0, 0)) and np.allclose(axis[-1], (150, 100), atol=0.05)
    middle_of_arc = axis[np.argmin(np.abs(np.arctan2(axis[:, 1] - 50, axis[:, 0] - 100) + math.pi / 4))]
    assert math.dist(middle_of_arc, (100, 50)) == pytest.approx(50, abs=0.05)  # on the circle


@pytest.mark.parametrize("with_layout", [True, False], ids=["layout", "axis polyline"])
def test_the_site_plan_of_a_road_without_storeys_draws_its_alignment(tmp_path, with_layout):
    path = road(tmp_path / "road.ifc", with_layout)
    view = render_view(str(path), None, [], 600)
    assert view.view == "Site plan" and view.undrawn == ()
    rgb = np.asarray(Image.open(io.BytesIO(view.png)).convert("RGB")).astype(int)
    ink = (np.abs(rgb - np.array(ALIGNMENT_COLOUR)) <= 30).all(axis=2)
    ink[:60] = False  # the title bar and its legend swatch
    rows, columns = np.nonzero(ink)
    assert len(rows) > 500
    width, height = columns.max() - columns.min(), rows.max() - rows.min()
    assert width / height == pytest.approx(1.5, rel=0.08)  # 150 m by 100 m, north up
    # The straight start runs along the bottom (south), the end goes up the right (east) side.
    assert ink[rows.max() - 3:rows.max() + 1, columns.min():columns.min() + width // 3].any()
    assert ink[rows.min():rows.min() + height // 3, columns.max() - 3:columns.max() + 1].any()
