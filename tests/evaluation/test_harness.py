"""The harness on small suites: outcomes (pass, fail, error), what a run records, checker trouble, parallel
runs, and the command line's output and exit status."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cloud.evaluation.runner import model_for, run_all, run_task
from cloud.evaluation.tasks import SuiteError, load_suite
from tests.evaluation.conftest import ROOT
from tests.support.spine import automate, collect, say
from tests.support.waiting import wait_until

COUNT_DOORS = "from cloud.evaluation import checks\n\ndef check(before, after, answer):\n" \
              "    return checks.has_number(answer, len(before.by_type('IfcDoor'))), 'doors'\n"
RAISES = "def check(before, after, answer):\n    raise ValueError('the checker broke on purpose')\n"
UNCHANGED = "from cloud.evaluation import checks\n\ndef check(before, after, answer):\n" \
            "    return checks.unchanged(before, after)\n"


def test_a_task_passes_fails_and_records_what_the_run_did(make_suite):
    make_suite.task("right", COUNT_DOORS, [collect("print(len(model.by_type('IfcDoor')))"), say("10 doors.")],
                    policy="readonly")
    make_suite.task("wrong", COUNT_DOORS, [collect("print(1/0)"), collect("print(2)"), say("7 doors.")],
                    policy="readonly")
    suite = load_suite(make_suite.root)
    right, wrong = run_all(suite.tasks, [make_suite.scripted])
    assert (right.task, right.status, right.passed) == ("right", "pass", True)
    assert right.answer == "10 doors." and right.turns == 2 and right.tool_calls == 1 and right.fixes == 0
    assert right.input_tokens > 0 and right.output_tokens > 0 and right.seconds > right.loop_seconds > 0
    assert [e["role"] for e in right.transcript][:2] == ["user", "assistant"]
    assert (wrong.status, wrong.passed, wrong.detail) == ("fail", False, "doors")
    assert wrong.turns == 3 and wrong.tool_calls == 2 and wrong.fixes == 1  # the ZeroDivisionError, then a retry


def test_the_model_the_checker_sees_is_the_one_written_after_the_run_and_the_source_is_untouched(make_suite):
    source = (make_suite.root / "models" / "small.ifc").read_bytes()
    make_suite.task("edit", UNCHANGED, [automate("model.by_type('IfcDoor')[0].Tag = 'CHANGED'"), say("Done.")])
    make_suite.task("readonly", UNCHANGED, [automate("model.by_type('IfcDoor')[0].Tag = 'CHANGED'"), say("Done.")],
                    policy="readonly")
    edit, readonly = run_all(load_suite(make_suite.root).tasks, [make_suite.scripted])
    assert edit.status == "fail" and "changed" in edit.detail and "IfcDoor" in edit.detail
    assert readonly.status == "pass"  # the read-only policy refused the automation: nothing changed
    assert (make_suite.root / "models" / "small.ifc").read_bytes() == source


def test_a_checker_that_raises_is_a_failure_with_its_message(make_suite):
    make_suite.task("raises", RAISES, [say("Hello.")])
    (run,) = run_all(load_suite(make_suite.root).tasks, [make_suite.scripted])
    assert run.status == "fail"
    assert "ValueError: the checker broke on purpose" in run.detail


def test_a_checker_returning_something_else_or_not_loading_fails_with_why(make_suite):
    make_suite.task("odd", "def check(before, after, answer):\n    return 'yes'\n", [say("Hi.")])
    make_suite.task("broken", "def check(before, after, answer) oops\n", [say("Hi.")])
    odd, broken = sorted(run_all(load_suite(make_suite.root).tasks, [make_suite.scripted]), key=lambda r: r.task)[::-1]
    assert odd.status == "fail" and "expected a bool or (bool, detail)" in odd.detail
    assert broken.status == "fail" and "cannot load" in broken.detail and "SyntaxError" in broken.detail


class KillsItsHost:
    """A scripted model that kills the IFC host (SIGKILL, as a crash would) before its second turn."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def stream(self, request: Any, cancel: Any) -> Any:
        if self.model.place(request.transcript) == 1:
            (host,) = [pid for pid, cmd in _children(os.getpid()).items() if "ifc_host.launcher" in cmd]
            os.kill(host, signal.SIGKILL)
            wait_until(lambda: _dead(host), timeout=10)
        return self.model.stream(request, cancel)


