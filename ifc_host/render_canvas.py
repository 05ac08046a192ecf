"""A Pillow canvas that fits a drawing in world units to an exact long edge, with a title bar and legend."""
from __future__ import annotations

import io
import unicodedata
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont
from shapely.geometry import MultiPolygon, Polygon
from shapely.geometry.base import BaseGeometry

from ifc_host.render_palette import BACKGROUND, MUTED_TEXT, RGB, TEXT

# Drawn at twice the size and box-averaged down: smooth edges, while filled areas keep their exact colour.
SUPERSAMPLE = 2
SUPERSAMPLE_UP_TO_PX = 2400
_FONT_CANDIDATES = {
    False: ("DejaVuSans.ttf", "LiberationSans-Regular.ttf", "Arial.ttf"),
    True: ("DejaVuSans-Bold.ttf", "LiberationSans-Bold.ttf", "Arial Bold.ttf"),
}
_FONT_DIRS = (Path("/usr/share/fonts/truetype/dejavu"), Path("/usr/share/fonts/truetype/liberation"),
              Path("/usr/share/fonts/TTF"), Path("/Library/Fonts"), Path("C:/Windows/Fonts"))


# Fonts for characters the main font lacks (CJK storey and room names, ...): the first installed one that covers a
# whole label draws it; a label no single font covers is drawn run by run, each character in the first font that has
# it. Collections (.ttc) are read at face 0.
_FALLBACK_CANDIDATES = (
    "wqy-microhei.ttc", "wqy-zenhei.ttc", "DroidSansFallbackFull.ttf", "DroidSansFallback.ttf",
    "NotoSansCJK-Regular.ttc", "NotoSansCJKsc-Regular.otf", "NotoSansCJK.ttc", "uming.ttc", "ukai.ttc",
    "ipag.ttf", "TakaoPGothic.ttf", "NanumGothic.ttf", "gulim.ttf", "unifont.ttf",
    "PingFang.ttc", "Hiragino Sans GB.ttc", "\u30d2\u30e9\u30ae\u30ce\u89d2\u30b4\u30b7\u30c3\u30af W3.ttc",
    "AppleSDGothicNeo.ttc", "STHeiti Light.ttc", "Arial Unicode.ttf",
    "msyh.ttc", "YuGothM.ttc", "meiryo.ttc", "malgun.ttf", "simsun.ttc", "msgothic.ttc",
)
_FALLBACK_DIRS = (Path("/usr/share/fonts/truetype/wqy"), Path("/usr/share/fonts/wenquanyi/wqy-microhei"),
                  Path("/usr/share/fonts/wenquanyi/wqy-zenhei"), Path("/usr/share/fonts/wqy-microhei"),
                  Path("/usr/share/fonts/wqy-zenhei"), Path("/usr/share/fonts/truetype/droid"),
                  Path("/usr/share/fonts/google-droid-sans-fonts"), Path("/usr/share/fonts/opentype/noto"),
                  Path("/usr/share/fonts/noto-cjk"), Path("/usr/share/fonts/google-noto-cjk"),
                  Path("/usr/share/fonts/truetype/arphic"), Path("/usr/share/fonts/opentype/ipafont-gothic"),
                  Path("/usr/share/fonts/truetype/takao-gothic"), Path("/usr/share/fonts/truetype/nanum"),
                  Path("/usr/share/fonts/truetype/baekmuk"), Path("/usr/share/fonts/truetype/unifont"),
                  Path("/System/Library/Fonts"), Path("/System/Library/Fonts/Supplemental"),
                  Path("/Library/Fonts"), Path("C:/Windows/Fonts"))
_PROBE_PX = 24
_NOT_A_CHARACTER = "\U0010fffd"  # private use, mapped by no font: renders as the font's missing-glyph box
_SYNTHETIC_BOLD = 0.027  # outline width per pixel of size that thickens a regular fallback font to DejaVu Bold's weight

AnyFont = ImageFont.FreeTypeFont | ImageFont.ImageFont


@lru_cache(maxsize=64)
def font(size: int, bold: bool = False) -> AnyFont:
    for name in _FONT_CANDIDATES[bold]:
        for folder in _FONT_DIRS:
            if (folder / name).exists():
                return ImageFont.truetype(str(folder / name), size)
    return ImageFont.load_default(size)


@lru_cache(maxsize=1)
def fallback_font_paths() -> tuple[str, ...]:
    """Installed fallback fonts, in order of preference (see _FALLBACK_CANDIDATES)."""
    found = []
    for name in _FALLBACK_CANDIDATES:
        for folder in _FALLBACK_DIRS:
            if (folder / name).is_file():
                found.append(str(folder / name))
                break
    return tuple(found)


