"""Benchmark: the 3D scene of a ~1,000-element storey (target: at most 2 MB, shown within 1.5 s of the click) and of
the whole sample building (shown within 3 s), beside the floor: the PNG render of the same view.

    python bench/bench_scene.py [--runs 3] [--ifc FILE --view NAME ...]

Everything is real: the orchestrator on 127.0.0.1, an IFC host (its render child builds the scene), headless
Chromium (SwiftShader WebGL) running the chat page's viewer module. "Shown" is from the click (openViewer called)
to the first frame drawn with the scene in it: the host building the scene, the GLB over HTTP, three.js parsing
it. The first click of a model content pays the tessellation ("cold"); later ones reuse the host's mesh cache
("warm"), as a second view of the same model does. Needs `npm ci` (three.js) and Debian's Chromium.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright import sync_api  # noqa: E402

from ifc_host.render import render_view  # noqa: E402
from ifc_host.sample import write_sample_model  # noqa: E402
from tests.support.real_ifc import connected_host  # noqa: E402
from tests.support.server import running_server  # noqa: E402

STOREY_TARGET_S, BUILDING_TARGET_S, STOREY_MAX_BYTES = 1.5, 3.0, 2 * 1024 * 1024
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]

OPEN_VIEWER = """async (url) => {
  const box = document.createElement('div'); box.style.width = '900px'; document.body.append(box);
  const started = performance.now();
  const { openViewer } = await import('/static/js/scene_viewer.js');
  const viewer = await openViewer(box, url);
  if (!viewer) return { error: box.textContent };
  await new Promise((resolve) => { const wait = () => Number(box.dataset.frames || 0) > 0 ? resolve() : requestAnimationFrame(wait); wait(); });
  const shown = performance.now() - started;
  const memory = performance.memory ? performance.memory.usedJSHeapSize : null;
  viewer.close(); box.remove();
  return { shown_ms: shown, elements: viewer.elements.length, heap: memory };
}"""


def sign_in(page, url: str, token: str) -> None:
    page.goto(url + "/")
    page.fill("input[name=token]", token)
    with page.expect_navigation():
        page.click("button[type=submit]")
    page.wait_for_selector("body[data-ready='1']", timeout=120_000)


def measure(label: str, page, server_url: str, host_id: str, model: Path, view: str, runs: int,
            target_s: float | None, max_bytes: int | None, token: str) -> None:
    import requests

    url = f"/api/hosts/{host_id}/scene?view={view}"
    started = time.perf_counter()
    response = requests.get(server_url + url, headers={"Authorization": f"Bearer {token}"}, timeout=600)
    build_s = time.perf_counter() - started
    if response.status_code != 200:
        print(f"{label}: no scene after {build_s:.1f} s: HTTP {response.status_code} {response.text.strip()[:300]}")
        return
    summary = json.loads(response.headers["X-Nexus-Scene"])
    size = len(response.content)
    fetched = []
    for _ in range(runs):
        started = time.perf_counter()
        requests.get(server_url + url, headers={"Authorization": f"Bearer {token}"}, timeout=600).raise_for_status()
        fetched.append(time.perf_counter() - started)
    shown = []
    heap = None
    for _ in range(runs):
        result = page.evaluate(OPEN_VIEWER, url)
        if "error" in result:
            raise SystemExit(f"{label}: the viewer said: {result['error']}")
        shown.append(result["shown_ms"] / 1000)
        heap = result["heap"]
    png = []
    for _ in range(runs):
        started = time.perf_counter()
        render_view(str(model), view if view != "3D" else "3D", [], 1568)
        png.append(time.perf_counter() - started)
    verdict = ""
    if target_s is not None:
        verdict = "  ok" if statistics.median(shown) <= target_s else f"  OVER the {target_s:g} s target"
    size_verdict = "" if max_bytes is None else ("  ok" if size <= max_bytes else f"  OVER {max_bytes / 1e6:.1f} MB")
    print(f"{label}: {summary['nodes']:,} nodes, {size / 1e6:.2f} MB GLB{size_verdict}; "
          f"undrawn {summary.get('undrawn', 0)}, left out {summary.get('omitted_for_size', 0)} (size) "
          f"+ {summary.get('omitted_for_time', 0)} (time)")
    print(f"  scene, cold (host tessellates, builds, sends)     {build_s:6.2f} s")
    print(f"  scene over HTTP alone, warm (median of {runs})       {statistics.median(fetched):6.2f} s")
    print(f"  shown after the click, warm (median of {runs})        {statistics.median(shown):6.2f} s "
          f"(min {min(shown):.2f}, max {max(shown):.2f}){verdict}")
    print(f"  floor: PNG render of the same view (median of {runs})  {statistics.median(png):6.2f} s")
    if heap:
        print(f"  JS heap after loading                              {heap / 1e6:6.1f} MB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ifc", type=Path, help="also measure this IFC file (e.g. Revit BasicHouse)")
    parser.add_argument("--view", action="append", default=[], help="views of --ifc to measure (default: 3D)")
    parser.add_argument("--skip-sample", action="store_true", help="measure only --ifc")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-scene-") as folder:
        work = Path(folder)
        storey_model = work / "storey.ifc"
        write_sample_model(storey_model, storeys=1, scale=24)
        building_model = work / "building.ifc"
        write_sample_model(building_model)
        cases = [("1,000-element storey (sample, scale 24)", storey_model, "Level 1", STOREY_TARGET_S, STOREY_MAX_BYTES),
                 ("whole sample building (3 storeys)", building_model, "3D", BUILDING_TARGET_S, None)]
        if args.skip_sample:
            cases = []
        for view in args.view or (["3D"] if args.ifc else []):
            cases.append((f"{args.ifc.name} {view}", args.ifc, view, None, None))
        with running_server(work) as server, sync_api.sync_playwright() as driver:
            token = server.token("bench")
            browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1000, "height": 800})
            sign_in(page, server.url, token)
            for label, model, view, target, max_bytes in cases:
                with connected_host(model, server.url, token, timeout_s=120) as (_, host_id):
                    measure(label, page, server.url, host_id, model, view, args.runs, target, max_bytes, token)
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
