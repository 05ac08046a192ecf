"""The store on SQLite and on PostgreSQL (a throwaway server from Debian's packages): hashed tokens,
transcripts written under concurrency, audit and usage, run leases. Every test taking `store` runs on both."""
from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy import event

from cloud import migrations, schema_revision
from cloud.store import Store, hash_token
from cloud.store.schema import metadata
from tests.scale.servers import fresh_database, postgres_server


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path) -> Iterator[Store]:
    if request.param == "sqlite":
        opened = Store(tmp_path / "store.db")
    else:
        opened = Store(fresh_database(request.getfixturevalue("postgres")))
    yield opened
    opened.close()


@pytest.fixture
def sqlite_store(tmp_path) -> Store:
    return Store(tmp_path / "store.db")


def test_tokens_are_stored_hashed_and_only_their_hash_is_on_disk(sqlite_store, tmp_path):
    store = sqlite_store
    token = store.create_token("alice")
    assert token.startswith("nx_") and len(token) > 40
    assert store.user_for_token(token).name == "alice"
    assert store.user_for_token(token + "x") is None
    rows = sqlite3.connect(tmp_path / "store.db").execute("SELECT token_hash FROM tokens").fetchall()
    assert rows == [(hash_token(token),)] and hash_token(token) == hashlib.sha256(token.encode()).hexdigest()
    on_disk = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert token.encode() not in on_disk


def test_tokens_are_unique_revocable_and_admin_belongs_to_the_token(store):
    first, second = store.create_token("bob"), store.create_token("bob", admin=True)
    assert first != second
    assert not store.user_for_token(first).is_admin  # an admin token elsewhere promotes nothing
    assert store.user_for_token(second).is_admin and store.get_user("bob").is_admin
    (row, admin_row) = [t for t in store.list_tokens() if t["user_name"] == "bob"]
    assert store.set_token_admin(admin_row["id"], False) and not store.user_for_token(second).is_admin
    assert not store.get_user("bob").is_admin
    assert store.revoke_token(row["id"]) is True and store.revoke_token(row["id"]) is False
    assert store.user_for_token(first) is None and store.user_for_token(second) is not None


def test_a_database_from_before_token_rights_keeps_its_admins_admin(tmp_path):
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE users (name TEXT PRIMARY KEY, is_admin INTEGER NOT NULL DEFAULT 0, policy TEXT NOT NULL "
        "DEFAULT 'auto', created REAL NOT NULL);"
        "CREATE TABLE tokens (id TEXT PRIMARY KEY, token_hash TEXT UNIQUE NOT NULL, user_name TEXT NOT NULL, "
        "created REAL NOT NULL, revoked REAL);"
        "INSERT INTO users VALUES ('root', 1, 'auto', 0), ('bob', 0, 'auto', 0);")
    old.execute("INSERT INTO tokens VALUES ('t1', ?, 'root', 0, NULL)", (hash_token("nx_root"),))
    old.execute("INSERT INTO tokens VALUES ('t2', ?, 'bob', 0, NULL)", (hash_token("nx_bob"),))
    old.commit()
    old.close()
    store = Store(path)
    assert store.user_for_token("nx_root").is_admin and not store.user_for_token("nx_bob").is_admin
    assert store.user_for_token("nx_bob").scope == "user"


def test_web_sessions_expire_end_at_sign_out_and_with_their_token(store):
    token = store.create_token("alice")
    token_id = store.user_for_token(token).token_id
    first, second, short = (store.create_web_session(token_id, 3600), store.create_web_session(token_id, 3600),
                            store.create_web_session(token_id, 0.05))
    assert store.user_for_web_session(first).name == "alice" and token not in first
    time.sleep(0.1)
    assert store.user_for_web_session(short) is None
    store.end_web_session(first)
    assert store.user_for_web_session(first) is None and store.user_for_web_session(second) is not None
    store.revoke_token(token_id)
    assert store.user_for_web_session(second) is None


