"""The "Team skills" panel: on each (re)load the extension fetches its team's Revit skills from the
NexusAI server (GET /api/skills/pyrevit) and writes them as pushbutton bundles into the panel folder;
pyRevit shows what the folder holds when it builds the ribbon, so a change appears at the next reload.

`sync_panel` is plain Python (tested under CPython); `fetch_bundles` uses .NET's WebRequest. Only folders
this module wrote (they carry MARKER) are ever replaced or removed."""
import base64
import json
import os
import re
import shutil

PANEL_FOLDER = "Team skills.panel"
MARKER = ".nexus_skill"
FOLDER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _-]{0,63}\.pushbutton$")
ROUTE = "/api/skills/pyrevit"


def _write(path, data):
    handle = open(path, "wb")
    try:
        handle.write(data)
    finally:
        handle.close()


def _ours(folder):
    return os.path.isfile(os.path.join(folder, MARKER))


def sync_panel(panel_dir, bundles):
    """Write `bundles` (the server's list) into panel_dir; remove bundles of ours no longer listed.
    Returns (written folder names, removed folder names, refused entries with the reason)."""
    written, removed, refused = [], [], []
    wanted = set()
    for bundle in bundles:
        name = bundle.get("folder") if isinstance(bundle, dict) else None
        if not isinstance(name, str) or not FOLDER_NAME.match(name):
            refused.append((name, "not a plain .pushbutton folder name"))
            continue
        folder = os.path.join(panel_dir, name)
        if os.path.isdir(folder) and not _ours(folder):
            refused.append((name, "a button of that name was not written by NexusAI"))
            continue
        wanted.add(name)
        if not os.path.isdir(folder):
            os.makedirs(folder)
        _write(os.path.join(folder, "bundle.yaml"), bundle["bundle_yaml"].encode("utf-8"))
        _write(os.path.join(folder, "script.py"), bundle["script"].encode("utf-8"))
        _write(os.path.join(folder, "icon.png"), base64.b64decode(bundle["icon_png"]))
        _write(os.path.join(folder, MARKER), json.dumps({"sha256": bundle.get("sha256"),
                                                        "version": bundle.get("version")}).encode("utf-8"))
        written.append(name)
    if os.path.isdir(panel_dir):
        for name in sorted(os.listdir(panel_dir)):
            folder = os.path.join(panel_dir, name)
            if name not in wanted and os.path.isdir(folder) and _ours(folder):
                shutil.rmtree(folder)
                removed.append(name)
        if not os.listdir(panel_dir):
            os.rmdir(panel_dir)
    return written, removed, refused


def fetch_bundles(server_url, token, timeout_ms=5000):
    """The server's bundle list, the token sent as a bearer token; a short timeout (this runs at startup)."""
    from System.IO import StreamReader
    from System.Net import WebRequest
    from System.Text import Encoding

    request = WebRequest.Create(server_url.rstrip("/") + ROUTE)
    request.Timeout = timeout_ms
    request.Headers.Add("Authorization", "Bearer " + token)
    response = request.GetResponse()
    try:
        reader = StreamReader(response.GetResponseStream(), Encoding.UTF8)
        return json.loads(reader.ReadToEnd())["bundles"]
    finally:
        response.Close()


def refresh(extension_dir, settings, fetch=fetch_bundles):
    """Fetch and write the panel; a message for the pyRevit output (None when not configured)."""
    if not settings.is_complete():
        return None
    bundles = fetch(settings.server_url, settings.token)
    panel_dir = os.path.join(extension_dir, "NexusAI.tab", PANEL_FOLDER)
    if bundles and not os.path.isdir(panel_dir):
        os.makedirs(panel_dir)
    written, removed, refused = sync_panel(panel_dir, bundles)
    text = "NexusAI: team skills: {0} button(s) written, {1} removed".format(len(written), len(removed))
    if refused:
        text += "; refused: " + ", ".join("{0} ({1})".format(name, why) for name, why in refused)
    return text
