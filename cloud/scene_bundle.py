"""three.js for the 3D viewer: where the npm package is, and the viewer as one classic script for the MCP Apps
review card (docs/scene.md).

The chat page loads three's ES modules from the app (`/vendor/three/`, cloud/web/scene_api.py). The review card
cannot: it is one HTML resource rendered in the client's sandbox, whose CSP allows inline scripts and no
network (ext-apps: no `resourceDomains` declared). So the card gets the same modules inlined, each wrapped as a
function whose `import`/`export` lists become a lookup in a module table, with the viewer module last; the
bundle sets `window.NexusSceneViewer` to the viewer's exports. Only the statement forms three's builds and
examples use are rewritten; any other `import`/`export` line is an error here, not a broken card.
"""
from __future__ import annotations

import json
import os
import re
from functools import cache
from pathlib import Path

THREE_DIR_ENV = "NEXUS_THREE_DIR"
REPO_ROOT = Path(__file__).resolve().parents[1]
VIEWER_JS = REPO_ROOT / "cloud" / "static" / "js" / "scene_viewer.js"
VIEWER_CSS = REPO_ROOT / "cloud" / "static" / "css" / "scene.css"
THREE_MODULES = ("build/three.core.js", "build/three.module.js", "examples/jsm/utils/BufferGeometryUtils.js",
                 "examples/jsm/utils/SkeletonUtils.js", "examples/jsm/loaders/GLTFLoader.js",
                 "examples/jsm/controls/OrbitControls.js")
BUNDLE_GLOBAL = "NexusThreeBundle"  # what scene_viewer.js uses instead of importing three from /vendor/three/

_IMPORT = re.compile(r"""^import\s*\{([^}]*)\}\s*from\s*(['"])([^'"]+)\2\s*;?""", re.M)
_REEXPORT = re.compile(r"""^export\s*\{([^}]*)\}\s*from\s*(['"])([^'"]+)\2\s*;?""", re.M)
_EXPORT_LIST = re.compile(r"""^export\s*\{([^}]*)\}\s*;?""", re.M)
_EXPORT_DECLARATION = re.compile(r"""^export\s+((?:async\s+)?function\*?|class|const|let)\s+([A-Za-z_$][\w$]*)""",
                                 re.M)
_LEFT_OVER = re.compile(r"""^\s*(import|export)\b[^(]""", re.M)


class BundleError(Exception):
    pass


def three_dir() -> Path:
    """Where three's npm package is: $NEXUS_THREE_DIR, else node_modules/three in the checkout."""
    configured = os.environ.get(THREE_DIR_ENV)
    return Path(configured) if configured else REPO_ROOT / "node_modules" / "three"


def _names(listing: str) -> list[tuple[str, str]]:
    """`a, b as c` → [(a, a), (b, c)]: (local name, exported or imported-as name)."""
    pairs = []
    for part in (p.strip() for p in listing.split(",")):
        if part:
            local, _, alias = (w.strip() for w in part.partition(" as "))
            pairs.append((local, alias or local))
    return pairs


def _resolve(source: str, importer: str) -> str:
    if source == "three":
        return "build/three.module.js"
    if not source.startswith("."):
        raise BundleError(f"{importer} imports {source!r}, which the card bundle does not hold")
    return os.path.normpath(os.path.join(os.path.dirname(importer), source)).replace(os.sep, "/")


def wrap_module(name: str, text: str) -> str:
    """One ES module as `__m[name] = (function () { ...; return {exports}; })();`."""
    exports: list[str] = []

    def imported(match: re.Match[str]) -> str:
        target = json.dumps(_resolve(match.group(3), name))
        fields = ", ".join(f"{theirs}: {mine}" if theirs != mine else mine for theirs, mine in _names(match.group(1)))
        return f"const {{ {fields} }} = __m[{target}];"

    def reexported(match: re.Match[str]) -> str:
        target = json.dumps(_resolve(match.group(3), name))
        exports.extend(f"{json.dumps(alias)}: __m[{target}][{json.dumps(local)}]"
                       for local, alias in _names(match.group(1)))
        return ""

    def listed(match: re.Match[str]) -> str:
        exports.extend(f"{json.dumps(alias)}: {local}" for local, alias in _names(match.group(1)))
        return ""

    def declared(match: re.Match[str]) -> str:
        exports.append(f"{json.dumps(match.group(2))}: {match.group(2)}")
        return f"{match.group(1)} {match.group(2)}"

    text = _REEXPORT.sub(reexported, text)
    text = _IMPORT.sub(imported, text)
    text = _EXPORT_LIST.sub(listed, text)
    text = _EXPORT_DECLARATION.sub(declared, text)
    left = _LEFT_OVER.search(text)
    if left is not None:
        line = text[left.start():text.find("\n", left.start())].strip()
        raise BundleError(f"{name}: the card bundle cannot rewrite {line[:80]!r}")
    return (f"__m[{json.dumps(name)}] = (function () {{ \"use strict\";\n{text}\n"
            f";return {{ {', '.join(exports)} }};\n}})();\n")


@cache
def card_viewer_script() -> str:
    """The viewer and three.js as one classic script (raises BundleError when three is not installed)."""
    root = three_dir()
    parts = ["(function () {\nconst __m = Object.create(null);\n"]
    for name in THREE_MODULES:
        path = root / name
        if not path.is_file():
            raise BundleError(f"three.js is not installed ({path} is missing): run `npm ci` in {REPO_ROOT}")
        parts.append(wrap_module(name, path.read_text(encoding="utf-8")))
    parts.append(f"window.{BUNDLE_GLOBAL} = [__m[\"build/three.module.js\"], "
                 "__m[\"examples/jsm/loaders/GLTFLoader.js\"], __m[\"examples/jsm/controls/OrbitControls.js\"]];\n")
    parts.append(wrap_module("scene_viewer.js", VIEWER_JS.read_text(encoding="utf-8")))
    parts.append("window.NexusSceneViewer = __m[\"scene_viewer.js\"];\n})();\n")
    return "".join(parts).replace("</script", "<\\/script")


@cache
def card_viewer_css() -> str:
    return VIEWER_CSS.read_text(encoding="utf-8")