def _children(pid: int) -> dict[int, str]:
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
    return found


def _dead(pid: int) -> bool:
    """All of the process's threads have ended: a zombie whose other threads are gone too, which its parent can
    reap. SIGKILL is asynchronous: the main thread can be a zombie while another thread still exits, and until
    that one ends, waitpid (Popen.poll) says the process runs."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:  # reaped
        return True
    except OSError:  # a process mid-exit may refuse the read: not known to be dead yet
        return False
    state, threads = fields[0], int(fields[17])
    return state == "Z" and threads <= 1


@pytest.mark.skipif(sys.platform != "linux", reason="finds the host among this process's children in /proc")
def test_a_host_that_dies_during_the_run_is_an_error_not_a_failure(make_suite):
    make_suite.task("crash", UNCHANGED, [collect("print(1)"), say("Nothing changed.")])
    (run,) = run_all(load_suite(make_suite.root).tasks, [make_suite.scripted],
                     model_factory=lambda spec, task: KillsItsHost(model_for(spec, task)))
    assert run.status == "error" and not run.passed
    assert "the IFC host stopped during the run" in run.detail


def test_a_host_that_cannot_start_and_a_vendor_that_fails_are_errors(make_suite):
    (make_suite.root / "models" / "broken.ifc").write_text("ISO-10303-21;\nthis is not a model\n")
    make_suite.task("bad-model", UNCHANGED, [say("Hi.")], model="models/broken.ifc")
    make_suite.task("vendor", UNCHANGED)
    suite = load_suite(make_suite.root)
    bad_model = run_task(suite.tasks[0], make_suite.scripted)
    assert bad_model.status == "error" and bad_model.detail.startswith("host:")
    vendor = run_task(suite.tasks[1], "openai-compat:nothing@http://127.0.0.1:9/v1")
    assert vendor.status == "error" and "vendor error" in vendor.detail
    missing_script = run_task(suite.tasks[1], make_suite.scripted)
    assert missing_script.status == "error" and "vendor.json" in missing_script.detail


def test_a_model_that_never_finishes_fails_at_its_turn_limit(make_suite):
    loop = [collect("print(1)")] * 5
    make_suite.task("endless", UNCHANGED, loop, max_turns=2)
    (run,) = run_all(load_suite(make_suite.root).tasks, [make_suite.scripted])
    assert run.status == "fail" and run.turns == 2 and "2" in run.detail


def test_parallel_runs_give_the_same_results_as_serial_ones(make_suite):
    for n in range(3):  # two at a time and one waiting for a free slot
        make_suite.task(f"t{n}", COUNT_DOORS, [collect("print(1)"), say(f"{10 if n % 2 else 9} doors.")],
                        policy="readonly")
    tasks = load_suite(make_suite.root).tasks

    def outcome(results):
        return [(r.task, r.status, r.detail, r.turns, r.tool_calls, r.fixes, r.answer, r.output_tokens)
                for r in results]

    serial = run_all(tasks, [make_suite.scripted], parallel=1)
    parallel = run_all(tasks, [make_suite.scripted], parallel=2)
    assert outcome(serial) == outcome(parallel)
    assert [r.status for r in serial] == ["fail", "pass", "fail"]


@pytest.mark.parametrize("change, message", [
    ({"policy": "ask"}, "'policy' must be one of auto, readonly"),
    ({"max_turns": 0}, "'max_turns' must be a positive integer"),
    ({"tags": "x"}, "'tags' must be a list"),
    ({"model": "models/nowhere.ifc"}, "nowhere.ifc does not exist"),
    ({"colour": "red"}, "unknown field(s) colour"),
    ({"id": "../x"}, "'id' must not contain path separators"),
])
def test_a_bad_task_is_refused_naming_the_file_and_the_field(make_suite, change, message):
    make_suite.task("t", UNCHANGED, **change)
    with pytest.raises(SuiteError) as caught:
        load_suite(make_suite.root)
    assert message in str(caught.value) and "t.json" in str(caught.value)


def test_an_absent_corpus_file_skips_its_task_and_tags_filter(make_suite):
    make_suite.task("real", UNCHANGED, model="corpus:not-here.ifc", tags=["corpus"])
    make_suite.task("mine", UNCHANGED, tags=["audit"])
    make_suite.task("other", UNCHANGED, tags=["edit"])
    suite = load_suite(make_suite.root)
    assert [t.id for t in suite.tasks] == ["mine", "other"] and suite.skipped[0][0] == "real"
    assert [t.id for t in load_suite(make_suite.root, ["audit"]).tasks] == ["mine"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cloud.cli", "eval", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)


def test_the_command_prints_json_lines_and_a_summary_writes_the_report_and_exits_0_on_failures(make_suite, tmp_path):
    make_suite.task("pass", COUNT_DOORS, [say("There are 10 doors.")], policy="readonly")
    make_suite.task("fail", COUNT_DOORS, [say("There are 3 doors.")], policy="readonly")
    out = tmp_path / "report"
    done = _cli(str(make_suite.root), "--model", make_suite.scripted, "--json", "--out", str(out), "--repeat", "2",
                "--parallel", "2")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    runs, summary = lines[:-1], lines[-1]
    assert sorted((r["task"], r["repeat"]) for r in runs) == [("fail", 1), ("fail", 2), ("pass", 1), ("pass", 2)]
    for run in runs:
        assert {"task", "model", "passed", "detail", "turns", "input_tokens", "output_tokens", "cost",
                "seconds"} <= set(run)
    assert summary["summary"] is True and summary["passed"] == 2 and summary["failed"] == 2
    assert summary["pass_rate"] == 0.5 and summary["models"][make_suite.scripted]["runs"] == 4
    results = json.loads((out / "results.json").read_text())
    assert len(results["runs"]) == 4 and len({r["transcript"] for r in results["runs"]}) == 4
    assert all((out / r["transcript"]).is_file() for r in results["runs"])
    assert "| fail |" in (out / "report.md").read_text() or "fail](" in (out / "report.md").read_text()


def test_the_command_fails_only_when_the_harness_cannot_run(make_suite, tmp_path):
    no_suite = _cli(str(tmp_path / "nothing"), "--model", "scripted:x")
    assert no_suite.returncode == 2 and "tasks/*.json" in no_suite.stderr
    make_suite.task("t", UNCHANGED)
    no_model = _cli(str(make_suite.root))
    assert no_model.returncode == 2 and "--model" in no_model.stderr


def test_ctrl_c_cancels_the_runs_under_way_and_reports_those_that_ended(make_suite, tmp_path):
    busy = "n = 0\nfor i in range(400000000):\n    n += i\nprint(n)\n"  # far longer than the test waits
    make_suite.task("a-quick", UNCHANGED, [say("Nothing to do.")])
    make_suite.task("b-busy", UNCHANGED, [collect(busy), say("Done.")])
    make_suite.task("c-never", UNCHANGED, [say("Never started.")])
    out = tmp_path / "report"
    process = subprocess.Popen([sys.executable, "-m", "cloud.cli", "eval", str(make_suite.root), "--model",
                                make_suite.scripted, "--json", "--out", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                               # a test worker may run with SIGINT ignored; the command must get Ctrl-C as a person's would
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert process.stdout is not None
    first = json.loads(process.stdout.readline())
    assert first["task"] == "a-quick" and first["status"] == "pass"
    wait_until(lambda: any("ifc_host.launcher" in cmd and
                           any(True for _ in _children(pid)) for pid, cmd in _children(process.pid).items()),
               timeout=60)  # the busy task's host is running its script
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=150)
    assert process.returncode == 130, stderr
    lines = [json.loads(line) for line in stdout.splitlines()]
    busy_run, summary = lines[0], lines[-1]
    assert busy_run["task"] == "b-busy" and busy_run["status"] == "error" and "cancel" in busy_run["detail"]
    assert summary["summary"] is True and summary["interrupted"] is True and summary["runs"] == 2
    results = json.loads((out / "results.json").read_text())
    assert [r["task"] for r in results["runs"]] == ["a-quick", "b-busy"]
    leftovers = []
    for entry in Path("/proc").iterdir():  # the cancelled run's host is gone too (its model sits in nexus-eval-b-busy-*)
        try:
            if entry.name.isdigit() and b"nexus-eval-b-busy-" in (entry / "cmdline").read_bytes():
                leftovers.append(entry.name)
        except OSError:
            continue
    assert not leftovers
