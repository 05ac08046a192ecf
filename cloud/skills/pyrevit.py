"""`nexus skills export-pyrevit DIR`: each Revit skill of the team library (or one marked portable) as a
pyRevit pushbutton bundle `<Name>.pushbutton/` (bundle.yaml, an icon, an IronPython 2.7 script.py built
from pyrevit_bundle/script.py.tmpl carrying the stored script, its sha256 and its parameters).

The button imports the NexusAI runtime's failure handling, so DIR belongs inside the NexusAI extension
(its "Team skills" panel is NexusAI.extension/NexusAI.tab/Team skills.panel)."""
from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from pathlib import Path
from typing import Any

from cloud.skills.library import SkillLibrary, SkillVersion
from cloud.skills.parameters import value_spans
from cloud.store import Store

TEMPLATE = Path(__file__).resolve().parent / "pyrevit_bundle" / "script.py.tmpl"
REVIT = "revit"
ICON_PX = 32
ICON_RGB = (38, 110, 186)


def bundle_name(skill_name: str) -> str:
    """A folder-safe button name: letters, digits, spaces, _ and - as the skill name allows."""
    return re.sub(r"[^A-Za-z0-9 _-]", "", skill_name).strip() or "Skill"


def script_source(skill: SkillVersion) -> str:
    spans = value_spans(skill.code, [p["name"] for p in skill.parameters])  # bound by position, not by line
    payload = {"name": skill.name, "version": skill.version, "code": skill.code, "sha256": skill.sha256,
               "parameters": skill.parameters, "spans": spans}
    encoded = base64.b64encode(json.dumps(payload).encode("utf-8")).decode("ascii")
    return TEMPLATE.read_text(encoding="utf-8").replace("__SKILL__", encoded)


def bundle_yaml(skill: SkillVersion) -> str:
    tooltip = f"{skill.description} (team skill v{skill.version}, sha256 {skill.sha256[:12]})"
    return (f"title: {json.dumps(skill.name)}\ntooltip: {json.dumps(tooltip)}\nauthor: NexusAI team library\n"
            "min_revit_version: 2023\n")


def icon_png(size: int = ICON_PX, rgb: tuple[int, int, int] = ICON_RGB) -> bytes:
    """A plain square PNG (pyRevit wants an icon.png beside the script)."""
    row = b"\x00" + bytes(rgb) * size
    raw = row * size

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def write_bundle(skill: SkillVersion, folder: Path) -> Path:
    bundle = folder / f"{bundle_name(skill.name)}.pushbutton"
    bundle.mkdir(parents=True, exist_ok=True)
    (bundle / "bundle.yaml").write_text(bundle_yaml(skill), encoding="utf-8")
    (bundle / "icon.png").write_bytes(icon_png())
    (bundle / "script.py").write_text(script_source(skill), encoding="utf-8")
    return bundle


def export_pyrevit(store: Store, user_name: str, folder: str | Path) -> list[Path]:
    """One bundle per Revit (or portable) skill of the user's team, from its latest version; a skill whose
    stored script fails its sha256 check is not exported."""
    library = SkillLibrary(store)
    written = []
    for listed in library.listing(user_name):
        if listed["host_app"] != REVIT and not listed["portable"]:
            continue
        skill = library.get(user_name, listed["name"])
        if skill is None:
            continue
        skill.verified_code()
        written.append(write_bundle(skill, Path(folder)))
    return written


def library_payload(store: Store, user_name: str) -> list[dict[str, Any]]:
    """What the extension's "Team skills" panel fetches: the Revit skills' bundles' sources."""
    library = SkillLibrary(store)
    out = []
    for listed in library.listing(user_name):
        if listed["host_app"] != REVIT and not listed["portable"]:
            continue
        skill = library.get(user_name, listed["name"])
        if skill is not None:
            skill.verified_code()
            out.append({"folder": f"{bundle_name(skill.name)}.pushbutton", "version": skill.version,
                        "sha256": skill.sha256, "bundle_yaml": bundle_yaml(skill), "script": script_source(skill),
                        "icon_png": base64.b64encode(icon_png()).decode("ascii")})
    return out
