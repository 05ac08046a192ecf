"""Issue 22, item 3: the commands whose stdout is a protocol never swap `sys.stdout` from a thread.

`nexus run --json` died with SIGSEGV at random with stdout on a pipe: when the host connected, a thread
building the API index replaced `sys.stdout` around each noisy import while the main thread was inside
`print(json.dumps(...), flush=True)`, and the print went on with a freed stream.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOISY_MODULES = 150  # per round; each prints a line when imported, as ifcopenshell.api.sequence does without networkx
ROUNDS = 3
CHILDREN = 2

# What `nexus run --json` does: take stdout before any thread starts, then print JSON lines on the main
# thread while another thread builds the API index (the real build_ifc_index, over ifcopenshell.api plus a
# folder of modules that print when imported). Each round adds a fresh folder, so every round imports. The
# main thread also prints to sys.stdout itself, as a library would: that print crashed when a thread swapped it.
RACE = textwrap.dedent("""
    import json, sys, threading
    import ifcopenshell.api
    from cloud.cli.protocol_stdout import protocol_stdout
    from cloud.grounding.ifc_api import build_ifc_index

    folders = sys.argv[1:]
    with protocol_stdout() as out:
        printed = 0
        for folder in folders:
            ifcopenshell.api.__path__.append(folder)
            building = threading.Thread(target=build_ifc_index)
            building.start()
            while building.is_alive():
                print(json.dumps({"type": "Message", "content": "x" * 200, "n": printed}), file=out, flush=True)
                print("CHATTER ON STDOUT", printed, flush=True)  # sys.stdout as it is: a library's own print
                printed += 1
            building.join()
        print(json.dumps({"type": "Complete", "content": "", "printed": printed}), file=out, flush=True)
""")


def _noisy_folder(path: Path, round_: int) -> Path:
    path.mkdir()
    for i in range(NOISY_MODULES):
        (path / f"nexus_noisy_{round_}_{i}.py").write_text(
            f"print('NOTE FROM NOISY MODULE {round_}-{i}: an optional dependency is missing')\n")
    return path


def test_a_thread_building_the_api_index_never_crashes_or_pollutes_a_json_stream_on_a_pipe(tmp_path):
    """With the old cloud/grounding/ifc_api.py (`_import_quietly` swapping sys.stdout around each import) this
    child dies with SIGSEGV (return code -11); so did `nexus run`'s own print in 10 runs out of 10."""
    folders = [str(_noisy_folder(tmp_path / f"round{r}", r)) for r in range(ROUNDS)]
    children = [subprocess.Popen([sys.executable, "-c", RACE, *folders], cwd=ROOT, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(CHILDREN)]
    for child in children:
        stdout, stderr = child.communicate(timeout=300)
        assert child.returncode == 0, f"return code {child.returncode}:\n{stderr[-3000:]}"
        lines = [json.loads(line) for line in stdout.splitlines()]  # nothing but the command's JSON lines
        assert lines[-1]["type"] == "Complete" and lines[-1]["printed"] == len(lines) - 1
        assert [line["n"] for line in lines[:-1]] == list(range(len(lines) - 1))
        notes = re.findall(r"NOTE FROM NOISY MODULE (\d+)-(\d+)", stderr)
        assert len(notes) == ROUNDS * NOISY_MODULES  # the imports' notes went to stderr, every one
        assert stderr.count("CHATTER ON STDOUT") == len(lines) - 1


def test_a_module_that_prints_when_a_dependency_is_missing_never_writes_to_the_protocol_stream():
    """`nexus eval --json` and the stdio MCP server build this index; their stdout is a protocol."""
    code = textwrap.dedent("""
        import json, sys
        sys.modules["networkx"] = None  # as on a machine without it: ifcopenshell.api.sequence prints a note
        from cloud.cli.protocol_stdout import protocol_stdout
        from cloud.grounding.ifc_api import build_ifc_index
        with protocol_stdout() as out:
            index = build_ifc_index("IFC4")
            assert "ifcopenshell.api.root.create_entity" in index.answer("create_entity")
            print(json.dumps({"ok": True}), file=out, flush=True)
        print("AFTER", flush=True)  # descriptor 1 is the stream again once the command is done
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ['{"ok": true}', "AFTER"]
    assert "networkx" in done.stderr


def test_the_ifc_host_and_its_scripts_never_inherit_the_protocol_stream(tmp_path):
    """What a child process prints on its stdout lands on stderr too: it inherits descriptor 1, not the wire."""
    code = textwrap.dedent("""
        import subprocess, sys
        from cloud.cli.protocol_stdout import protocol_stdout
        with protocol_stdout() as out:
            subprocess.run([sys.executable, "-c", "print('FROM A CHILD PROCESS')"], check=True)
            print("PROTOCOL LINE", file=out, flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "PROTOCOL LINE\n"
    assert "FROM A CHILD PROCESS" in done.stderr


SWAPS = re.compile(r"\bsys\.(stdout|stderr)\s*=(?!=)|redirect_std(out|err)\(")
# The script child runs one script at a time on its only thread (ifc_host/child.py); the Revit runner swaps
# IronPython's streams, managed objects a print never uses after they are freed.
SINGLE_THREADED_SCRIPT_RUNNERS = {"ifc_host/child.py", "NexusAI.extension/lib/nexus_runtime/script_runner.py"}


def test_no_code_of_the_orchestrator_replaces_sys_stdout():
    found = []
    for folder in ("cloud", "ifc_host", "NexusAI.extension"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative in SINGLE_THREADED_SCRIPT_RUNNERS:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if SWAPS.search(line.split("#", 1)[0]):
                    found.append(f"{relative}:{number}: {line.strip()}")
    assert not found, "sys.stdout / sys.stderr replaced (a print on another thread can crash):\n" + "\n".join(found)