@lru_cache(maxsize=64)
def _fallback_font(path: str, size: int) -> AnyFont:
    return ImageFont.truetype(path, size)


def _face(key: str | bool, size: int) -> AnyFont:
    """A font by key: True/False for the main (bold/regular) font, a path for a fallback font."""
    return font(size, key) if isinstance(key, bool) else _fallback_font(key, size)


@cache
def _missing_glyph(key: str | bool) -> tuple[tuple[int, int], bytes]:
    mask = _face(key, _PROBE_PX).getmask(_NOT_A_CHARACTER)
    return mask.size, bytes(mask)


@lru_cache(maxsize=65536)
def covers(key: str | bool, char: str) -> bool:
    """Whether a font (see _face) has a glyph for ``char``: it does not draw the font's missing-glyph box."""
    if char.isspace() or unicodedata.category(char) in ("Cc", "Cf"):
        return True
    try:
        mask = _face(key, _PROBE_PX).getmask(char)
    except (OSError, ValueError):
        return False
    return (mask.size, bytes(mask)) != _missing_glyph(key)


@lru_cache(maxsize=4096)
def text_runs(text: str, bold: bool = False) -> tuple[tuple[str, str | bool], ...]:
    """``text`` as runs of (characters, font key): one run in the main font when it covers every character (all
    ASCII labels), else one run in the first fallback font that covers them all, else a run per change of font,
    each character in the first font that has it (the main font, drawing its box, when none has it)."""
    if text.isascii() or all(covers(bold, char) for char in text):
        return ((text, bold),)
    fallbacks = fallback_font_paths()
    for path in fallbacks:
        if all(covers(path, char) for char in text):
            return ((text, path),)
    runs: list[tuple[str, str | bool]] = []
    for char in text:
        key: str | bool = next((k for k in (bold, *fallbacks) if covers(k, char)), bold)
        if runs and runs[-1][1] == key:
            runs[-1] = (runs[-1][0] + char, key)
        else:
            runs.append((char, key))
    return tuple(runs)


def _stroke(key: str | bool, size: int, bold: bool) -> float:
    """The outline that draws a fallback font (which has no bold face here) bold; none for the main fonts."""
    return size * _SYNTHETIC_BOLD if bold and isinstance(key, str) else 0.0


def text_length(text: str, size: int, bold: bool = False) -> float:
    """Advance width in pixels of ``text`` drawn with draw_text."""
    return sum(_face(key, size).getlength(run) + 2 * _stroke(key, size, bold) for run, key in text_runs(text, bold))


def text_width(text: str, size: int, bold: bool = False) -> float:
    """Ink width in pixels of ``text`` drawn with draw_text (the advance width for a label of several fonts)."""
    runs = text_runs(text, bold)
    if len(runs) == 1:
        key = runs[0][1]
        left, _, right, _ = _face(key, size).getbbox(text, stroke_width=_stroke(key, size, bold))
        return right - left
    return text_length(text, size, bold)


def draw_text(draw: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, size: int, bold: bool, colour: RGB,
              anchor: str) -> None:
    """``text`` at ``xy`` (an anchor of horizontal l/m/r and vertical m/s), each character in a font that has it."""
    runs = text_runs(text, bold)
    if len(runs) == 1:
        key = runs[0][1]
        draw.text(xy, text, fill=colour, font=_face(key, size), anchor=anchor, stroke_width=_stroke(key, size, bold),
                  stroke_fill=colour)
        return
    lengths = [_face(key, size).getlength(run) + 2 * _stroke(key, size, bold) for run, key in runs]
    x, y = xy
    x -= {"l": 0.0, "m": sum(lengths) / 2, "r": sum(lengths)}[anchor[0]]
    main = font(size, bold)
    if anchor[1] == "m" and isinstance(main, ImageFont.FreeTypeFont):
        ascent, descent = main.getmetrics()
        y += (ascent - descent) / 2  # the baseline of text vertically centred on y
    for (run, key), length in zip(runs, lengths, strict=True):
        stroke = _stroke(key, size, bold)
        draw.text((x + stroke, y), run, fill=colour, font=_face(key, size), anchor="ls", stroke_width=stroke,
                  stroke_fill=colour)
        x += length


@dataclass(frozen=True)
class LegendEntry:
    label: str
    fill: RGB
    outline: RGB | None = None


