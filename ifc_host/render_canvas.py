"""A Pillow canvas that fits a drawing in world units to an exact long edge, with a title bar and legend."""
from __future__ import annotations

import io
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont
from shapely.geometry import MultiPolygon, Polygon
from shapely.geometry.base import BaseGeometry

RGB = tuple[int, int, int]

HIGHLIGHT: RGB = (255, 90, 0)
HIGHLIGHT_TINT: RGB = (255, 214, 186)
BACKGROUND: RGB = (255, 255, 255)
TEXT: RGB = (35, 35, 35)
MUTED_TEXT: RGB = (110, 110, 110)
SPACE_FILL: RGB = (247, 244, 236)
SPACE_OUTLINE: RGB = (200, 192, 175)
WALL: RGB = (55, 55, 60)
COLUMN: RGB = (20, 20, 20)
OTHER_CUT: RGB = (150, 150, 150)
BELOW_OUTLINE: RGB = (190, 190, 190)
ABOVE_OUTLINE: RGB = (150, 160, 205)
WINDOW_FILL: RGB = (170, 220, 240)
WINDOW_OUTLINE: RGB = (40, 120, 170)
DOOR: RGB = (30, 100, 200)

# Drawn at twice the size and box-averaged down: smooth edges, while filled areas keep their exact colour.
SUPERSAMPLE = 2
SUPERSAMPLE_UP_TO_PX = 2400
_FONT_CANDIDATES = {
    False: ("DejaVuSans.ttf", "LiberationSans-Regular.ttf", "Arial.ttf"),
    True: ("DejaVuSans-Bold.ttf", "LiberationSans-Bold.ttf", "Arial Bold.ttf"),
}
_FONT_DIRS = (Path("/usr/share/fonts/truetype/dejavu"), Path("/usr/share/fonts/truetype/liberation"),
              Path("/usr/share/fonts/TTF"), Path("/Library/Fonts"), Path("C:/Windows/Fonts"))


@lru_cache(maxsize=64)
def font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    for name in _FONT_CANDIDATES[bold]:
        for folder in _FONT_DIRS:
            if (folder / name).exists():
                return ImageFont.truetype(str(folder / name), size)
    return ImageFont.load_default(size)


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
            left, top, right, bottom = font(size * self.ss, bold).getbbox(text)
            widths.append((right - left) / self.ss)
            height += size * 1.2
        return max(widths, default=0) <= max_w and height <= max_h

    def text_block(self, xy: tuple[float, float], lines: list[tuple[str, int, bool]], colour: RGB) -> None:
        """Lines of (text, final px size, bold) centred on a world point."""
        (cx, cy), = self.to_px(np.array([xy]))
        total = sum(size * 1.2 for _, size, _ in lines) * self.ss
        y = cy - total / 2
        for text, size, bold in lines:
            step = size * 1.2 * self.ss
            self.draw.text((cx, y + step / 2), text, fill=colour, font=font(size * self.ss, bold), anchor="mm")
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
        while title_size > 8 and font(title_size * ss, True).getlength(self._title) > room:
            title_size -= 1
        self.draw.text((x, mid), self._title, fill=TEXT, font=font(title_size * ss, True), anchor="lm")
        title_end = x + font(title_size * ss, True).getlength(self._title)
        legend_font = font(max(9, round(size * 0.75)) * ss)
        swatch = round(size * 0.7 * ss)
        entries = []
        for entry in self._legend:
            entries.append((entry, swatch + round(0.3 * size * ss) + legend_font.getlength(entry.label)))
        gap = round(size * 0.9 * ss)
        total = sum(w for _, w in entries) + gap * len(entries)
        right = self.width * ss - self.margin * ss
        if not entries or right - total < title_end + gap:
            return
        cursor = right - total + gap
        for entry, entry_w in entries:
            box = (cursor, mid - swatch / 2, cursor + swatch, mid + swatch / 2)
            self.draw.rectangle(box, fill=entry.fill, outline=entry.outline, width=max(1, ss))
            self.draw.text((cursor + swatch + round(0.3 * size * ss), mid), entry.label, fill=MUTED_TEXT,
                           font=legend_font, anchor="lm")
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


def title_with_highlights(title: str, shown: int, elsewhere: int, undrawn: int = 0) -> str:
    """A view's title, plus how many requested elements are highlighted and how many are not in the view,
    and how many elements of the view no geometry kernel could draw."""
    if shown or elsewhere:
        title += f" \u2014 {shown} highlighted"
        if elsewhere:
            title += f" ({elsewhere} not in this view)"
    if undrawn:
        title += f" \u2014 {undrawn} element{'s' if undrawn != 1 else ''} could not be drawn"
    return title
