"""The official MCP conformance suite (`@modelcontextprotocol/conformance` from npm, run with Node 22 from
the npm package `node`, both installed by scripts/test into .cache/conformance) against the deployment's
HTTP endpoint and `nexus mcp --ifc` over stdio.

The suite's `server` command takes only `--url`: a loopback proxy of the test adds the bearer token
(tests/support/mcp_proxy.py), and for stdio bridges streamable HTTP to one `nexus mcp --ifc` process per
session. Every scenario of the suite is either applicable (it must pass, every check) or listed in
NOT_APPLICABLE with the reason, as docs/mcp.md lists them: a scenario that a new version of the suite adds
fails the test until it is sorted into one of the two.
"""
from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cloud.child_host import start_ifc_host
from cloud.mcp.http import start_mcp_http
from tests.mcp.support import ROOT
from tests.support.mcp_proxy import BearerProxy, StdioBridge
from tests.support.server import running_server

MODULES = ROOT / ".cache" / "conformance" / "node_modules"
NODE = MODULES / "node" / "bin" / "node"
SUITE = MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"

# Scenarios that need the suite's own fixture server (tools, resources and prompts named test_*, test://...):
# against any other server they test nothing (two of them even "pass" on the unknown-tool error).
_FIXTURE = "needs the suite's fixture server's own {what}"
NOT_APPLICABLE = {
    "tools-call-simple-text": _FIXTURE.format(what="tool test_simple_text"),
    "tools-call-image": _FIXTURE.format(what="tool test_image_content"),
    "tools-call-audio": _FIXTURE.format(what="tool test_audio_content"),
    "tools-call-embedded-resource": _FIXTURE.format(what="tool test_embedded_resource"),
    "tools-call-mixed-content": _FIXTURE.format(what="tool test_multiple_content_types"),
    "tools-call-with-logging": _FIXTURE.format(what="tool test_tool_with_logging"),
    "tools-call-error": _FIXTURE.format(what="tool test_error_handling"),
    "tools-call-with-progress": _FIXTURE.format(what="tool test_tool_with_progress"),
    "tools-call-sampling": _FIXTURE.format(what="tool test_sampling") + "; NexusAI never asks for sampling",
    "tools-call-elicitation": _FIXTURE.format(what="tool test_elicitation"),
    "elicitation-sep1034-defaults": _FIXTURE.format(what="tool test_elicitation_sep1034_defaults"),
    "elicitation-sep1330-enums": _FIXTURE.format(what="tool test_elicitation_sep1330_enums"),
    "json-schema-2020-12": _FIXTURE.format(what="tool json_schema_2020_12_tool"),
    "server-sse-polling": _FIXTURE.format(what="tool test_reconnection"),
    "resources-read-text": _FIXTURE.format(what="resource test://static-text"),
    "resources-read-binary": _FIXTURE.format(what="resource test://static-binary"),
    "resources-templates-read": _FIXTURE.format(what="resource template test://template/{id}/data"),
    "resources-subscribe": "NexusAI does not declare resources.subscribe (its resources are read on demand)",
    "resources-unsubscribe": "NexusAI does not declare resources.subscribe (its resources are read on demand)",
    "prompts-get-simple": _FIXTURE.format(what="prompt test_simple_prompt"),
    "prompts-get-with-args": _FIXTURE.format(what="prompt test_prompt_with_arguments"),
    "prompts-get-embedded-resource": _FIXTURE.format(what="prompt test_prompt_with_embedded_resource"),
    "prompts-get-with-image": _FIXTURE.format(what="prompt test_prompt_with_image"),
}
# HTTP transport features: through the stdio bridge they would test the bridge, not `nexus mcp --ifc`.
HTTP_ONLY = {"server-sse-multiple-streams", "dns-rebinding-protection"}