class Canvas:
    """World coordinates (x right, y up) mapped onto an image whose long edge is exactly ``max_px``."""

    def __init__(self, bounds: tuple[float, float, float, float], max_px: int, title: str,
                 legend: list[LegendEntry]) -> None:
        minx, miny, maxx, maxy = bounds
        width_units, height_units = max(maxx - minx, 1e-3), max(maxy - miny, 1e-3)
        self.margin = max(2, round(max_px * 0.02))
        self.title_px = max(10, min(26, round(max_px / 48))) if max_px >= 160 else 0
        title_bar = round(self.title_px * 1.8) if self.title_px else 0
        avail_w = max(1, max_px - 2 * self.margin)
        avail_h = max(1, max_px - 2 * self.margin - title_bar)
        self.scale = min(avail_w / width_units, avail_h / height_units)  # final pixels per world unit
        width = round(width_units * self.scale + 2 * self.margin)
        height = round(height_units * self.scale + 2 * self.margin + title_bar)
        if width >= height:
            width, height = max_px, min(max(height, 1), max_px)
        else:
            width, height = min(max(width, 1), max_px), max_px
        self.width, self.height = width, height
        self.ss = SUPERSAMPLE if max_px <= SUPERSAMPLE_UP_TO_PX else 1
        # Centre the drawing in what is left below the title bar.
        self._x0 = (width - width_units * self.scale) / 2 - minx * self.scale
        self._y0 = title_bar + (height - title_bar - height_units * self.scale) / 2 + maxy * self.scale
        self.image = Image.new("RGB", (width * self.ss, height * self.ss), BACKGROUND)
        self.draw = ImageDraw.Draw(self.image)
        self._title, self._legend, self._title_bar = title, legend, title_bar

    @property
    def px_per_unit(self) -> float:
        """Final (not supersampled) pixels per world unit."""
        return self.scale

    def to_px(self, xy: np.ndarray) -> list[tuple[float, float]]:
        px = self.to_px_array(xy)
        return list(zip(px[:, 0].tolist(), px[:, 1].tolist(), strict=True))

    def to_px_array(self, xy: np.ndarray) -> np.ndarray:
        """World points (n, 2) to canvas pixel coordinates (n, 2), y pointing down."""
        xy = np.asarray(xy, dtype=float).reshape(-1, 2)
        return np.column_stack([(self._x0 + xy[:, 0] * self.scale) * self.ss,
                                (self._y0 - xy[:, 1] * self.scale) * self.ss])

    def fill(self, geometry: BaseGeometry, fill: RGB | None, outline: RGB | None = None, width: float = 1.0) -> None:
        for polygon in _polygons(geometry):
            exterior = self.to_px(np.asarray(polygon.exterior.coords)[:, :2])
            if len(exterior) < 3:
                continue
            line_px = max(1, round(width * self.ss))
            if polygon.interiors and fill is not None:
                self._fill_with_holes(polygon, fill)
                if outline is not None:
                    for ring in [polygon.exterior, *polygon.interiors]:
                        self.draw.line(self.to_px(np.asarray(ring.coords)[:, :2]), fill=outline, width=line_px)
            else:
                # Outlines are drawn as lines: Pillow strokes a wide polygon outline through a full-canvas mask.
                if fill is not None:
                    self.draw.polygon(exterior, fill=fill)
                if outline is not None:
                    self.draw.line(exterior, fill=outline, width=line_px)

    def fill_triangle(self, points: list[float], ink: int) -> None:
        """A filled triangle (x0, y0, x1, y1, x2, y2 in canvas pixels) in a packed ink (see render_axonometric).

        Straight to Pillow's core: the same pixels as ``ImageDraw.polygon(points, fill=colour)``, without its
        per-call colour parsing, which dominated views of 100k+ triangles.
        """
        self.draw.draw.draw_polygon(points, ink, 1)

    def line(self, xy: np.ndarray, colour: RGB, width: float = 1.0) -> None:
        points = self.to_px(xy)
        if len(points) >= 2:
            self.draw.line(points, fill=colour, width=max(1, round(width * self.ss)), joint="curve")

    def text_fits(self, lines: list[tuple[str, int, bool]], max_w: float, max_h: float) -> bool:
        """Whether lines of (text, final px size, bold) fit in a box of final pixels."""
        widths, height = [], 0.0
        for text, size, bold in lines:
            widths.append(text_width(text, size * self.ss, bold) / self.ss)
            height += size * 1.2
        return max(widths, default=0) <= max_w and height <= max_h

    def text_block(self, xy: tuple[float, float], lines: list[tuple[str, int, bool]], colour: RGB) -> None:
        """Lines of (text, final px size, bold) centred on a world point."""
        (cx, cy), = self.to_px(np.array([xy]))
        total = sum(size * 1.2 for _, size, _ in lines) * self.ss
        y = cy - total / 2
        for text, size, bold in lines:
            step = size * 1.2 * self.ss
            draw_text(self.draw, (cx, y + step / 2), text, size * self.ss, bold, colour, "mm")
            y += step

    def finish(self) -> tuple[bytes, int, int]:
        self._draw_title_bar()
        image = self.image.reduce(self.ss) if self.ss > 1 else self.image
        assert image.size == (self.width, self.height)
        out = io.BytesIO()
        image.save(out, format="PNG", optimize=False, compress_level=6)
        return out.getvalue(), self.width, self.height

    def _draw_title_bar(self) -> None:
        if not self.title_px:
            return
        ss, size = self.ss, self.title_px
        x, mid = self.margin * ss, self._title_bar * ss / 2
        room = self.width * ss - 2 * x
        title_size = size
        while title_size > 8 and text_length(self._title, title_size * ss, True) > room:
            title_size -= 1
        draw_text(self.draw, (x, mid), self._title, title_size * ss, True, TEXT, "lm")
        title_end = x + text_length(self._title, title_size * ss, True)
        legend_px = max(9, round(size * 0.75)) * ss
        swatch = round(size * 0.7 * ss)
        entries = []
        for entry in self._legend:
            entries.append((entry, swatch + round(0.3 * size * ss) + text_length(entry.label, legend_px)))
        gap = round(size * 0.9 * ss)
        total = sum(w for _, w in entries) + gap * len(entries)
        right = self.width * ss - self.margin * ss
        if not entries or right - total < title_end + gap:
            return
        cursor = right - total + gap
        for entry, entry_w in entries:
            box = (cursor, mid - swatch / 2, cursor + swatch, mid + swatch / 2)
            self.draw.rectangle(box, fill=entry.fill, outline=entry.outline, width=max(1, ss))
            draw_text(self.draw, (cursor + swatch + round(0.3 * size * ss), mid), entry.label, legend_px, False,
                      MUTED_TEXT, "lm")
            cursor += entry_w + gap

    def _fill_with_holes(self, polygon: Polygon, fill: RGB) -> None:
        minx, miny, maxx, maxy = polygon.bounds
        (left, top), (right, bottom) = self.to_px(np.array([[minx, maxy], [maxx, miny]]))
        left, top = int(left) - 1, int(top) - 1
        size = (int(right) - left + 3, int(bottom) - top + 3)
        mask = Image.new("L", size, 0)
        mask_draw = ImageDraw.Draw(mask)
        shift = np.array([left, top])
        mask_draw.polygon([tuple(p) for p in (np.array(self.to_px(np.asarray(polygon.exterior.coords)[:, :2])) - shift)],
                          fill=255)
        for ring in polygon.interiors:
            mask_draw.polygon([tuple(p) for p in (np.array(self.to_px(np.asarray(ring.coords)[:, :2])) - shift)],
                              fill=0)
        self.image.paste(fill, (left, top, left + size[0], top + size[1]), mask)


