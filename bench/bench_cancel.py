"""Cancel soak benchmark (issue 22; run by hand; prints figures).

    python bench/bench_cancel.py [--cancels 50] [--isolation fork|spawn] [--storeys 1]

A real orchestrator (HTTP on loopback) and a real IFC host process on the sample building. Each round starts
a chat run through the API whose automation sleeps 20 s and then renames every door, waits a random moment
(0.2 to 3 s after the script reached the host), cancels it (POST /api/sessions/{id}/cancel), and then asks
the host for the next call from another session (a collect that counts the doors). Checked every round:
the cancelled run's tool result says "cancelled while running: rolled back" (or, when the cancel came while
the script's process was still loading the model, "cancelled before it ran"), the next call is served (not
refused as busy) within 2 s of the cancel, and at the end the model file is byte-identical. Under spawn
every call after an automation waits for a fresh process to load the model (the plain call's floor below).

Printed side by side, p50/p99 in ms:
cancel -> idle       from the cancel POST until GET /api/hosts shows the host idle
cancel -> next call  from the cancel POST until the next call's result (the time to a free host)
plain next call      the same collect on an idle host, no cancel before it (the floor)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import requests

SLEEP_THEN_RENAME = ("import time\ntime.sleep(20)\n"
                     "for door in model.by_type('IfcDoor'):\n    door.Name = 'Cancelled rename'\n")
COUNT_DOORS = "print(len(model.by_type('IfcDoor')))"
FREE_WITHIN_S = 2.0
# What a cancelled call's result may truthfully say: the script was killed, or (spawn: its process was still
# loading the model) it never started.
OUTCOMES = {"killed while running": "cancelled while running: rolled back",
            "refused before it ran": "cancelled before it ran"}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class Api:
    def __init__(self, url: str, token: str) -> None:
        self.url, self.headers = url, {"Authorization": f"Bearer {token}"}

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(method, self.url + path, headers=self.headers, timeout=120, **kwargs)

    def session(self, host_id: str, model: str) -> str:
        response = self.call("POST", "/api/sessions", json={"host_id": host_id, "model": model})
        response.raise_for_status()
        return response.json()["session_id"]

    def run(self, session_id: str, text: str, on_chunk: Any = None) -> list[dict[str, Any]]:
        """Stream one run to its end; its chunks."""
        chunks, kind = [], None
        with self.call("POST", f"/api/sessions/{session_id}/messages", json={"text": text}, stream=True) as response:
            response.raise_for_status()
            for line in response.iter_lines(decode_unicode=True):
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: ") and kind:
                    chunk = json.loads(line[6:])
                    chunks.append(chunk)
                    if on_chunk is not None:
                        on_chunk(chunk)
        return chunks

    def activity(self, host_id: str) -> str:
        hosts = self.call("GET", "/api/hosts").json()["hosts"]
        return next(h["activity"]["state"] for h in hosts if h["host_id"] == host_id)


def script(folder: Path, name: str, turns: list[list[dict[str, Any]]]) -> str:
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


def tool(name: str, code: str) -> list[dict[str, Any]]:
    return [{"tool_call": {"name": name, "input": {"code": code}}}]


def tool_result(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    return next(c for c in chunks if c["type"] == "Metadata" and c["metadata"].get("kind") == "tool_result")


def stream_into(api: Api, session_id: str, chunks: list[dict[str, Any]], at_host: threading.Event) -> None:
    """Stream the slow run into `chunks`; `at_host` is set once its tool call has streamed."""
    chunks.extend(api.run(session_id, "rename the doors slowly",
                          lambda chunk: chunk["type"] == "ToolCall" and at_host.set()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cancels", type=int, default=50)
    parser.add_argument("--isolation", choices=("fork", "spawn"), default=None)
    parser.add_argument("--storeys", type=int, default=1)
    parser.add_argument("--seed", type=int, default=22)
    args = parser.parse_args()
    random.seed(args.seed)

    tmp = Path(tempfile.mkdtemp(prefix="bench_cancel_"))
    scripts = tmp / "scripts"
    scripts.mkdir()
    os.environ["NEXUS_SCRIPTED_DIRS"] = str(scripts)

    from cloud.child_host import start_ifc_host
    from cloud.config import Settings
    from cloud.server import start_server
    from cloud.store import Store
    from cloud.web.app import create_app
    from ifc_host.sample import write_sample_model

    model = tmp / "sample.ifc"
    write_sample_model(str(model), storeys=args.storeys)
    before = hashlib.sha256(model.read_bytes()).hexdigest()
    store = Store(tmp / "nexus.db")
    app = create_app(store, Settings(tool_timeout_s=120.0, script_timeout_s=60.0))
    state = app.extensions["nexus"]
    http = start_server(app)
    host = start_ifc_host(str(model), http.url, store.create_token("bench", scope="host"), None, args.isolation)
    slow = script(scripts, "slow", [tool("execute_task_automation", SLEEP_THEN_RENAME), [{"text": "never"}]])
    count = script(scripts, "count", [tool("execute_data_collection", COUNT_DOORS), [{"text": "counted"}]])
    api = Api(http.url, store.create_token("bench"))
    to_idle: list[float] = []
    to_next: list[float] = []
    plain: list[float] = []
    failures: list[str] = []
    outcomes = dict.fromkeys(OUTCOMES, 0)
    try:
        deadline = time.monotonic() + 120
        while not state.hosts.for_user("bench") and time.monotonic() < deadline:
            time.sleep(0.05)
        host_id = state.hosts.for_user("bench")[0].host_id

        def next_call() -> tuple[float, dict[str, Any]]:
            started = time.monotonic()
            result = tool_result(api.run(api.session(host_id, count), "count the doors"))
            return time.monotonic() - started, result

        for _ in range(3):  # warm-up: the first calls import and fork what later ones reuse
            next_call()
        for n in range(args.cancels):
            took, result = next_call()
            plain.append(took)
            session_id = api.session(host_id, slow)
            at_host = threading.Event()
            chunks: list[dict[str, Any]] = []
            runner = threading.Thread(target=stream_into, args=(api, session_id, chunks, at_host), daemon=True)
            runner.start()
            at_host.wait(60)
            while api.activity(host_id) != "busy":
                time.sleep(0.01)
            time.sleep(random.uniform(0.2, 3.0))
            cancelled_at = time.monotonic()
            api.call("POST", f"/api/sessions/{session_id}/cancel").raise_for_status()
            while api.activity(host_id) != "idle" and time.monotonic() - cancelled_at < 30:
                time.sleep(0.005)
            to_idle.append(time.monotonic() - cancelled_at)
            _, result = next_call()
            to_next.append(time.monotonic() - cancelled_at)
            runner.join(30)
            cancelled = tool_result(chunks) if chunks else {"content": "(no tool result)"}
            said = next((kind for kind, words in OUTCOMES.items() if words in cancelled["content"]), None)
            if said is None:
                failures.append(f"round {n}: the cancelled call's result says {cancelled['content'][:200]!r}")
            else:
                outcomes[said] += 1
            if not result["metadata"].get("ok"):
                failures.append(f"round {n}: the next call failed: {result['content'][:200]!r}")
            if to_next[-1] > FREE_WITHIN_S:
                failures.append(f"round {n}: the next call was served {to_next[-1]:.2f} s after the cancel")
    finally:
        host.stop()
        http.shutdown()
        state.runs.close()
    after = hashlib.sha256(model.read_bytes()).hexdigest()
    if after != before:
        failures.append("the model file changed")

    print(f"{args.cancels} cancels at random moments during a 20 s automation on the sample building "
          f"({args.storeys} storeys, isolation {args.isolation or 'default'}); file byte-identical: {after == before}")
    print(f"{'':22}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for name, values in (("cancel -> idle", to_idle), ("cancel -> next call", to_next), ("plain next call", plain)):
        print(f"{name:22}{percentile(values, 0.5) * 1e3:10.0f}{percentile(values, 0.99) * 1e3:10.0f}"
              f"{max(values) * 1e3:10.0f}")
    print("cancelled calls: " + ", ".join(f"{count} {kind}" for kind, count in outcomes.items()))
    print(f"next call within {FREE_WITHIN_S:g} s of the cancel: {sum(t <= FREE_WITHIN_S for t in to_next)}"
          f"/{len(to_next)}")
    for failure in failures:
        print("FAIL", failure)


if __name__ == "__main__":
    main()