def test_a_sign_in_code_works_once(store):
    token = store.create_token("demo")
    code = store.create_signin_code(token)
    assert token not in code
    assert store.redeem_signin_code(code) == store.user_for_token(token).token_id
    assert store.redeem_signin_code(code) is None and store.redeem_signin_code("sc_made_up") is None


def test_host_ownership_is_kept_in_the_database(store, tmp_path):
    assert store.claim_host("h_1", "alice") and store.claim_host("h_1", "alice")
    assert not store.claim_host("h_1", "bob")
    assert Store(store.path).host_owner("h_1") == "alice"


def _at_once(threads: int, work) -> list[BaseException]:
    """Run work(0) .. work(threads - 1) on as many threads, released together; what they raised."""
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def run(n: int) -> None:
        try:
            start.wait()
            work(n)
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return errors


def test_entries_appended_together_stay_together_and_in_order_under_concurrent_appends(store):
    # On PostgreSQL an append is one statement numbering from the last entry; of two racing for the same numbers
    # the loser numbers again, whole: a batch is never split, reordered or half written.
    session_id = store.create_session("alice", None, "scripted:x", {})
    threads, per_thread = 6, 15

    def write(n: int) -> None:
        for k in range(per_thread):
            store.append_entries(session_id, [{"role": "assistant", "content": [f"{n}:{k}:{part}"]}
                                              for part in range(3)])

    assert _at_once(threads, write) == []
    texts = [e["content"][0] for e in store.transcript(session_id)]
    assert len(texts) == threads * per_thread * 3 == len(set(texts))
    batches = [texts[i:i + 3] for i in range(0, len(texts), 3)]
    assert all(len({t.rsplit(":", 1)[0] for t in b}) == 1 and [t.rsplit(":", 1)[1] for t in b] == ["0", "1", "2"]
               for b in batches)
    seqs = [r["seq"] for r in store.db.read("SELECT seq FROM messages WHERE session_id = ? ORDER BY seq",
                                            (session_id,))]
    assert seqs == list(range(len(texts)))
    assert store.get_session(session_id)["updated"] >= store.get_session(session_id)["created"]


def test_concurrent_appends_from_many_threads_lose_nothing(store):
    session_id = store.create_session("alice", None, "scripted:x", {})
    threads, per_thread = 12, 40

    def write(n: int) -> None:
        for k in range(per_thread):
            store.append_entries(session_id, [{"role": "user", "content": [{"type": "text", "text": f"{n}:{k}"}]}])

    assert _at_once(threads, write) == []
    texts = [e["content"][0]["text"] for e in store.transcript(session_id)]
    assert len(texts) == threads * per_thread == len(set(texts))
    for n in range(threads):  # each writer's entries keep their order
        mine = [t for t in texts if t.startswith(f"{n}:")]
        assert mine == [f"{n}:{k}" for k in range(per_thread)]


