"""One PNG of many rendered views, each a labelled thumbnail (the corpus tests' artifact for a person to look at)."""
from __future__ import annotations

import io
import threading
from pathlib import Path

from PIL import Image, ImageDraw

from ifc_host.render_canvas import draw_text

THUMB_PX = 360
LABEL_PX = 30
COLUMNS = 6


class ContactSheet:
    def __init__(self) -> None:
        self._views: list[tuple[str, bytes]] = []
        self._lock = threading.Lock()

    def add(self, label: str, png: bytes) -> None:
        with self._lock:
            self._views.append((label, png))

    def __len__(self) -> int:
        return len(self._views)

    def write(self, path: Path) -> Path:
        views = list(self._views)  # in the order they were added (the order the host offers the views)
        rows = max(1, -(-len(views) // COLUMNS))
        cell_w, cell_h = THUMB_PX + 8, THUMB_PX + LABEL_PX + 8
        sheet = Image.new("RGB", (COLUMNS * cell_w, rows * cell_h), (236, 236, 236))
        draw = ImageDraw.Draw(sheet)
        for index, (label, png) in enumerate(views):
            x, y = (index % COLUMNS) * cell_w + 4, (index // COLUMNS) * cell_h + 4
            image = Image.open(io.BytesIO(png)).convert("RGB")
            image.thumbnail((THUMB_PX, THUMB_PX))
            sheet.paste(image, (x + (THUMB_PX - image.width) // 2, y + LABEL_PX))
            for line_no, line in enumerate(_wrap(label, 2)):
                draw_text(draw, (x, y + line_no * 13), line, 11, False, (30, 30, 30), "la")
        path.parent.mkdir(parents=True, exist_ok=True)
        sheet.save(path, format="PNG")
        return path


def _wrap(label: str, lines: int, width: int = 58) -> list[str]:
    return [label[i:i + width] for i in range(0, len(label), width)][:lines]
