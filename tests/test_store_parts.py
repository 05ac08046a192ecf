"""Each part of the store (cloud/store/*.py) touches only the tables it declares: read from the SQL its module
holds, and run against a database that has those tables and no other."""
from __future__ import annotations

import ast
import importlib
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cloud import store as store_package
from cloud.store import PARTS, Store
from cloud.store.database import Database
from cloud.store.schema import metadata

ROOT = Path(__file__).resolve().parents[1]
NAMED = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE)\s+([a-z_]+)\b")
WRITTEN = re.compile(r"\b(?:INSERT INTO|(?<!DO )UPDATE|DELETE FROM)\s+([a-z_]+)\b")
LIBRARY_TABLES = {"team_members", "skills", "skill_versions", "skill_runs"}  # cloud/skills/library.py's own
SHARED = {"users": {"auth", "user_settings"}}  # the user's row: auth makes it, user_settings sets two columns


def _sql_of(path: Path) -> str:
    """Every string literal of a module (f-strings' literal parts too), docstrings left out."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return "\n".join(node.value for node in ast.walk(tree)
                     if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings)


def _module(part: type) -> Any:
    return importlib.import_module(part.__module__)


def _declared(part: type) -> tuple[set[str], set[str]]:
    module = _module(part)
    return set(module.TABLES), set(getattr(module, "READS", ()))


@pytest.mark.parametrize("attribute", list(PARTS))
def test_a_part_names_only_its_tables_and_writes_only_those_it_owns(attribute):
    part = PARTS[attribute]
    owned, read = _declared(part)
    sql = _sql_of(Path(_module(part).__file__))
    named, written = set(NAMED.findall(sql)), set(WRITTEN.findall(sql))
    assert named, f"{attribute}: no SQL found"
    assert named <= owned | read, f"{attribute} names tables it does not declare: {named - owned - read}"
    assert written <= owned, f"{attribute} writes tables it only reads: {written - owned}"
    assert owned <= named and read <= named, f"{attribute} declares tables it never uses"


def test_every_table_has_one_owning_part_and_the_team_library_keeps_its_own():
    owners: dict[str, set[str]] = {}
    for attribute, part in PARTS.items():
        for table in _declared(part)[0]:
            owners.setdefault(table, set()).add(attribute)
    library = set(NAMED.findall(_sql_of(ROOT / "cloud/skills/library.py")))
    assert library == LIBRARY_TABLES
    assert set(owners) | LIBRARY_TABLES == set(metadata.tables) and not set(owners) & LIBRARY_TABLES
    assert {t: o for t, o in owners.items() if len(o) > 1} == SHARED
    settings_sql = _sql_of(ROOT / "cloud/store/user_settings.py")
    assert set(re.findall(r"UPDATE users SET (\w+)", settings_sql)) == {"policy", "validation"}
    assert "INSERT INTO users" not in settings_sql and "DELETE FROM users" not in settings_sql


def test_the_modules_of_the_package_are_the_parts_and_the_connection():
    modules = {p.stem for p in Path(store_package.__file__).parent.glob("*.py")}
    assert modules == {"__init__", "database", "schema"} | {_module(p).__name__.rsplit(".", 1)[1]
                                                           for p in PARTS.values()}


# Each part run against a database holding only the tables it declares: a query naming any other fails.
Steps = list[tuple[str, Callable[[Any, dict[str, Any]], Any]]]
PNG = b"\x89PNG\r\n"
EXERCISES: dict[str, Steps] = {
    "auth": [
        ("create_token", lambda p, s: s.update(token=p.create_token("ann", admin=True))),
        ("user_for_token", lambda p, s: s.update(token_id=p.user_for_token(s["token"]).token_id)),
        ("token_id", lambda p, s: p.token_id(s["token"]) == s["token_id"]),
        ("token_active", lambda p, s: p.token_active(s["token_id"])),
        ("list_tokens", lambda p, s: len(p.list_tokens()) == 1),
        ("set_token_admin", lambda p, s: p.set_token_admin(s["token_id"], True)),
        ("admin_users", lambda p, s: p.admin_users() == {"ann"}),
        ("get_user", lambda p, s: p.get_user("ann").is_admin),
        ("create_web_session", lambda p, s: s.update(web=p.create_web_session(s["token_id"], 60))),
        ("user_for_web_session", lambda p, s: p.user_for_web_session(s["web"]).name == "ann"),
        ("end_web_session", lambda p, s: p.end_web_session(s["web"]) or True),
        ("create_signin_code", lambda p, s: s.update(code=p.create_signin_code(s["token"]))),
        ("redeem_signin_code", lambda p, s: p.redeem_signin_code(s["code"]) == s["token_id"]),
        ("claim_host", lambda p, s: p.claim_host("h_1", "ann")),
        ("host_owner", lambda p, s: p.host_owner("h_1") == "ann"),
        ("revoke_token", lambda p, s: p.revoke_token(s["token_id"])),
    ],
    "user_settings": [
        ("set_user_policy", lambda p, s: p.set_user_policy("ann", "ask") is False),  # no such user here
        ("set_user_validation", lambda p, s: p.set_user_validation("ann", "block") is False),
        ("user_validation", lambda p, s: p.user_validation("ann") is None),
        ("policies", lambda p, s: p.policies("s1", "ann") == (None, None)),
    ],
    "sessions": [
        ("create_session", lambda p, s: s.update(id=p.create_session("ann", "h_1", "scripted:x", {"a": 1}))),
        ("count_sessions_since", lambda p, s: p.count_sessions_since("ann", 0) == 1),
        ("get_session", lambda p, s: p.get_session(s["id"])["state"] == {"a": 1}),
        ("update_session", lambda p, s: p.update_session(s["id"], status="running") or True),
        ("append_entries", lambda p, s: p.append_entries(s["id"], [{"role": "user", "content": []}]) or True),
        ("transcript", lambda p, s: p.transcript(s["id"]) == [{"role": "user", "content": []}]),
        ("list_sessions", lambda p, s: [r["entries"] for r in p.list_sessions("ann", text="SCRIPTED")] == [1]),
    ],
    "leases": [
        ("acquire_run_lease", lambda p, s: p.acquire_run_lease("s1", "me", 30)),
        ("renew_run_leases", lambda p, s: p.renew_run_leases(["s1", "s2"], "me", 30) == ["s2"]),
        ("run_lease", lambda p, s: p.run_lease("s1")["owner"] == "me"),
        ("running_without_live_lease", lambda p, s: p.running_without_live_lease(time.time(), 10) == []),  # no session
        ("release_run_lease", lambda p, s: p.release_run_lease("s1", "me") or p.run_lease("s1") is None),
    ],
    "deliveries": [
        ("record_delivery", lambda p, s: p.record_delivery("s1", "p1", "c1", "host", {"ok": True})),
        ("delivery", lambda p, s: p.delivery("s1", "p1") == {"ok": True}),
        ("recorded_deliveries", lambda p, s: p.recorded_deliveries([("s1", "p1"), ("s1", "p2")]) == {("s1", "p1")}),
        ("forget_old_deliveries", lambda p, s: p.forget_old_deliveries() == 0 and p.forget_old_deliveries(-1) == 1),
    ],
    "results": [
        ("save_result", lambda p, s: p.save_result("s1", "c-1", {"ok": True}) or True),
        ("get_result", lambda p, s: p.get_result("s1", "c-1") == {"ok": True}),
        ("results_with_prefix", lambda p, s: p.results_with_prefix("s1", "c-") == [("c-1", {"ok": True})]),
        ("save_image", lambda p, s: s.update(image=p.save_image("s1", PNG))),
        ("list_images", lambda p, s: [i["bytes"] for i in p.list_images("s1")] == [len(PNG)]),
        ("get_image", lambda p, s: p.get_image("s1", s["image"]) == PNG),
    ],
    "ledger": [
        ("record_scripts", lambda p, s: p.record_scripts([dict(
            session_id="s1", tool_call_id="c1", user_name="ann", host_id="h_1", host_app="ifc",
            capability_version="ifc-1", kind="model", code="x = 1", sha256="ab" * 32)]) or True),
        ("audit", lambda p, s: [r["code"] for r in p.audit(sha256_prefix="AB", text="X =")] == ["x = 1"]),
        ("record_usage", lambda p, s: p.record_usage(session_id="s1", user_name="ann", model="m", cost=0.5,
                                                     usage={"output": 3}) or True),
        ("session_usage", lambda p, s: p.session_usage("s1")["output"] == 3),
        ("usage_summary", lambda p, s: [r["turns"] for r in p.usage_summary()] == [1]),
    ],
    "folders": [
        ("grant_folder", lambda p, s: p.grant_folder("proj", "team", "read", "root") or True),
        ("folder_grants", lambda p, s: [g["access"] for g in p.folder_grants()] == ["read"]),
        ("folder_access", lambda p, s: p.folder_access(["team"]) == {"proj": "read"}),
        ("revoke_folder", lambda p, s: p.revoke_folder("proj", "team")),
    ],
    "rule_sets": [
        ("save_rule_set", lambda p, s: p.save_rule_set("team", "walls", "{}", "ann") or True),
        ("list_rule_sets", lambda p, s: [r["name"] for r in p.list_rule_sets("team")] == ["walls"]),
        ("rule_set", lambda p, s: p.rule_set("team", "walls")["document"] == "{}"),
        ("delete_rule_set", lambda p, s: p.delete_rule_set("team", "walls")),
    ],
    "finding_runs": [
        ("record_finding_run", lambda p, s: p.record_finding_run(
            ts=1.0, day="1970-01-01", model="a.ifc", source="check", check_name="fire", user_name="ann",
            session_id=None, errors=2, warnings=1, infos=0) or True),
        ("latest_finding_runs", lambda p, s: [(r["model"], r["errors"]) for r in p.latest_finding_runs()] == [("a.ifc", 2)]),
        ("finding_counts", lambda p, s: [r["check_name"] for r in p.finding_counts()] == ["fire"]),
    ],
}


@pytest.mark.parametrize("attribute", list(PARTS))
def test_a_part_works_on_a_database_holding_only_its_tables(attribute, tmp_path):
    part = PARTS[attribute]
    owned, read = _declared(part)
    steps = EXERCISES[attribute]
    public = {n for n in vars(part) if not n.startswith("_") and callable(getattr(part, n))}
    assert {name for name, _ in steps} == public, "every method of the part is exercised"
    db = Database(tmp_path / "only.db", migrate=False)
    metadata.create_all(db.engine, tables=[metadata.tables[t] for t in sorted(owned | read)])
    with db.engine.connect() as conn:
        present = {r[0] for r in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}
    assert present == owned | read
    state: dict[str, Any] = {}
    instance = part(db)
    for name, step in steps:
        assert step(instance, state) is not False, f"{attribute}.{name}"
    db.close()


def test_the_store_serves_each_part_and_its_flat_names(tmp_path):
    store = Store(tmp_path / "store.db")
    assert all(isinstance(getattr(store, a), part) and getattr(store, a).db is store.db for a, part in PARTS.items())
    token = store.create_token("ann")  # the flat name reaches the part
    assert store.auth.user_for_token(token).name == "ann"
    assert store.create_token.__self__ is store.auth
    with pytest.raises(AttributeError, match="no attribute 'no_such_method'"):
        store.no_such_method  # noqa: B018


# Product code calling the store by its flat names (Store answers them for the tests): none; keep it so.
FLAT_CALLERS: set[str] = set()


def _flat_calls(path: Path) -> list[str]:
    """`<...store>.<flat name>` in a module: a part's method reached through the whole store."""
    from cloud.store import FLAT

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in FLAT:
            receiver = ast.unparse(node.value).rsplit(".", 1)[-1]
            if "store" in receiver.lower():
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(node)}")
    return found


def test_code_outside_the_store_names_the_part_it_uses():
    calls = [c for p in sorted((ROOT / "cloud").rglob("*.py")) + sorted((ROOT / "bench").glob("*.py"))
             if "cloud/store/" not in p.as_posix() for c in _flat_calls(p)]
    assert [c for c in calls if c.split(":")[0] not in FLAT_CALLERS] == []
    assert {c.split(":")[0] for c in calls} == FLAT_CALLERS  # a file moved to parts leaves the list
