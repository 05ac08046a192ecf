"""The store's transactions on the driver connection: a write inside a write joins it (all or nothing), and a
tool call's state and the person's copy of its result land in one commit, before the person is shown it."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from cloud.assembly import run_session
from cloud.config import Settings
from cloud.store import Store
from tests.support.local_host import local_link
from tests.support.memory_model import MemoryModel
from tests.support.spine import automate, collect, say


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "nexus.db")


def _traced(store: Store) -> list[str]:
    """Every statement the store's connections run from now on, in order (SQLite's trace callback)."""
    statements: list[str] = []
    lock = threading.Lock()

    def trace(sql: str) -> None:
        with lock:
            statements.append(sql)

    event.listen(store.engine, "checkout", lambda dbapi_conn, *_: dbapi_conn.set_trace_callback(trace))
    store.db.return_ready()  # so that every connection used from now on is checked out (and traced)
    return statements


def _transactions(statements: list[str]) -> list[list[str]]:
    """The write transactions among `statements`: the statements between each BEGIN IMMEDIATE and its COMMIT."""
    found: list[list[str]] = []
    current: list[str] | None = None
    for sql in statements:
        if sql.startswith("BEGIN IMMEDIATE"):
            current = []
        elif sql.startswith("COMMIT") and current is not None:
            found.append(current)
            current = None
        elif current is not None:
            current.append(sql)
    return found


def test_a_write_inside_a_write_joins_it_and_fails_with_it_but_not_one_on_another_thread(store):
    session_id = store.sessions.create_session("alice", None, None, {})
    with pytest.raises(RuntimeError, match="after both writes"):
        with store.db.write():
            store.sessions.update_session(session_id, status="running")
            store.results.save_result(session_id, "call_1", {"text": "shown"})
            worker = threading.Thread(target=lambda: store.results.save_result(session_id, "call_2", {"t": 1}))
            worker.start()
            worker.join(0.2)  # SQLite: it waits for this transaction's lock, then commits on its own
            raise RuntimeError("after both writes")
    worker.join(30)
    assert store.sessions.get_session(session_id)["status"] != "running"
    assert store.results.get_result(session_id, "call_1") is None
    assert store.results.get_result(session_id, "call_2") == {"t": 1}
    with store.db.write():
        store.sessions.update_session(session_id, status="running")
        store.results.save_result(session_id, "call_1", {"text": "shown"})
    assert store.sessions.get_session(session_id)["status"] == "running"
    assert store.results.get_result(session_id, "call_1") == {"text": "shown"}


@pytest.mark.parametrize("turn", [collect("print(len(doc.by_class('Door')))"),
                                  automate("doc.elements[doc.by_class('Door')[0]]['name'] = 'D1'\nprint('ok')")])
def test_a_tool_calls_state_and_the_persons_copy_are_one_commit(store, turn: list[dict[str, Any]]):
    link, _host = local_link()
    row = store.sessions.get_session(store.sessions.create_session("alice", "h_local", "scripted:memory", {}))
    statements = _traced(store)
    produced = list(run_session(store, Settings(tool_timeout_s=30.0), MemoryModel([turn, say("done")]), link, row,
                                "go", threading.Event()))
    assert produced[-1].type == "Complete"
    with_result = [t for t in _transactions(statements) if any(s.startswith("INSERT INTO results") for s in t)]
    assert len(with_result) == 1
    assert any(s.startswith("UPDATE sessions SET state") for s in with_result[0])
    assert store.results.get_result(row["id"], produced[[c.type for c in produced].index("ToolCall")]
                                    .metadata["tool_call_id"]) is not None
