"""Labels in any script: storey titles, room names and legends draw real glyphs (issue 12: a Revit export names its
storeys 标高 1), each label in the first installed font that covers it, mixed labels run by run, never a crash."""
from __future__ import annotations

import io
from pathlib import Path

import ifcopenshell
import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from ifc_host import render_canvas
from ifc_host.render import render_view
from ifc_host.render_canvas import Canvas, LegendEntry, covers, fallback_font_paths, font, text_runs
from ifc_host.render_plan import PLAN_CUT_HEIGHT_M
from ifc_host.sample import write_sample_model
from tests.corpus.corpus_files import manifest

SS = render_canvas.SUPERSAMPLE
CHINESE, JAPANESE, KOREAN, MIXED = "标高 1", "会議室 ア", "회의실 2", "Level 1 标高"
ROOMS = ["办公室", "会議室", "회의실", "Room 101 房间"]


def cjk_font() -> str:
    """The installed fallback font that covers Chinese, Japanese and Korean (scripts/test installs one)."""
    paths = [p for p in fallback_font_paths() if all(covers(p, c) for c in "标会ア회")]
    assert paths, ("no CJK font installed: scripts/test installs Debian's fonts-wqy-microhei; "
                   f"searched {render_canvas._FALLBACK_CANDIDATES}")
    return paths[0]


def ink(image: Image.Image) -> np.ndarray:
    """The dark pixels of an image, cropped to their bounding box."""
    dark = np.asarray(image.convert("L")) < 140
    rows, cols = np.flatnonzero(dark.any(axis=1)), np.flatnonzero(dark.any(axis=0))
    assert len(rows) and len(cols), "no ink"
    return dark[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]


def overlap(actual: np.ndarray, expected: np.ndarray) -> float:
    """How well two ink masks, aligned at their top left corner, match within a pixel (antialiasing and sub-pixel
    placement move edges by one): the smaller of the shares of each one's ink near the other's."""
    h, w = max(actual.shape[0], expected.shape[0]), max(actual.shape[1], expected.shape[1])
    a, e = np.zeros((h, w), bool), np.zeros((h, w), bool)
    a[:actual.shape[0], :actual.shape[1]] = actual
    e[:expected.shape[0], :expected.shape[1]] = expected
    return min(float((a & near(e)).sum() / max(1, a.sum())), float((e & near(a)).sum() / max(1, e.sum())))


def near(mask: np.ndarray) -> np.ndarray:
    """A mask grown by one pixel in every direction."""
    padded = np.pad(mask, 1)
    grown = padded.copy()
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            grown |= np.roll(np.roll(padded, dy, axis=0), dx, axis=1)
    return grown[1:-1, 1:-1]


def reference(runs: list[tuple[str, ImageFont.FreeTypeFont]], bold: bool = False) -> np.ndarray:
    """Runs of text drawn straight with Pillow, each in its font, at the canvas's supersampling, then reduced; bold
    runs of a fallback font (no bold face) thickened by an outline of 2.7 % of the size."""
    width = int(sum(f.getlength(text) for text, f in runs)) + 60
    height = max(f.size for _, f in runs) * 3
    image = Image.new("RGB", (width, height), (255, 255, 255))
    draw, x = ImageDraw.Draw(image), 20.0
    for text, f in runs:
        stroke = f.size * 0.027 if bold and f.path in fallback_font_paths() else 0.0
        draw.text((x + stroke, height * 2 / 3), text, fill=(35, 35, 35), font=f, anchor="ls", stroke_width=stroke,
                  stroke_fill=(35, 35, 35))
        x += f.getlength(text) + 2 * stroke
    return ink(image.reduce(SS))


def title_ink(png: bytes, title_right: float) -> np.ndarray:
    """The ink of a view's title: the left part of its title bar (the legend, if any, is on the right)."""
    image = Image.open(io.BytesIO(png))
    title_bar = round(round(max(image.size) / 48) * 1.8)
    return ink(image.crop((0, 0, min(image.width, round(title_right)), title_bar)))


@pytest.mark.parametrize("name", [CHINESE, JAPANESE, KOREAN, MIXED])
def test_a_title_in_any_script_draws_the_glyphs_of_the_font_that_covers_it(name):
    path = cjk_font()
    assert text_runs(name, True) == ((name, path),)  # one font for the whole label: the first that covers it
    size = round(800 / 48)
    png, _, _ = Canvas((0.0, 0.0, 10.0, 10.0), 800, name, []).finish()
    expected = reference([(name, ImageFont.truetype(path, size * SS))], bold=True)
    assert overlap(title_ink(png, 400), expected) > 0.95
    # The bold title is drawn bold although the fallback font has no bold face.
    assert expected.sum() > 1.15 * reference([(name, ImageFont.truetype(path, size * SS))]).sum()
    # What the main font draws for it (today's boxes) is far from it: the check can fail.
    boxes = reference([(name, font(size * SS, True))])
    assert overlap(boxes, expected) < 0.8


