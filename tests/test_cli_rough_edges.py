"""Issue 22, item 10: the rough edges a new user hits on the command line, each a one-line error or a fix."""
from __future__ import annotations

import hashlib
import html
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from cloud.cli import build_parser
from cloud.store import Store
from ifc_host.sample import write_sample_model
from tests.support.client import write_script
from tests.support.server import running_server
from tests.support.spine import automate, say

ROOT = Path(__file__).resolve().parents[1]
VENDOR_KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
VENDOR_SDKS = ("anthropic", "openai", "google.genai")


def _nexus(*args: str, env: dict[str, str] | None = None, keys: bool = False, timeout: float = 180,
           python_flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    environment = {**os.environ, "NEXUS_SCRIPTED_DIRS": "", **(env or {})}
    if not keys:
        for key in VENDOR_KEYS:
            environment.pop(key, None)
    return subprocess.run([sys.executable, *python_flags, "-m", "cloud.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=environment, cwd=ROOT)


def _one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("nexus: "), done.stderr
    return lines[0]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def sample_ifc(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ifc") / "sample.ifc"
    write_sample_model(path, storeys=1)
    return path


@pytest.mark.parametrize("arguments, says", [
    (["--storeys", "-3"], "--storeys must be a whole number from 1 to 200, not -3"),
    (["--storeys", "0"], "--storeys must be a whole number from 1 to 200, not 0"),
    (["--storeys", "100000"], "--storeys must be a whole number from 1 to 200, not 100000"),
    (["--scale", "0"], "--scale must be a whole number from 1 to 500, not 0"),
])
def test_sample_model_refuses_bad_numbers_in_one_line_and_writes_nothing(tmp_path, arguments, says):
    out = tmp_path / "s.ifc"
    line = _one_line_error(_nexus("sample-model", str(out), *arguments))
    assert line == f"nexus: {says}"
    assert not out.exists() and not list(tmp_path.iterdir())


def test_sample_model_into_a_folder_says_so(tmp_path):
    assert "is a folder" in _one_line_error(_nexus("sample-model", str(tmp_path)))


@pytest.mark.parametrize("spec, key", [("openai:gpt-5.1", "OPENAI_API_KEY"), ("gemini:gemini-2.5-pro", "GEMINI_API_KEY"),
                                       ("anthropic:claude-sonnet-4-6", "ANTHROPIC_API_KEY")])
def test_a_vendor_without_its_key_is_one_line_before_the_host_starts(tmp_path, sample_ifc, spec, key):
    done = _nexus("run", "hi", "--ifc", str(sample_ifc), "--model", spec, "--db", str(tmp_path / "r.db"),
                  python_flags=("-X", "importtime"))
    stderr = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert done.returncode == 2 and len(stderr) == 1, done.stderr[-3000:]
    assert stderr[0].startswith(f"nexus: no API key for {spec.split(':')[0]}: set {key}")
    assert "Missing credentials" not in done.stderr and "workload" not in done.stderr
    assert done.stdout == ""  # no [usage] line: no run, no host
    imported = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", done.stderr, re.MULTILINE))
    assert "cloud.embedded" not in imported and not imported & set(VENDOR_SDKS)  # said before either was needed


def test_nexus_run_without_any_key_says_so_without_importing_a_vendor_sdk(tmp_path, sample_ifc):
    """Choosing the default model used to import every vendor SDK (11.7 of 15.7 s) before saying "no model"."""
    done = _nexus("run", "hi", "--ifc", str(sample_ifc), "--db", str(tmp_path / "r.db"),
                  python_flags=("-X", "importtime"))
    stderr = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert done.returncode == 2 and stderr == [
        "nexus: no model: set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY, or pass --model"], done.stderr[-3000:]
    imported = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", done.stderr, re.MULTILINE))
    assert "cloud.cli" in imported  # -X importtime did report
    assert not imported & set(VENDOR_SDKS)


HEAVY = {"ifcopenshell", "alembic", "sqlalchemy", "jsonschema", "numpy", "flask"}


@pytest.mark.parametrize("arguments, status", [
    (["run", "--help"], 0),
    (["check", "{tmp}/nowhere.ifc", "--clash"], 2),
    (["check", "{tmp}/nowhere.ifc"], 2),
    (["batch", "--ifc", "{tmp}/*.ifc", "--script", "{tmp}/x.py", "--out", "{tmp}/out"], 2),
])
def test_help_and_a_bad_command_line_are_answered_before_anything_heavy_is_imported(tmp_path, arguments, status):
    """`nexus check nowhere.ifc` imported IfcOpenShell (and numpy) before saying there is no such file, and a
    batch that matches no file opened the store's SQLAlchemy first."""
    done = _nexus(*[a.format(tmp=tmp_path) for a in arguments], python_flags=("-X", "importtime"))
    stderr = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert done.returncode == status, done.stderr[-3000:]
    assert len(stderr) == (0 if status == 0 else 1) and all(line.startswith("nexus: ") for line in stderr), stderr
    imported = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", done.stderr, re.MULTILINE))
    assert "cloud.cli" in imported
    assert not {m.split(".")[0] for m in imported} & HEAVY


def test_a_model_the_host_cannot_open_is_one_line_and_never_opened_by_the_orchestrator(tmp_path, sample_ifc):
    """The host reads the model; `nexus run` opened it first too (IfcOpenShell's import, a second parse)."""
    truncated = tmp_path / "truncated.ifc"
    truncated.write_bytes(sample_ifc.read_bytes()[:3000])
    spec = write_script(tmp_path / "say.json", [say("hi")])
    done = _nexus("run", "hi", "--ifc", str(truncated), "--model", spec, "--db", str(tmp_path / "r.db"),
                  python_flags=("-X", "importtime"))
    stderr = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert done.returncode == 2 and stderr == [
        f"nexus: {truncated}: the IFC file is truncated (it does not end with END-ISO-10303-21;)"], done.stderr[-3000:]
    imported = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", done.stderr, re.MULTILINE))
    assert "cloud.embedded" in imported and "ifcopenshell" not in imported
    missing = _one_line_error(_nexus("run", "hi", "--ifc", str(tmp_path / "nowhere.ifc"), "--model", spec))
    assert missing == f"nexus: {tmp_path / 'nowhere.ifc'}: no such file"


def test_the_registry_reads_the_same_key_variables_as_each_vendor(monkeypatch):
    """default_model_spec and missing_key look at the environment instead of importing the vendor modules:
    the table they use must say what each module's is_configured() says."""
    from cloud.vendors.registry import KEY_ENVS, VENDOR_MODULES, default_model_spec, missing_key, vendor_info

    for key in VENDOR_KEYS:
        monkeypatch.delenv(key, raising=False)
    for vendor, (module, keys) in KEY_ENVS.items():
        assert VENDOR_MODULES[vendor] == module
        info = vendor_info(vendor)
        assert info.key_env in keys and not info.is_configured() and missing_key(f"{vendor}:m")
        for key in keys:
            monkeypatch.setenv(key, "k")
            assert info.is_configured() and missing_key(f"{vendor}:m") is None
            assert default_model_spec() == info.default_model or list(KEY_ENVS).index(vendor) > 0
            monkeypatch.delenv(key)
    assert default_model_spec() is None
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    assert default_model_spec() == vendor_info("gemini").default_model
    monkeypatch.setenv("OPENAI_API_KEY", "k")  # the registry's order decides
    assert default_model_spec() == vendor_info("openai").default_model


def test_serve_on_a_busy_port_says_so_before_printing_any_url(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = _nexus("serve", "--port", str(port), "--db", str(tmp_path / "s.db"))
    line = _one_line_error(done)
    assert f"cannot listen on 127.0.0.1:{port}" in line and "--port" in line
    assert done.stdout == ""


def test_the_chat_pages_no_host_note_gives_a_command_nexus_ifc_host_accepts(tmp_path):
    with running_server(tmp_path) as server:
        store = Store(server.db_path)
        token = store.create_token("alice")
        page = requests.get(f"{server.url}/?signin={store.create_signin_code(token)}", timeout=30)
        assert page.status_code == 200
    note = re.search(r'<div id="no-host"[^>]*>(.*?)</div>', page.text, re.DOTALL)
    assert note, "no #no-host note on the chat page"
    (command,) = [html.unescape(c) for c in re.findall(r"<code>(.*?)</code>", note.group(1)) if "ifc-host" in c]
    words = shlex.split(command)
    environment = [w for w in words if re.match(r"^[A-Z_]+=", w)]
    assert environment == ["NEXUS_TOKEN=TOKEN"]
    assert words[len(environment)] == "nexus"
    build_parser().parse_args(words[len(environment) + 1:])  # exits (SystemExit) on an option it refuses
    assert "--token-file" in note.group(1)


def test_a_batch_failure_names_the_file_once(tmp_path, sample_ifc):
    folder = tmp_path / "in"
    folder.mkdir()
    broken = folder / "broken.ifc"
    broken.write_text("not a model\n")
    script = tmp_path / "s.py"
    script.write_text("print(len(model.by_type('IfcDoor')))\n")
    done = _nexus("batch", "--ifc", str(folder / "*.ifc"), "--script", str(script), "--out", str(tmp_path / "out"),
                  "--state", str(tmp_path / "state"), "--db", str(tmp_path / "b.db"))
    (line,) = [line for line in done.stderr.splitlines() if line.lstrip("\r").startswith("failed:")]
    assert line.count(str(broken)) == 1, line
    assert line.lstrip("\r").startswith(f"failed: {broken}: ")


RENAME = "door = sorted(model.by_type('IfcDoor'), key=lambda d: d.id())[0]\nif True:\n    door.Name = 'ROUGH-EDGE'\n" \
         "print('renamed', door.id())\n"


def test_run_prints_a_script_as_code_and_never_overwrites_its_input_without_in_place(tmp_path, sample_ifc):
    model = tmp_path / "model.ifc"
    shutil.copy(sample_ifc, model)
    before = _sha(model)
    spec = write_script(tmp_path / "rename.json", [automate(RENAME), say("Renamed.")])
    db = str(tmp_path / "r.db")

    same = _one_line_error(_nexus("run", "go", "--ifc", str(model), "--model", spec, "--out", str(model), "--db", db))
    assert "--in-place" in same
    both = _nexus("run", "go", "--ifc", str(model), "--model", spec, "--out", str(tmp_path / "o.ifc"), "--in-place",
                  "--db", db)
    assert "either --out FILE or --in-place" in _one_line_error(both)
    assert _sha(model) == before

    # Neither --out nor --in-place: the run happens, the input stays as it was, the change is kept aside.
    done = _nexus("run", "go", "--ifc", str(model), "--model", spec, "--db", db)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert _sha(model) == before
    kept = re.search(r"the committed changes are in (\S+) \(", done.stderr)
    assert kept, done.stderr[-2000:]
    assert "ROUGH-EDGE" in Path(kept.group(1)).read_text()
    shutil.rmtree(Path(kept.group(1)).parent)
    # The script as the person wrote it, line by line, not as an escaped JSON string.
    assert "    door = sorted(model.by_type('IfcDoor'), key=lambda d: d.id())[0]\n    if True:\n" \
           "        door.Name = 'ROUGH-EDGE'\n" in done.stdout
    assert "\\n" not in done.stdout and '{"code"' not in done.stdout

    in_place = _nexus("run", "go", "--ifc", str(model), "--model", spec, "--in-place", "--db", db)
    assert in_place.returncode == 0, in_place.stdout[-2000:] + in_place.stderr[-2000:]
    assert "ROUGH-EDGE" in model.read_text() and "committed changes are in" not in in_place.stderr


def test_nexus_mcp_run_task_on_a_vendor_without_its_key_says_so_in_our_words(tmp_path, sample_ifc):
    import anyio

    from tests.mcp.support import stdio_session, text_of

    async def scenario():
        async with stdio_session("--ifc", str(sample_ifc), "--out", str(tmp_path / "out.ifc"),
                                 "--db", str(tmp_path / "db.sqlite")) as session:
            return await session.call_tool("run_task", {"prompt": "hi", "model": "openai:gpt-5.1"})

    done = anyio.run(scenario)
    assert done.is_error
    text = text_of(done)
    assert "no API key for openai: set OPENAI_API_KEY" in text
    assert "Missing credentials" not in text and "workload" not in text
