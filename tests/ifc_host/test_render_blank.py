"""A plan whose bodies all stand above the cut (a storey whose level is set too low, a roof storey) is not a blank
image passed off as the view: its elements are drawn as outlines seen from below, and the title says so.

Real file: buildingSMART's Building-Hvac.ifc (a services model, no spaces), from $NEXUS_IFC_CORPUS
(`. scripts/corpus.sh`); the plan is cut 20 m below its storey's level."""
from __future__ import annotations

import dataclasses
import io

import ifcopenshell
import numpy as np
from PIL import Image

from ifc_host import render_palette as style
from ifc_host.render_plan import draw_plan
from ifc_host.render_scene import resolve_view, view_names
from tests.corpus.corpus_files import corpus_dirs

HVAC_FILE = "Building-Hvac.ifc"


def test_a_plan_with_everything_above_the_cut_draws_their_outlines():
    found = [d / HVAC_FILE for d in corpus_dirs() if (d / HVAC_FILE).is_file()]
    assert found, f"{HVAC_FILE} is in none of the corpus folders: run `. scripts/corpus.sh`"
    model = ifcopenshell.open(str(found[0]))
    spec = resolve_view(model, view_names(model)[0], [])
    low = dataclasses.replace(spec, elevation_m=spec.elevation_m - 20)
    drawing = draw_plan(model, low, [], 400)
    pixels = np.array(Image.open(io.BytesIO(drawing.png)).convert("RGB"))
    outlined = (pixels == np.array(style.ABOVE_OUTLINE)).all(axis=2).sum()
    assert outlined > 100  # the old plan was the title bar over a white page
    assert not drawing.undrawn
