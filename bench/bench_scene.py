"""Benchmark: the 3D scene of a ~1,000-element storey (target: at most 2 MB, shown within 1.5 s of the click) and of
the whole sample building (shown within 3 s), beside the floor: the PNG render of the same view.

    python bench/bench_scene.py [--runs 3] [--ifc FILE --view NAME ...] [--save-glb DIR]
    python bench/bench_scene.py --libraries 25000 [--runs 2]     # three.js against xeokit-sdk, generated scene
    python bench/bench_scene.py --libraries-glb FILE [--runs 2]  # the same on a scene --save-glb kept
    python bench/bench_scene.py --held [--runs 5]                # a change held under ask: its scene, again and again

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

import numpy as np  # noqa: E402
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
            target_s: float | None, max_bytes: int | None, token: str, save_dir: Path | None = None) -> None:
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
    if save_dir is not None:
        save_dir.mkdir(parents=True, exist_ok=True)
        (save_dir / f"{model.stem}-{view.replace(' ', '_').replace(':', '')}.glb").write_bytes(response.content)
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


# --- a change held under `ask`: the first scene of the hold and the next ones (the person orbits, closes, reopens) ---

HELD_CHANGE = "for wall in model.by_type('IfcWall')[:20]:\n    wall.Name = 'renamed while held'\n"


def measure_held(runs: int, render_timeout_s: float) -> None:
    """The held change's scene route while the change waits for its decision, on the 1,000-element storey: the
    first request of the hold (after the approval card's image) and `runs` more. Before the hold kept one file,
    every request copied the held model to a new path, which the render server then opened and read anew."""
    import os
    import threading

    from tests.support.client import Client, write_script

    with tempfile.TemporaryDirectory(prefix="bench-scene-held-") as folder:
        work = Path(folder)
        model = work / "storey.ifc"
        write_sample_model(model, storeys=1, scale=24)
        os.environ["NEXUS_SCRIPTED_DIRS"] = str(work)
        spec = write_script(work / "held.json", [
            [{"tool_call": {"name": "execute_task_automation", "input": {"code": HELD_CHANGE}}}], [{"text": "done"}]])
        with running_server(work, tool_timeout_s=300, script_timeout_s=120) as server:
            token = server.token("bench")
            client = Client(server.url, token)
            with connected_host(model, server.url, token, timeout_s=120) as (host, host_id):
                host.runtime.render_timeout_s = render_timeout_s
                session_id = client.new_session(host_id, spec)
                client.call("PUT", f"/api/sessions/{session_id}/policy", json={"policy": "ask"}).raise_for_status()
                times: list[float] = []
                facts: dict[str, object] = {}

                def on_frame(frame: object) -> None:
                    meta = (getattr(frame, "chunk", None) or {}).get("metadata") or {}
                    if meta.get("kind") != "approval_request":
                        return

                    def look_then_decide() -> None:
                        url = f"/api/sessions/{session_id}/results/{meta['tool_call_id']}/scene"
                        try:
                            for _ in range(runs + 1):
                                started = time.perf_counter()
                                response = client.call("GET", url, timeout=600)
                                times.append(time.perf_counter() - started)
                                response.raise_for_status()
                                facts["summary"] = json.loads(response.headers["X-Nexus-Scene"])
                            snapshot = getattr(host.runtime, "held_snapshot", None)
                            facts["writes"] = snapshot.writes if snapshot is not None else "a copy per request"
                        finally:
                            client.call("POST", f"/api/sessions/{session_id}/approval",
                                        json={"tool_call_id": meta["tool_call_id"], "decision": "discard"})
                    threading.Thread(target=look_then_decide, daemon=True).start()

                client.run(session_id, "go", on_frame=on_frame)
        if len(times) != runs + 1:
            raise SystemExit(f"held change: {len(times)} of {runs + 1} scenes answered")
        summary = facts["summary"]
        print(f"held change on the 1,000-element storey (sample, scale 24): {summary['nodes']:,} nodes, "  # type: ignore[index]
              f"held {summary.get('held')}; held-model files written: {facts['writes']}")  # type: ignore[union-attr]
        print(f"  first scene of the hold (after the approval image)  {times[0]:6.2f} s")
        print(f"  the next ones (median of {runs})                      {statistics.median(times[1:]):6.2f} s "
              f"(min {min(times[1:]):.2f}, max {max(times[1:]):.2f})")


# --- the library choice (docs/scene.md "Why three.js"): three.js against xeokit-sdk on one large scene ---------

XEOKIT_DIR = Path(__file__).resolve().parents[1] / ".cache" / "npm-bench" / "node_modules" / "@xeokit" / "xeokit-sdk"
LIBRARY_PAGES = {
    "three.js 0.187 (GLTFLoader)": """<!doctype html><html><body style="margin:0"><canvas id="c" width="1000" height="800"></canvas>
<script type="importmap">{"imports": {"three": "/three/build/three.module.js", "three/addons/": "/three/examples/jsm/"}}</script>
<script type="module">
import * as THREE from "three";
import { GLTFLoader } from "three/addons/loaders/GLTFLoader.js";
window.load = () => new Promise((resolve, reject) => {
  const started = performance.now();
  const renderer = new THREE.WebGLRenderer({ canvas: document.getElementById("c") });
  const scene = new THREE.Scene();
  scene.add(new THREE.HemisphereLight(0xffffff, 0x888888, 2));
  new GLTFLoader().load("/scene.glb", (gltf) => {
    scene.add(gltf.scene);
    const box = new THREE.Box3().setFromObject(gltf.scene), centre = box.getCenter(new THREE.Vector3());
    const camera = new THREE.PerspectiveCamera(45, 1.25, 0.1, 1e5);
    camera.position.copy(centre).add(new THREE.Vector3(1, 1, 1).multiplyScalar(box.getSize(new THREE.Vector3()).length()));
    camera.lookAt(centre);
    renderer.render(scene, camera);
    renderer.getContext().readPixels(0, 0, 1, 1, 0x1908, 0x1401, new Uint8Array(4));  // the frame is done
    let objects = 0; gltf.scene.traverse(() => objects++);
    window.keep = [renderer, scene, gltf];
    resolve({ shown_ms: performance.now() - started, objects });
  }, undefined, (e) => reject(String(e)));
});
window.ready = true;
</script></body></html>""",
    "xeokit-sdk 2.6 (GLTFLoaderPlugin)": """<!doctype html><html><body style="margin:0"><canvas id="c" width="1000" height="800"></canvas>
<script type="module">
import { Viewer, GLTFLoaderPlugin } from "/xeokit/dist/xeokit-sdk.min.es.js";
window.load = () => new Promise((resolve, reject) => {
  const started = performance.now();
  const viewer = new Viewer({ canvasId: "c", transparent: false });
  const model = new GLTFLoaderPlugin(viewer).load({ id: "m", src: "/scene.glb", edges: false });
  model.on("loaded", () => {
    viewer.cameraFlight.jumpTo(model);
    viewer.scene.once("rendered", () => {
      window.keep = [viewer, model];
      resolve({ shown_ms: performance.now() - started, objects: Object.keys(viewer.scene.objects).length });
    });
    viewer.scene.render(true);
  });
  model.on("error", (e) => reject(String(e)));
});
window.ready = true;
</script></body></html>""",
}


def large_scene(elements: int) -> bytes:
    """A scene as the host writes one for a large model: walls and slabs as their own boxes, doors, windows
    and furniture as instances of 30 detailed type meshes (about 600 triangles each), every node with extras."""
    from ifc_host.scene_glb import GlbBuilder, SceneMesh, SceneNode

    rng = np.random.default_rng(7)
    builder = GlbBuilder()
    unit_box = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=float)
    box_faces = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1], [2, 3, 7], [2, 7, 6],
                          [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    types = []
    for t in range(30):  # a lathed profile: 20 rings of 16 segments
        rings, segments = 20, 16
        angle = np.linspace(0, 2 * np.pi, segments, endpoint=False)
        radius = 0.3 + 0.2 * np.sin(np.linspace(0, np.pi * (1 + t % 3), rings))
        verts = np.array([[r * np.cos(a), r * np.sin(a), z * 0.1] for z, r in enumerate(radius) for a in angle])
        faces = [[i * segments + j, i * segments + (j + 1) % segments, (i + 1) * segments + j]
                 for i in range(rings - 1) for j in range(segments)]
        faces += [[i * segments + (j + 1) % segments, (i + 1) * segments + (j + 1) % segments, (i + 1) * segments + j]
                  for i in range(rings - 1) for j in range(segments)]
        types.append(builder.add_mesh(SceneMesh(verts, (((0.4, 0.6, 0.8, 1.0), np.array(faces)),))))
    side = int(np.ceil(np.sqrt(elements)))
    for index in range(elements):
        matrix = np.eye(4)
        matrix[:3, 3] = [(index % side) * 3.0, (index // side) * 3.0, 0.0]
        if index % 5 < 3:  # 60 %: walls and slabs, each its own mesh
            size = rng.uniform([0.2, 2.0, 2.5], [0.3, 6.0, 3.0])
            mesh = builder.add_mesh(SceneMesh(unit_box * size, (((0.9, 0.9, 0.88, 1.0), box_faces),)))
            ifc_class = "IfcWall"
        else:
            mesh, ifc_class = types[index % len(types)], "IfcFurnishingElement"
        builder.add_node(SceneNode(f"{index:022d}", {
            "step_id": index + 1, "ifc_class": ifc_class, "name": f"element {index}", "storey": "Level 1",
            "model": "working", "change": None, "properties": {"Pset_Common.Reference": f"R{index}"}}, mesh, matrix))
    return builder.build(np.zeros(3), {"view": "3D"})


def compare_libraries(elements: int, runs: int, glb_file: Path | None = None) -> None:
    import functools
    import http.server
    import shutil
    import threading

    from cloud.scene_bundle import three_dir

    if not (XEOKIT_DIR / "dist" / "xeokit-sdk.min.es.js").is_file():
        raise SystemExit(f"xeokit-sdk is not installed for the bench: npm install --prefix {XEOKIT_DIR.parents[2]} "
                         "@xeokit/xeokit-sdk (with a package.json there, so npm does not climb to the checkout's)")
    with tempfile.TemporaryDirectory(prefix="bench-libraries-") as folder:
        root = Path(folder)
        started = time.perf_counter()
        glb = glb_file.read_bytes() if glb_file is not None else large_scene(elements)
        (root / "scene.glb").write_bytes(glb)
        print(f"scene {glb_file.name}: {len(glb) / 1e6:.1f} MB GLB" if glb_file is not None else
              f"generated scene: {elements:,} elements, {len(glb) / 1e6:.1f} MB GLB in {time.perf_counter() - started:.1f} s")
        (root / "three").symlink_to(three_dir())
        (root / "xeokit").symlink_to(XEOKIT_DIR)
        for number, page_html in enumerate(LIBRARY_PAGES.values()):
            (root / f"page{number}.html").write_text(page_html, encoding="utf-8")
        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

        handler = functools.partial(Quiet, directory=str(root))
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{httpd.server_address[1]}"
        rows = []
        with sync_api.sync_playwright() as driver:
            for number, label in enumerate(LIBRARY_PAGES):
                shown, heaps = [], []
                for _ in range(runs):  # a fresh browser each run: no warm caches, one library's heap only
                    browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS + [
                        "--js-flags=--expose-gc", "--enable-precise-memory-info"])
                    page = browser.new_page(viewport={"width": 1000, "height": 800})
                    page.goto(f"{base}/page{number}.html")
                    page.wait_for_function("window.ready === true", timeout=120_000)
                    result = page.evaluate("async () => { const r = await window.load(); gc(); "
                                           "return { ...r, heap: performance.memory.usedJSHeapSize }; }")
                    shown.append(result["shown_ms"] / 1000)
                    heaps.append(result["heap"] / 1e6)
                    browser.close()
                rows.append((label, statistics.median(shown), statistics.median(heaps), result["objects"]))
        httpd.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    print(f"{'library':38} {'loaded and drawn':>17} {'JS heap after GC':>17} {'objects':>9}")
    for label, seconds, heap, objects in rows:
        print(f"{label:38} {seconds:15.2f} s {heap:14.0f} MB {objects:9,}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ifc", type=Path, help="also measure this IFC file (e.g. Revit BasicHouse)")
    parser.add_argument("--view", action="append", default=[], help="views of --ifc to measure (default: 3D)")
    parser.add_argument("--skip-sample", action="store_true", help="measure only --ifc")
    parser.add_argument("--libraries", type=int, metavar="ELEMENTS",
                        help="instead: three.js against xeokit-sdk on a generated scene of this many elements")
    parser.add_argument("--libraries-glb", type=Path, metavar="FILE",
                        help="instead: three.js against xeokit-sdk on this GLB (e.g. one --save-glb wrote)")
    parser.add_argument("--render-timeout-s", type=float, default=60.0,
                        help="the host's render timeout (default 60 s, as the product's; raise it for a big file on a "
                             "loaded machine)")
    parser.add_argument("--save-glb", type=Path, metavar="DIR", help="keep each measured scene's GLB here")
    parser.add_argument("--held", action="store_true",
                        help="instead: the scene of a change held under ask, first and repeated (no browser)")
    args = parser.parse_args()
    if args.held:
        measure_held(args.runs, args.render_timeout_s)
        return 0
    if args.libraries or args.libraries_glb:
        compare_libraries(args.libraries or 0, args.runs, args.libraries_glb)
        return 0
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
                with connected_host(model, server.url, token, timeout_s=120) as (host, host_id):
                    host.runtime.render_timeout_s = args.render_timeout_s  # the scene may take 1.5 times this
                    measure(label, page, server.url, host_id, model, view, args.runs, target, max_bytes, token,
                            args.save_glb)
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
