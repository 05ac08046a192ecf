"""The colours of the rendered views (no drawing here: the runtime process reads HIGHLIGHT without loading
Pillow or numpy, which only the render servers need)."""
from __future__ import annotations

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