def test_concurrent_token_creation_and_usage_records_from_threads(store):
    session_id = store.create_session("alice", None, None, {})
    tokens: list[str] = []

    def work(n: int) -> None:
        tokens.append(store.create_token(f"user{n % 3}"))
        store.record_usage(session_id=session_id, user_name="alice", model="m", cost=0.5,
                           usage={"uncached_input": 10, "cache_read": 5, "cache_write": 1, "output": 2, "reasoning": 0})

    workers = [threading.Thread(target=work, args=(n,)) for n in range(20)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(set(tokens)) == 20 and all(store.user_for_token(t) for t in tokens)
    usage = store.session_usage(session_id)
    assert (usage["uncached_input"], usage["cache_read"], usage["output"], usage["cost"]) == (200, 100, 40, 10.0)


def test_a_second_store_on_the_same_database_sees_everything(store):
    session_id = store.create_session("alice", "h_1", "scripted:x", {"current_script": "x = 1"})
    store.append_entries(session_id, [{"role": "user", "content": []}, {"role": "assistant", "content": []}])
    reopened = Store(store.path)
    row = reopened.get_session(session_id)
    assert row["state"] == {"current_script": "x = 1"} and row["host_id"] == "h_1"
    assert [e["role"] for e in reopened.transcript(session_id)] == ["user", "assistant"]


def test_audit_records_the_exact_bytes_with_their_hash_and_filters_by_prefix(store):
    code = "print('héllo')\n"
    sha = hashlib.sha256(code.encode()).hexdigest()
    store.record_scripts([dict(session_id="s1", tool_call_id="c1", user_name="alice", host_id="h1", host_app="ifc",
                               capability_version="ifc-1.0", kind="model", code=code, sha256=sha),
                          dict(session_id="s2", tool_call_id="c2", user_name="bob", host_id="h2", host_app="revit",
                               capability_version="revit-1.0", kind="epilogue", code="x", sha256="0" * 64)])
    (row,) = store.audit(sha256_prefix=sha[:8].upper())
    assert row["code"] == code and row["bytes"] == len(code.encode()) == 16 and row["kind"] == "model"
    assert (row["session_id"], row["tool_call_id"], row["host_app"], row["capability_version"]) == \
        ("s1", "c1", "ifc", "ifc-1.0")
    assert [r["session_id"] for r in store.audit(session_id="s2")] == ["s2"]
    assert len(store.audit()) == 2


def test_results_and_images_are_scoped_to_their_session(store):
    store.save_result("s1", "c1", {"stdout": "x" * 10})
    assert store.get_result("s1", "c1") == {"stdout": "x" * 10}
    assert store.get_result("s2", "c1") is None
    image_id = store.save_image("s1", b"\x89PNG...")
    assert store.get_image("s1", image_id) == b"\x89PNG..."
    assert store.get_image("s2", image_id) is None


def test_a_delivery_is_recorded_once_whichever_thread_or_store_inserts_it(store):
    other = Store(store.path)  # another process's store on the same database
    outcomes: list[bool] = []
    start = threading.Barrier(8)

    def deliver(n: int) -> None:
        start.wait()
        outcomes.append((store if n % 2 else other).record_delivery("s1", "c1.run#a", "c1", "host", {"n": n}))

    workers = [threading.Thread(target=deliver, args=(n,)) for n in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(outcomes) == [False] * 7 + [True]
    assert store.delivery("s1", "c1.run#a") == other.delivery("s1", "c1.run#a") and store.delivery("s1", "x") is None


def test_update_session_refuses_unknown_fields(store):
    session_id = store.create_session("alice", None, None, {})
    with pytest.raises(ValueError):
        store.update_session(session_id, user_name="mallory")
    store.update_session(session_id, status="running", state={"fix_count": 2})
    row = store.get_session(session_id)
    assert row["status"] == "running" and row["state"] == {"fix_count": 2} and row["user_name"] == "alice"


def test_an_in_memory_store_is_one_database_for_every_thread():
    store = Store(":memory:")
    token = store.create_token("alice")
    seen: list[str | None] = []
    worker = threading.Thread(target=lambda: seen.append(getattr(store.user_for_token(token), "name", None)))
    worker.start()
    worker.join()
    assert seen == ["alice"]


def test_long_lived_threads_do_not_each_hold_a_connection(store):
    session_id = store.create_session("alice", None, None, {})  # the pool's first connection
    opened = []
    event.listen(store.engine, "connect", lambda *_: opened.append(1))
    session_id = store.create_session("alice", None, None, {})
    release = threading.Event()

    def stream_like(ready: threading.Event) -> None:  # a long-lived thread that touches the store now and then
        store.get_session(session_id)
        ready.set()
        release.wait(5)

    workers = []
    for _ in range(50):
        ready = threading.Event()
        workers.append(threading.Thread(target=stream_like, args=(ready,)))
        workers[-1].start()
        assert ready.wait(5)
    release.set()
    for w in workers:
        w.join()
    assert opened == []  # 50 threads, one after another, all used the pooled connection


def test_a_run_lease_is_held_by_one_owner_until_released_or_expired(store):
    assert store.acquire_run_lease("s1", "proc-a", ttl_s=30)
    assert store.acquire_run_lease("s1", "proc-a", ttl_s=30)  # its own lease: renewed
    assert not store.acquire_run_lease("s1", "proc-b", ttl_s=30)
    assert store.run_lease("s1")["owner"] == "proc-a"
    assert store.renew_run_leases(["s1", "s2"], "proc-a", ttl_s=30) == ["s2"]
    assert store.renew_run_leases(["s1"], "proc-b", ttl_s=30) == ["s1"]
    store.release_run_lease("s1", "proc-b")  # not its lease: nothing happens
    assert store.run_lease("s1")["owner"] == "proc-a"
    store.release_run_lease("s1", "proc-a")
    assert store.run_lease("s1") is None
    assert store.acquire_run_lease("s3", "proc-a", ttl_s=-1)  # already expired: a dead process's lease
    assert store.acquire_run_lease("s3", "proc-b", ttl_s=30)
    assert store.run_lease("s3")["owner"] == "proc-b"


# schema migrations (cloud/migrations/): versioned Alembic revisions run at start, on both databases

def _database(request, tmp_path) -> str:
    """An empty database on the store's dialect: a SQLite path or a fresh PostgreSQL database."""
    if request.node.callspec.params["dialect"] == "sqlite":
        return str(tmp_path / "fresh.db")
    return fresh_database(request.getfixturevalue("postgres"))


def _at_revision(target: str, revision: str) -> Store:
    """A database built by the migrations up to `revision` only (as an older release left it)."""
    opened = Store(target, migrate=False)
    with opened._write() as db:
        migrations.upgrade(db._conn, revision)
    return opened


def _execute(opened: Store, *statements: tuple[str, tuple]) -> None:
    with opened._write() as db:
        for sql, args in statements:
            db.execute(sql, args)


_OLD_DATA = (
    ("INSERT INTO users (name, is_admin, policy, created) VALUES (?, ?, ?, ?)", ("root", 1, "ask", 1.0)),
    ("INSERT INTO users (name, is_admin, policy, created) VALUES (?, ?, ?, ?)", ("bob", 0, "auto", 2.0)),
    ("INSERT INTO tokens (id, token_hash, user_name, created) VALUES (?, ?, ?, ?)",
     ("t1", hash_token("nx_root"), "root", 1.0)),
    ("INSERT INTO tokens (id, token_hash, user_name, created) VALUES (?, ?, ?, ?)",
     ("t2", hash_token("nx_bob"), "bob", 2.0)),
    ("INSERT INTO sessions (id, user_name, host_id, model, created, updated) VALUES (?, ?, ?, ?, ?, ?)",
     ("s1", "bob", "h1", "scripted:x", 3.0, 3.0)),
    ("INSERT INTO messages (session_id, seq, entry) VALUES (?, ?, ?)", ("s1", 0, '{"role": "user", "content": []}')),
)


def _assert_old_data_kept_and_backfilled(opened: Store) -> None:
    assert opened.schema_revision() == migrations.head()
    root, bob = opened.user_for_token("nx_root"), opened.user_for_token("nx_bob")
    assert (root.name, root.is_admin, root.policy, root.scope) == ("root", True, "ask", "user")  # backfilled
    assert (bob.is_admin, bob.scope) == (False, "user")
    row = opened.get_session("s1")
    assert (row["user_name"], row["host_id"], row["validation"]) == ("bob", "h1", "warn")
    assert opened.user_validation("bob") == "warn"
    assert opened.transcript("s1") == [{"role": "user", "content": []}]
    session_id = opened.create_session("bob", None, None, {})  # and it works as a new one
    opened.append_entries(session_id, [{"role": "user", "content": []}])
    assert opened.record_delivery(session_id, "p1", "c1", "host", {"ok": True})


@pytest.fixture(params=["sqlite", "postgresql"])
def dialect(request) -> str:
    return request.param


def test_an_empty_database_is_brought_to_the_newest_revision_which_makes_the_declared_schema(
        dialect, request, tmp_path):
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    opened = Store(_database(request, tmp_path))
    assert opened.schema_revision() == migrations.head() == "0011"
    with opened.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").fetchall() == [("0011",)]
        assert compare_metadata(MigrationContext.configure(conn), metadata) == []
    assert Store(opened.path).migrate().before == migrations.head()  # the next start changes nothing


def test_the_revisions_are_read_without_alembic_as_alembic_reads_them(dialect, request, tmp_path):
    from alembic.runtime.migration import MigrationContext

    assert schema_revision.head() == migrations.script_directory().get_current_head()
    target = _database(request, tmp_path)
    for opened in (Store(target, migrate=False), _at_revision(target, "0003"), Store(target)):
        with opened.engine.connect() as conn:
            assert schema_revision.current(conn) == MigrationContext.configure(conn).get_current_revision()


OPEN_AND_LIST_MODULES = ("import sys; from cloud.store import Store; Store(sys.argv[1]).close(); "
                         "print(sorted({m.split('.')[0] for m in sys.modules} & {'alembic', 'mako'}))")


def test_alembic_is_imported_only_when_the_database_must_be_created_or_upgraded(tmp_path):
    target = str(tmp_path / "nexus.db")
    opens = [subprocess.run([sys.executable, "-c", OPEN_AND_LIST_MODULES, target], capture_output=True, text=True,
                            timeout=120) for _ in range(2)]
    assert [o.returncode for o in opens] == [0, 0], opens[-1].stderr[-2000:]
    assert [o.stdout.strip() for o in opens] == ["['alembic', 'mako']", "[]"]  # created, then opened as it is


def test_a_database_at_the_first_revision_keeps_its_data_and_is_backfilled(dialect, request, tmp_path):
    old = _at_revision(_database(request, tmp_path), "0001")
    assert old.schema_revision() == "0001"
    _execute(old, *_OLD_DATA)
    done = Store(old.path, migrate=False).migrate()
    assert (done.before, done.after, done.stamped) == ("0001", migrations.head(), None)
    _assert_old_data_kept_and_backfilled(Store(old.path))


def test_a_database_made_before_versioned_migrations_is_stamped_and_upgraded(dialect, request, tmp_path):
    # As the previous release left it: every table and the columns it added, but no alembic_version.
    old = _at_revision(_database(request, tmp_path), "0004")
    _execute(old, *[(sql.replace("created)", "created, is_admin, scope)").replace("?)", "?, 0, 'user')"), args)
                    if "INTO tokens" in sql else (sql, args) for sql, args in _OLD_DATA],
             ("UPDATE tokens SET is_admin = 1 WHERE id = ?", ("t1",)), ("DROP TABLE alembic_version", ()))
    assert old.schema_revision() is None
    done = Store(old.path, migrate=False).migrate()
    assert (done.before, done.stamped, done.after) == (None, "0004", migrations.head())
    _assert_old_data_kept_and_backfilled(Store(old.path))


def test_a_database_newer_than_this_release_is_refused_by_name(dialect, request, tmp_path):
    opened = Store(_database(request, tmp_path))
    _execute(opened, ("UPDATE alembic_version SET version_num = ?", ("9999",)))
    with pytest.raises(migrations.SchemaError, match="9999"):
        Store(opened.path)


def test_processes_starting_at_once_on_an_empty_database_migrate_it_once(dialect, request, tmp_path):
    target = _database(request, tmp_path)
    start = time.time() + 3  # every process imports first, then opens the store at the same moment
    code = ("import sys, time; from cloud.store import Store; time.sleep(max(0, float(sys.argv[2]) - time.time())); "
            "print(Store(sys.argv[1]).schema_revision())")
    processes = [subprocess.Popen([sys.executable, "-c", code, target, str(start)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = [p.communicate(timeout=120) for p in processes]
    assert [p.returncode for p in processes] == [0] * 4, [err for _, err in outputs]
    assert [out.strip() for out, _ in outputs] == [migrations.head()] * 4
    with Store(target).engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").fetchall() == [(migrations.head(),)]


def test_threads_of_one_process_opening_stores_of_different_databases_at_once(tmp_path):
    # The revision scripts share Alembic's module-global `op`: migrations in one process take turns.
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def open_one(n: int) -> None:
        try:
            start.wait()
            Store(tmp_path / f"db{n}.db").close()
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=open_one, args=(n,)) for n in range(6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    assert {Store(tmp_path / f"db{n}.db").schema_revision() for n in range(6)} == {migrations.head()}


def test_nexus_db_current_and_upgrade(tmp_path):
    target = str(tmp_path / "cli.db")
    nexus = [sys.executable, "-c", "from cloud.cli import run_main; run_main()"]
    empty = subprocess.run([*nexus, "db", "current", "--db", target], capture_output=True, text=True)
    assert empty.returncode == 1 and "no revision, empty" in empty.stdout
    _at_revision(target, "0003").close()
    behind = subprocess.run([*nexus, "db", "current", "--db", target], capture_output=True, text=True)
    assert behind.returncode == 1 and f"revision 0003 (newest is {migrations.head()})" in behind.stdout
    done = subprocess.run([*nexus, "db", "upgrade", "--db", target], capture_output=True, text=True)
    assert done.returncode == 0 and f"upgraded from 0003 to {migrations.head()}" in done.stdout, done.stderr
    again = subprocess.run([*nexus, "db", "upgrade", "--db", target], capture_output=True, text=True)
    assert "already at revision" in again.stdout
    now = subprocess.run([*nexus, "db", "current", "--db", target], capture_output=True, text=True)
    assert now.returncode == 0 and f"revision {migrations.head()} (newest)" in now.stdout


def test_writes_made_together_are_one_statement_on_postgresql_applied_all_or_none(store):
    """Issue 29 item 4: a tool call's state and the person's copy of its result are one statement on PostgreSQL
    (`write(together=True)`: one round trip where BEGIN, two statements and COMMIT took four), one transaction on
    SQLite; either way all or none."""
    session_id = store.create_session("alice", "h_1", "scripted:x", {"phase": "start"})
    statements: list[str] = []
    if store.postgres:
        original = store.db.write_one
        store.db.write_one = lambda sql, args=(): (statements.append(sql), original(sql, args))[1]
    with store.db.write(together=True):
        store.update_session(session_id, state={"phase": "after the call"})
        store.save_result(session_id, "c1", {"stdout": "it's 100% done"})
    assert store.get_session(session_id)["state"] == {"phase": "after the call"}
    assert store.get_result(session_id, "c1") == {"stdout": "it's 100% done"}
    if store.postgres:
        assert len(statements) == 3 and statements[-1].startswith("WITH w0 AS (UPDATE sessions")
    # the second fails (no such column): the first is not applied either
    with pytest.raises((sqlite3.OperationalError, psycopg.errors.UndefinedColumn)):
        with store.db.write(together=True):
            store.update_session(session_id, state={"phase": "never"})
            store.db.write_one("UPDATE results SET nowhere = ? WHERE session_id = ?", (1, session_id))
    assert store.get_session(session_id)["state"] == {"phase": "after the call"}


def test_writes_made_together_refuse_what_one_statement_cannot_hold(store):
    if not store.postgres:  # there a write made together is an ordinary transaction: both are taken
        with store.db.write(together=True) as db:
            db.lock("messages:s1")
            db.execute("WITH x AS (SELECT 1) UPDATE sessions SET updated = 0 WHERE id = 'none'")
        return
    with pytest.raises(TypeError), store.db.write(together=True) as db:
        db.lock("messages:s1")
    with pytest.raises(ValueError), store.db.write(together=True) as db:
        db.execute("WITH x AS (SELECT 1) UPDATE sessions SET updated = 0 WHERE id = 'none'")
