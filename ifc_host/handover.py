"""When the keeper hands over to a fresh process after a commit (executor.py `_hand_over`).

IfcOpenShell keeps much of what a replaced model used (about 200 MB per commit on a 1M-entity file), so a
keeper that commits many times on a big model grows by a model's size each time; a successor that opened the
committed file holds one model. Starting one costs a fresh interpreter that imports IfcOpenShell and reads
the file (seconds of CPU), which on a small model costs more than the memory it saves. So the keeper hands
over only when one of these holds:

- the committed file is at least `NEXUS_KEEPER_HANDOVER_MB` MB (default 8, the size from which a model takes
  seconds to open, as for `NEXUS_RENDER_PREPARE_MB`; `0`: after every commit; `off`: never by size);
- the keeper's resident memory grew at least `NEXUS_KEEPER_GROWTH_MB` MB (default 256; `off`: never by
  growth) past what it used once it had opened its model (read from /proc where there is one).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SIZE_VARIABLE = "NEXUS_KEEPER_HANDOVER_MB"
GROWTH_VARIABLE = "NEXUS_KEEPER_GROWTH_MB"
DEFAULT_SIZE_MB = 8.0
DEFAULT_GROWTH_MB = 256.0
MB = 1024 * 1024


class BadHandoverSetting(ValueError):
    """A NEXUS_KEEPER_* value that is not a size in MB (nor `off`)."""


@dataclass(frozen=True)
class HandoverPolicy:
    min_bytes: int | None = round(DEFAULT_SIZE_MB * MB)  # a committed file this big hands over; None: never by size
    growth_bytes: int | None = round(DEFAULT_GROWTH_MB * MB)  # a keeper grown this much hands over; None: never

    @classmethod
    def from_environment(cls) -> HandoverPolicy:
        """The policy the environment sets (BadHandoverSetting names the variable that is wrong)."""
        return cls(_size(SIZE_VARIABLE, DEFAULT_SIZE_MB), _size(GROWTH_VARIABLE, DEFAULT_GROWTH_MB))

    def hands_over(self, committed_bytes: int, rss_bytes: int | None, rss_at_open: int | None) -> bool:
        """Whether a keeper that just committed a file of `committed_bytes`, and uses `rss_bytes` of memory
        now against `rss_at_open` once its model was open (None: not known here), is replaced."""
        if self.min_bytes is not None and committed_bytes >= self.min_bytes:
            return True
        return (self.growth_bytes is not None and rss_bytes is not None and rss_at_open is not None
                and rss_bytes - rss_at_open >= self.growth_bytes)


ALWAYS = HandoverPolicy(min_bytes=0, growth_bytes=None)  # after every commit (the handover's own tests)
NEVER = HandoverPolicy(min_bytes=None, growth_bytes=None)


def _size(name: str, default_mb: float) -> int | None:
    text = os.environ.get(name, "").strip().lower()
    if not text:
        return round(default_mb * MB)
    if text == "off":
        return None
    try:
        value = float(text)
    except ValueError:
        raise BadHandoverSetting(f"{name}={text!r} is not a size in MB (a number, or off)") from None
    if not value >= 0 or value == float("inf"):
        raise BadHandoverSetting(f"{name}={text!r} must be a size of 0 MB or more (or off)")
    return round(value * MB)


def resident_bytes(pid: int | None) -> int | None:
    """The resident memory of process `pid` (Linux /proc), or None where it cannot be read."""
    if pid is None:
        return None
    try:
        resident_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return resident_pages * os.sysconf("SC_PAGE_SIZE")
