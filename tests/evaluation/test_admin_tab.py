"""The admin console's Evaluations tab: reports of `nexus eval` under the folder the server is configured with."""
from __future__ import annotations

from cloud.evaluation.report import write_report
from cloud.evaluation.runner import run_all, summarise
from cloud.evaluation.tasks import load_suite
from tests.evaluation.test_harness import COUNT_DOORS
from tests.support.client import Client
from tests.support.spine import say


def _report(make_suite, folder):
    make_suite.task("right", COUNT_DOORS, [say("10 doors.")], policy="readonly")
    make_suite.task("wrong", COUNT_DOORS, [say("12 doors.")], policy="readonly")
    suite = load_suite(make_suite.root)
    results = run_all(suite.tasks, [make_suite.scripted], parallel=2)
    write_report(folder / "nightly", suite, results, summarise(results))


def test_admins_see_evaluation_reports_and_their_task_runs(server, browser, make_suite, tmp_path, monkeypatch):
    results = tmp_path / "results"
    _report(make_suite, results)
    monkeypatch.setenv("NEXUS_EVAL_RESULTS", str(results))
    alice = Client(server.url, server.token("alice"))
    assert alice.call("GET", "/api/admin/evaluations").status_code == 403
    admin = Client(server.url, server.token("root", admin=True))
    body = admin.call("GET", "/api/admin/evaluations").json()
    assert body["configured"] is True and [e["name"] for e in body["evaluations"]] == ["nightly"]
    assert body["evaluations"][0]["summary"]["passed"] == 1

    page = browser.page
    browser.sign_in(server.url, server.token("root", admin=True), path="/admin#tab=evaluations")
    page.wait_for_selector("body[data-ready='1']")
    row = page.locator("#evaluations-table tbody tr").first
    row.wait_for()
    assert "nightly" in row.inner_text() and "50.0%" in row.inner_text()
    runs = page.locator("#evaluation-runs tbody tr")
    runs.first.wait_for()
    assert runs.count() == 2
    assert "PASS" in runs.nth(0).inner_text() and "FAIL" in runs.nth(1).inner_text()
    browser.screenshot("admin-evaluations.png")


def test_without_a_results_folder_the_tab_says_how_to_configure_it(server, monkeypatch):
    monkeypatch.delenv("NEXUS_EVAL_RESULTS", raising=False)
    admin = Client(server.url, server.token("root", admin=True))
    body = admin.call("GET", "/api/admin/evaluations").json()
    assert body == {"configured": False, "setting": "NEXUS_EVAL_RESULTS", "evaluations": []}
