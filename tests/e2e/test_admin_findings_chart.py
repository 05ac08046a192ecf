"""The admin console charts findings per model over time, in a real browser: a rule set run on demand on a real
IFC host records its findings for the model, beside runs of earlier days (another model's batch runs, an earlier
day's runs of the same check, of which the last counts); the chart stacks each day's findings by model, a severity
can be picked, and the check runs are listed."""
from __future__ import annotations

import time

from cloud.findings_history import record_run
from ifc_host.findings import ElementRef, Finding
from tests.ifc_host.test_ids import FIRE_RATING_IDS
from tests.support.client import write_script
from tests.support.spine import say

DAY_S = 86400.0


def _found(severity: str, n: int) -> list[Finding]:
    return [Finding("fire", severity, f"finding {i}", elements=(ElementRef(f"g{i}", "IfcDoor", None, "x"),))
            for i in range(n)]


def test_findings_per_model_are_charted_over_time(server, alice, building_host, scripts_dir, browser):
    host_id, model_path = building_host
    sid = alice.new_session(host_id, write_script(scripts_dir / "idle.json", [say("ok")]))
    rules = {"name": "fire", "checks": [{"check": "ids", "severity": "warning", "ids_xml": FIRE_RATING_IDS}]}
    done = alice.call("POST", f"/api/sessions/{sid}/check", json={"rules": rules}, timeout=300)
    assert done.status_code == 200, done.text
    today_warnings = len(done.json()["findings"])
    assert today_warnings == 4  # the four doors without a fire rating, as in the API test

    store = server.state.store
    now = time.time()
    # two days ago the same check ran twice on the same model: the later run (5 errors) is that day's figure
    record_run(store.finding_runs, model=model_path.name, source="check", check_name="fire", findings=_found("error", 9),
               user_name="alice", ts=now - 2 * DAY_S - 60)
    record_run(store.finding_runs, model=model_path.name, source="check", check_name="fire", findings=_found("error", 5),
               user_name="alice", ts=now - 2 * DAY_S)
    record_run(store.finding_runs, model="mep/MEP.ifc", source="batch", check_name="clash", findings=_found("error", 3),
               ts=now - DAY_S)

    page = browser.page
    browser.sign_in(server.url, server.token("root", admin=True), path="/admin#tab=findings")
    page.wait_for_selector("body[data-ready='1']")
    chart = page.locator("#chart-findings")
    chart.locator("svg rect").first.wait_for()
    bars = sorted(chart.locator("rect").evaluate_all("rs => rs.map(r => r.dataset.day + ' ' + r.dataset.series)"))
    days = [time.strftime("%Y-%m-%d", time.gmtime(now - d * DAY_S)) for d in (2, 1, 0)]
    assert bars == sorted([f"{days[0]} {model_path.name}", f"{days[1]} mep/MEP.ifc", f"{days[2]} {model_path.name}"])
    legend = chart.locator(".chart-legend").text_content()
    assert f"{model_path.name} · {5 + today_warnings}" in legend and "mep/MEP.ifc · 3" in legend
    runs = page.locator("#finding-runs tbody tr")
    assert runs.count() == 4
    assert "fire" in runs.first.text_content() and "check · alice" in runs.first.text_content()
    page.select_option("#findings-metric", "errors")
    page.wait_for_function(
        f"() => document.querySelector('#chart-findings .chart-legend').textContent.includes('{model_path.name} · 5')")
    assert chart.locator("rect").count() == 2  # today's run found warnings only
    page.select_option("#findings-metric", "all")
    page.wait_for_function(
        "() => document.querySelector('#chart-findings .chart-legend').textContent.includes('mep/MEP.ifc · 3')")
    page.evaluate("() => document.querySelector('#chart-findings').scrollIntoView()")
    browser.screenshot("admin-findings-chart.png")
    assert browser.dialogs == []