def _node(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    assert NODE.exists() and SUITE.exists(), (
        f"{NODE} or {SUITE} is missing: scripts/test installs Node 22 and the conformance suite into .cache/conformance")
    return subprocess.run([str(NODE), str(SUITE), *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)


@functools.cache
def all_scenarios() -> tuple[str, ...]:
    """Every server scenario of the installed suite (active and pending)."""
    listed = _node("list", "--server", timeout=60)
    assert listed.returncode == 0, listed.stderr
    return tuple(re.findall(r"^\s*- ([\w-]+)", listed.stdout.split("Client scenarios")[0], re.MULTILINE))


def applicable(transport: str) -> list[str]:
    return [name for name in all_scenarios()
            if name not in NOT_APPLICABLE and (transport == "http" or name not in HTTP_ONLY)]


def _judged(scenario: str, checks: list[dict]) -> None:
    bad = [c for c in checks if c["status"] in ("FAILURE", "WARNING")]
    assert not bad, f"{scenario}: {json.dumps(bad, indent=1)[:3000]}"
    assert any(c["status"] == "SUCCESS" for c in checks), f"{scenario}: no check passed"


def _checks(out: Path) -> dict[str, list[dict]]:
    """Each scenario's checks from the suite's output folder (`server-<scenario>-<time>/checks.json`)."""
    found: dict[str, list[dict]] = {}
    for path in sorted(out.glob("server-*/checks.json")):
        found[re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", path.parent.name)] = json.loads(path.read_text())
    return found


def run_suite(url: str, scenarios: list[str], out: Path) -> dict[str, list[dict]]:
    """The whole suite in one run of the CLI (the scenarios that do not apply fail there, and are not judged)."""
    done = _node("server", "--url", url, "--suite", "all", "-o", str(out), timeout=900)
    found = _checks(out)
    missing = set(scenarios) - set(found)
    assert not missing, f"not run: {missing}\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
    for scenario in scenarios:
        _judged(scenario, found[scenario])
    return {s: found[s] for s in scenarios}


def run_scenarios(bridge: StdioBridge, scenarios: list[str], out: Path) -> dict[str, list[dict]]:
    """One run of the CLI per scenario (each starts one stdio server process behind the bridge, stopped when the
    CLI has exited: it leaves without DELETE)."""
    for n, scenario in enumerate(scenarios):
        bridge.spares = n < len(scenarios) - 1
        done = _node("server", "--url", bridge.url, "--scenario", scenario, "-o", str(out))
        bridge.end_sessions()
        assert scenario in _checks(out), f"{scenario}: no checks written\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        _judged(scenario, _checks(out)[scenario])
        assert done.returncode == 0, f"{scenario}: exit {done.returncode}\n{done.stdout[-2000:]}"
    return {s: _checks(out)[s] for s in scenarios}


@pytest.fixture(scope="module")
def sample_ifc(tmp_path_factory) -> Path:
    from ifc_host.sample import write_sample_model

    path = tmp_path_factory.mktemp("mcp_conformance") / "sample.ifc"
    write_sample_model(str(path), storeys=1)
    return path


@pytest.fixture
def http_endpoint(tmp_path, sample_ifc) -> Iterator[str]:
    """The deployment's endpoint with an IFC host of alice's, behind the token-adding proxy."""
    with running_server(tmp_path) as server:
        endpoint = start_mcp_http(server.state, chat_url=server.url)
        host = start_ifc_host(str(sample_ifc), server.url, server.state.store.create_token("alice", scope="host"),
                              str(tmp_path / "out.ifc"))
        proxy = None
        try:
            server.wait_for_host("alice", timeout=90)
            proxy = BearerProxy(endpoint.url, server.token("alice"))
            yield proxy.url
        finally:
            if proxy is not None:
                proxy.close()
            host.stop()
            endpoint.shutdown()


def test_every_scenario_of_the_suite_is_either_run_or_listed_as_not_applicable():
    scenarios = set(all_scenarios())
    assert scenarios >= set(NOT_APPLICABLE) | HTTP_ONLY, set(NOT_APPLICABLE) - scenarios
    assert len(applicable("http")) >= 9, applicable("http")  # initialize, ping, logging, completion, lists, ...


def test_the_http_endpoint_passes_every_applicable_scenario(http_endpoint, tmp_path):
    scenarios = applicable("http")
    checks = run_suite(http_endpoint, scenarios, tmp_path / "results")
    assert set(checks) == set(scenarios) and {"server-initialize", "dns-rebinding-protection"} <= set(checks)


def test_nexus_mcp_ifc_over_stdio_passes_every_applicable_scenario(sample_ifc, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    bridge = StdioBridge([sys.executable, "-m", "cloud.cli", "mcp", "--ifc", str(sample_ifc), "--out",
                          str(tmp_path / "out.ifc"), "--db", str(tmp_path / "db.sqlite")], env=env, cwd=str(ROOT))
    try:
        scenarios = applicable("stdio")
        checks = run_scenarios(bridge, scenarios, tmp_path / "results")
        assert set(checks) == set(scenarios) and "server-initialize" in checks
        assert bridge.ended >= len(scenarios), f"{bridge.ended} nexus mcp --ifc sessions for {len(scenarios)} scenarios"
    finally:
        bridge.close()