def _polygons(geometry: BaseGeometry | None) -> list[Polygon]:
    if geometry is None or geometry.is_empty:
        return []
    if isinstance(geometry, Polygon):
        return [geometry]
    if isinstance(geometry, MultiPolygon):
        return list(geometry.geoms)
    if hasattr(geometry, "geoms"):
        return [p for g in geometry.geoms for p in _polygons(g)]
    return []


def title_with_highlights(title: str, shown: int, elsewhere: int, undrawn: int = 0, out_of_time: int = 0,
                          boxed: int = 0, sketched: int = 0, later: int = 0, simplified: int = 0) -> str:
    """A view's title, plus how many requested elements are highlighted and how many are not in the view,
    how many elements of the view could not be drawn (no geometry kernel could, or the time ran out), how
    many stand in as a coarser body of theirs, as their Box representation, or as their footprint or axis, because
    the time ran out, and how many of those are being built in the background for the next view."""
    if shown or elsewhere:
        title += f" \u2014 {shown} highlighted"
        if elsewhere:
            title += f" ({elsewhere} not in this view)"
    if undrawn:
        title += f" \u2014 {undrawn} element{'s' if undrawn != 1 else ''} could not be drawn"
        if out_of_time:
            title += f" ({out_of_time} not reached in the time allowed)"
    if simplified:
        title += f" \u2014 {simplified} drawn simplified (no time for their full shape)"
    if boxed:
        title += f" \u2014 {boxed} drawn as boxes (no time for their shape)"
    if sketched:
        title += f" \u2014 {sketched} drawn as their footprint or axis (no time for their shape)"
    if later:
        title += f" \u2014 {later} of them being built for the next view"
    return title
