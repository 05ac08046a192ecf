"""Images scaled to each vendor's real vision ceiling (the table is data: vision.json).

API (stable):

    VisionLimits(long_edge_px, short_edge_px=None, megapixels=None, max_bytes=5_000_000)
        `.fit(width, height) -> (width, height)`: the largest size within every limit, aspect kept.
    vision_limits(vendor, model) -> VisionLimits
        Model keys in vision.json are fnmatch patterns; the longest match wins, else the vendor's default.
    image_max_px(vendor, model) -> int
        The long edge to ask a host for when it renders an image for this model (adapters expose it
        as their `image_max_px` attribute).
    scale_for(vendor, model, image_part) -> image_part
        A neutral image part ({"type": "image", media_type, data (base64), width, height}) within the
        limits: returned unchanged when it already fits (no decode), otherwise resized with Pillow and
        re-encoded (PNG stays PNG when it fits the byte cap, else JPEG). Deterministic, so the same
        image scales to the same bytes every turn and prompt caches keep hitting.
"""
from __future__ import annotations

import base64
import fnmatch
import io
import json
import math
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from PIL import Image

VISION_TABLE = Path(__file__).with_name("vision.json")
JPEG_QUALITIES = (90, 80, 70)


@dataclass(frozen=True)
class VisionLimits:
    long_edge_px: int
    short_edge_px: int | None = None
    megapixels: float | None = None
    max_bytes: int = 5_000_000

    def fit(self, width: int, height: int) -> tuple[int, int]:
        scale = min(1.0, self.long_edge_px / max(width, height))
        if self.short_edge_px:
            scale = min(scale, self.short_edge_px / max(1, min(width, height)))
        if self.megapixels:
            scale = min(scale, math.sqrt(self.megapixels * 1_000_000 / max(1, width * height)))
        if scale >= 1.0:
            return width, height
        return max(1, math.floor(width * scale)), max(1, math.floor(height * scale))


@cache
def _table() -> dict[str, Any]:
    return json.loads(VISION_TABLE.read_text())


@cache
def vision_limits(vendor: str, model: str) -> VisionLimits:
    table = _table()
    entry = table.get(vendor)
    if not isinstance(entry, dict):
        return VisionLimits(**table["default"])
    matches = [p for p in entry.get("models", {}) if fnmatch.fnmatchcase(model, p)]
    if matches:
        return VisionLimits(**entry["models"][max(matches, key=len)])
    return VisionLimits(**entry["default"])


def image_max_px(vendor: str, model: str) -> int:
    return vision_limits(vendor, model).long_edge_px


def _encoded_size(b64: str) -> int:
    return len(b64) * 3 // 4


def scale_for(vendor: str, model: str, image_part: dict[str, Any]) -> dict[str, Any]:
    limits = vision_limits(vendor, model)
    width, height = image_part.get("width"), image_part.get("height")
    if (isinstance(width, int) and isinstance(height, int) and limits.fit(width, height) == (width, height)
            and _encoded_size(image_part["data"]) <= limits.max_bytes):
        return image_part
    media_type, data, new_width, new_height = _rescale(image_part["data"], image_part.get("media_type", ""), limits)
    return {**image_part, "media_type": media_type, "data": data, "width": new_width, "height": new_height}


@lru_cache(maxsize=16)
def _rescale(data: str, media_type: str, limits: VisionLimits) -> tuple[str, str, int, int]:
    with Image.open(io.BytesIO(base64.b64decode(data))) as opened:
        image = opened.convert("RGBA") if opened.mode in ("P", "LA") else opened.copy()
    size = limits.fit(*image.size)
    if size != image.size:
        image = image.resize(size, Image.Resampling.LANCZOS)
    while True:
        encoded = _encode_within(image, media_type, limits.max_bytes)
        if encoded is not None:
            out_type, raw = encoded
            return out_type, base64.b64encode(raw).decode("ascii"), image.width, image.height
        # Even the lowest JPEG quality is over the byte cap: shrink and try again.
        image = image.resize((max(1, int(image.width * 0.8)), max(1, int(image.height * 0.8))),
                             Image.Resampling.LANCZOS)


def _encode_within(image: Image.Image, media_type: str, max_bytes: int) -> tuple[str, bytes] | None:
    if media_type != "image/jpeg":
        buffer = io.BytesIO()
        image.save(buffer, format="PNG", optimize=False)
        if buffer.tell() <= max_bytes:
            return "image/png", buffer.getvalue()
    rgb = image.convert("RGB") if image.mode != "RGB" else image
    for quality in JPEG_QUALITIES:
        buffer = io.BytesIO()
        rgb.save(buffer, format="JPEG", quality=quality)
        if buffer.tell() <= max_bytes:
            return "image/jpeg", buffer.getvalue()
    return None
