"""Alignment axes (IfcAlignment) as polylines in world metres, for the site plan of infrastructure models.

A road or railway is laid out along its alignment, and storeys do not describe it: the site plan draws each
alignment's horizontal axis over the bodies. The axis comes from the alignment's horizontal layout (IFC 4.3:
IfcAlignmentHorizontal nesting IfcAlignmentSegment, each with IfcAlignmentHorizontalSegment parameters), each
segment integrated from its start point and direction with a curvature going linearly from 1/StartRadius to
1/EndRadius over its length (exact for lines, arcs and clothoids; close for the other transition curves, which
differ from a clothoid by a few centimetres over a transition's length). Without a layout, a polyline or indexed
poly curve in the alignment's own representation is used. Runs inside the render child only.
"""
from __future__ import annotations

import math

import ifcopenshell
import numpy as np

from ifc_host.render_scene import PlacementFrames

STEP_M = 2.0  # integration step along a segment
MAX_POINTS_PER_SEGMENT = 2000


def alignment_lines(model: ifcopenshell.file) -> list[np.ndarray]:
    """One (n, 2) polyline (metres, world x/y) per alignment that has a horizontal layout or an axis curve."""
    try:
        alignments = model.by_type("IfcAlignment")
    except RuntimeError:  # the schema has no alignments (IFC2X3, IFC4)
        return []
    frames = PlacementFrames(model)
    lines: list[np.ndarray] = []
    for alignment in alignments:
        points = _layout_points(alignment, frames.unit_scale)
        if points is None:
            points = _axis_curve_points(alignment, frames.unit_scale)
        if points is None or len(points) < 2 or not np.isfinite(points).all():
            continue
        frame = frames.of(alignment)
        if frame is not None:
            points = points @ frame[:2, :2].T + frame[:2, 3]
        lines.append(points)
    return lines


def _layout_points(alignment: ifcopenshell.entity_instance, scale: float) -> np.ndarray | None:
    segments = [segment for layout in _nested(alignment) if layout.is_a("IfcAlignmentHorizontal")
                for segment in _nested(layout) if segment.is_a("IfcAlignmentSegment")]
    pieces = [_segment_points(s.DesignParameters, scale) for s in segments
              if s.DesignParameters is not None and s.DesignParameters.is_a("IfcAlignmentHorizontalSegment")]
    pieces = [p for p in pieces if p is not None]
    return np.concatenate(pieces) if pieces else None


def _nested(parent: ifcopenshell.entity_instance) -> list[ifcopenshell.entity_instance]:
    return [child for rel in getattr(parent, "IsNestedBy", None) or () for child in rel.RelatedObjects]


def _segment_points(parameters: ifcopenshell.entity_instance, scale: float) -> np.ndarray | None:
    length = float(parameters.SegmentLength or 0.0) * scale
    start = parameters.StartPoint.Coordinates
    if length <= 0 or len(start) < 2:
        return None
    x, y = float(start[0]) * scale, float(start[1]) * scale
    heading = float(parameters.StartDirection or 0.0)  # plane angle: radians in the files seen (ADD2 says so)
    k0, k1 = _curvature(parameters.StartRadiusOfCurvature, scale), _curvature(parameters.EndRadiusOfCurvature, scale)
    steps = int(min(max(math.ceil(length / STEP_M), 1), MAX_POINTS_PER_SEGMENT))
    if parameters.PredefinedType == "LINE" or (k0 == 0.0 and k1 == 0.0):
        steps = 1
    s = np.linspace(0.0, length, steps + 1)
    # The unit tangent integrated step by step at each step's middle heading (second-order accurate).
    middle = (s[:-1] + s[1:]) / 2
    middles = heading + k0 * middle + (k1 - k0) * middle ** 2 / (2 * length)
    ds = np.diff(s)
    xs = x + np.concatenate([[0.0], np.cumsum(ds * np.cos(middles))])
    ys = y + np.concatenate([[0.0], np.cumsum(ds * np.sin(middles))])
    return np.column_stack([xs, ys])


def _curvature(radius: float | None, scale: float) -> float:
    """Signed curvature (1/m, positive turning left) of a radius in model units; 0 (or none) is straight."""
    if radius is None or float(radius) == 0.0:
        return 0.0
    return 1.0 / (float(radius) * scale)


def _axis_curve_points(alignment: ifcopenshell.entity_instance, scale: float) -> np.ndarray | None:
    shape = getattr(alignment, "Representation", None)
    for representation in (shape.Representations or ()) if shape is not None else ():
        for item in representation.Items or ():
            points = _curve_points(item)
            if points is not None:
                return points * scale
    return None


def _curve_points(curve: ifcopenshell.entity_instance) -> np.ndarray | None:
    if curve.is_a("IfcPolyline"):
        return np.array([p.Coordinates[:2] for p in curve.Points], dtype=float)
    if curve.is_a("IfcIndexedPolyCurve"):
        return np.array([c[:2] for c in curve.Points.CoordList], dtype=float)
    return None