def test_a_label_no_single_font_covers_is_drawn_run_by_run():
    path = cjk_font()
    missing = next((c for c in "\u10d0\u0531\u16a0\u2c00\u0e01\u0906" if covers(False, c) and not covers(path, c)),
                   None)
    assert missing is not None, "every probe character is in the CJK font: pick another"
    label = f"{missing}{missing} 标高"
    assert text_runs(label) == ((f"{missing}{missing} ", False), ("标高", path))
    canvas = Canvas((0.0, 0.0, 10.0, 10.0), 800, "", [])
    size = 20
    canvas.text_block((5.0, 5.0), [(label, size, False)], (35, 35, 35))
    image = canvas.image.reduce(SS)
    expected = reference([(f"{missing}{missing} ", font(size * SS)), ("标高", ImageFont.truetype(path, size * SS))])
    assert overlap(ink(image), expected) > 0.95
    assert canvas.text_fits([(label, size, False)], 200, 40) and not canvas.text_fits([(label, size, False)], 30, 40)


def test_characters_no_font_has_are_drawn_as_the_main_fonts_box_and_never_crash():
    label = "标高 \U0010fffd\U000e0100 Level \u0000"
    runs = text_runs(label, True)
    assert "".join(text for text, _ in runs) == label
    assert any("标高" in text and key == cjk_font() for text, key in runs)
    png, width, height = Canvas((0.0, 0.0, 10.0, 10.0), 640, label, [LegendEntry("墙", (55, 55, 60))]).finish()
    assert Image.open(io.BytesIO(png)).size == (width, height)


def test_latin_labels_keep_the_main_font():
    for label in ("Level 1", "Office 1.02", "Ebene 1 \u2014 Büro", "Wall"):
        assert text_runs(label) == ((label, False),)
        assert text_runs(label, True) == ((label, True),)


@pytest.fixture(scope="module")
def renamed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The generated sample building with its first storey and rooms named in Chinese, Japanese, Korean, mixed."""
    folder = tmp_path_factory.mktemp("fonts")
    write_sample_model(folder / "sample.ifc", storeys=2)
    model = ifcopenshell.open(str(folder / "sample.ifc"))
    storey = next(s for s in model.by_type("IfcBuildingStorey") if s.Name == "Level 1")
    storey.Name = CHINESE
    spaces = [s for rel in storey.ContainsElements or [] for s in rel.RelatedElements if s.is_a("IfcSpace")]
    spaces += [s for rel in storey.IsDecomposedBy or [] for s in rel.RelatedObjects if s.is_a("IfcSpace")]
    assert len(spaces) >= len(ROOMS)
    for space, name in zip(spaces, ROOMS * (len(spaces) // len(ROOMS) + 1), strict=False):
        space.Name, space.LongName = name, name
    model.write(str(folder / "renamed.ifc"))
    return folder / "renamed.ifc", ROOMS


def test_a_plan_of_a_storey_named_in_chinese_has_a_readable_title_and_room_labels(renamed):
    path, rooms = renamed
    view = render_view(str(path), CHINESE, [], 800)
    title = f"{CHINESE} \u2014 plan cut at +{PLAN_CUT_HEIGHT_M:.1f} m"
    font_path = cjk_font()
    assert text_runs(title, True) == ((title, font_path),)
    size = round(max(view.width, view.height) / 48)
    expected = reference([(title, ImageFont.truetype(font_path, size * SS))], bold=True)
    margin = max(2, round(max(view.width, view.height) * 0.02))
    assert overlap(title_ink(view.png, margin + expected.shape[1] + 6), expected) > 0.95
    for room in rooms:
        for text, key in text_runs(room, True):
            assert all(covers(key, c) for c in text), (room, text, key)


def test_the_revit_demo_names_its_storeys_in_chinese_and_its_plan_title_reads(tmp_path):
    demo = next(f for f in manifest() if f.file == "basic_demo.ifc")
    assert demo.present(), f"{demo.location} missing: run scripts/corpus.sh (scripts/test does)"
    model = ifcopenshell.open(str(demo.location))
    storey = next(s.Name for s in model.by_type("IfcBuildingStorey") if s.Name and not s.Name.isascii())
    view = render_view(str(demo.location), storey, [], 800)
    title = f"{storey} \u2014 plan cut at +{PLAN_CUT_HEIGHT_M:.1f} m"
    (font_path,) = {key for _, key in text_runs(title, True) if isinstance(key, str)}
    size = round(max(view.width, view.height) / 48)
    expected = reference([(text, font(size * SS, True) if key is True else ImageFont.truetype(key, size * SS))
                          for text, key in text_runs(title, True)], bold=True)
    margin = max(2, round(max(view.width, view.height) * 0.02))
    assert overlap(title_ink(view.png, margin + expected.shape[1] + 6), expected) > 0.95
    assert font_path in fallback_font_paths()
