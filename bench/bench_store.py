"""Store throughput on SQLite and PostgreSQL (run by hand from the repository root; prints figures).

    python bench/bench_store.py --threads 8 --appends 200 --reads 200

append  transcript entries appended by `--threads` threads at once, each to its own session, one entry per
        transaction (as a run writes them): entries per second and the p99 of one append.
read    a session read as the chat page does it (the session row and its whole transcript of 40 entries),
        by the same threads: reads per second and the p99 of one read.
PostgreSQL is a throwaway server started here (Debian's binaries, fsync off: the figure is the store's,
not the disk's); SQLite is a file in a temporary folder (WAL, synchronous=NORMAL, as served).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cloud.store import Store  # noqa: E402
from tests.scale.servers import fresh_database, postgres_server  # noqa: E402

ENTRY = {"role": "assistant", "content": [{"type": "text", "text": "x" * 400}]}


def _parallel(threads: int, each: int, work: Callable[[int, int], None]) -> tuple[float, list[float]]:
    timings: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(threads)

    def run(t: int) -> None:
        mine = []
        barrier.wait()
        for i in range(each):
            started = time.perf_counter()
            work(t, i)
            mine.append((time.perf_counter() - started) * 1000)
        with lock:
            timings.extend(mine)

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    started = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.perf_counter() - started, timings


def measure(label: str, store: Store, args: argparse.Namespace) -> None:
    sessions = [store.sessions.create_session("bench", None, "scripted:x", {}) for _ in range(args.threads)]
    elapsed, timings = _parallel(args.threads, args.appends, lambda t, i: store.sessions.append_entries(sessions[t], [ENTRY]))
    p99 = sorted(timings)[int(0.99 * (len(timings) - 1))]
    print(f"  {label:10s} append: {len(timings) / elapsed:8.0f} entries/s   p50 {statistics.median(timings):6.2f} ms"
          f"   p99 {p99:6.2f} ms")
    readable = [store.sessions.create_session("bench", None, "scripted:x", {}) for _ in range(args.threads)]
    for session_id in readable:
        store.sessions.append_entries(session_id, [ENTRY] * 40)

    def read(t: int, i: int) -> None:
        store.sessions.get_session(readable[t])
        store.sessions.transcript(readable[t])

    elapsed, timings = _parallel(args.threads, args.reads, read)
    p99 = sorted(timings)[int(0.99 * (len(timings) - 1))]
    print(f"  {label:10s} read:   {len(timings) / elapsed:8.0f} reads/s     p50 {statistics.median(timings):6.2f} ms"
          f"   p99 {p99:6.2f} ms")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--appends", type=int, default=200)
    parser.add_argument("--reads", type=int, default=200)
    args = parser.parse_args(argv)
    print(f"store throughput, {args.threads} threads")
    with tempfile.TemporaryDirectory() as tmp:
        measure("SQLite", Store(Path(tmp) / "bench.db"), args)
    with postgres_server() as url:
        store = Store(fresh_database(url))
        measure("PostgreSQL", store, args)
        store.close()


if __name__ == "__main__":
    main()
