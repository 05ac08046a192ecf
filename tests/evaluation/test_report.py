"""The report: Markdown and a self-contained HTML page whose charts show in a real browser (Chromium)."""
from __future__ import annotations

from cloud.evaluation.report import write_report
from cloud.evaluation.runner import run_all, summarise
from cloud.evaluation.tasks import load_suite
from tests.evaluation.test_harness import COUNT_DOORS
from tests.support.spine import collect, say


def test_the_html_report_opens_in_chromium_and_shows_its_charts(make_suite, tmp_path, browser):
    make_suite.task("pass", COUNT_DOORS, [collect("print(len(model.by_type('IfcDoor')))"), say("10 doors.")],
                    policy="readonly", tags=["question", "count"])
    make_suite.task("fail", COUNT_DOORS, [say("4 doors.")], policy="readonly", tags=["question"])
    suite = load_suite(make_suite.root)
    results = run_all(suite.tasks, [make_suite.scripted])
    paths = write_report(tmp_path / "out", suite, results, summarise(results))
    page_text = paths["html"].read_text()
    assert "<script" not in page_text and "http://" not in page_text.replace('xmlns="http://www.w3.org/2000/svg"', "")

    page = browser.page
    page.goto(paths["html"].as_uri())
    charts = page.locator("svg.chart")
    assert charts.count() == 5
    names = [charts.nth(i).get_attribute("data-chart") for i in range(5)]
    assert names == ["chart-models", "chart-tags", "chart-cost", "chart-time", "chart-turns"]
    for i in range(5):
        box = charts.nth(i).bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 10
    # the per-model pass rate bar is drawn half as long as the full scale: 1 of 2 passed
    bar = page.locator("svg[data-chart=chart-models] rect").first.bounding_box()
    assert bar is not None and 170 < bar["width"] < 190
    assert page.locator("svg[data-chart=chart-tags] rect").count() == 2  # count, question
    rows = page.locator("table").nth(1).locator("tbody tr")
    assert rows.count() == 2 and rows.nth(0).get_attribute("class") == "fail"
    link = rows.nth(1).locator("a")
    assert link.inner_text() == "pass" and (paths["html"].parent / link.get_attribute("href")).is_file()
    browser.screenshot("eval-report.png")
    markdown = paths["markdown"].read_text()
    assert "| scripted:" in markdown and "[pass](transcripts/" in markdown
