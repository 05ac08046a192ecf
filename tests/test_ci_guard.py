"""In CI (.ci/run sets NEXUS_FAIL_ON_SKIP=1) a skipped test fails the run: a missing browser, stub package
or project module never passes as a skip."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SKIPPING = '''
import pytest

pytest.importorskip("nexus_module_that_does_not_exist")


def test_never_runs():
    assert False
'''

SKIPPING_AT_RUN_TIME = '''
import pytest


def test_skips():
    pytest.skip("a tool is missing")


def test_passes():
    assert 1 + 1 == 2
'''


def _pytest(tmp_path: Path, source: str, fail_on_skip: bool) -> subprocess.CompletedProcess:
    test_file = tmp_path / "test_sample.py"
    test_file.write_text(source)
    env = {**os.environ, "NEXUS_FAIL_ON_SKIP": "1" if fail_on_skip else "0"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                           "--rootdir", str(tmp_path), str(test_file)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_ci_turns_a_module_level_importorskip_into_a_failure(tmp_path):
    assert "1 skipped" in _pytest(tmp_path, SKIPPING, fail_on_skip=False).stdout
    ci = _pytest(tmp_path, SKIPPING, fail_on_skip=True)
    assert ci.returncode != 0, ci.stdout
    assert "skips fail in CI" in ci.stdout and "nexus_module_that_does_not_exist" in ci.stdout


def test_ci_turns_a_skip_inside_a_test_into_a_failure(tmp_path):
    ci = _pytest(tmp_path, SKIPPING_AT_RUN_TIME, fail_on_skip=True)
    assert ci.returncode != 0 and "1 failed, 1 passed" in ci.stdout, ci.stdout
    assert "a tool is missing" in ci.stdout


def test_ci_runs_the_tests_with_skips_failing():
    assert "NEXUS_FAIL_ON_SKIP=1" in (ROOT / ".ci" / "run").read_text()
