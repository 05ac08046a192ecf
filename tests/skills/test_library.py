"""The library on SQLite and on a throwaway PostgreSQL: versions, search, teams, stats, the sha256 check;
and parameters proposed from a script's literals and bound line by line (Python 2 scripts too)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from cloud.skills.library import DEFAULT_TEAM, SkillError, SkillLibrary, Tampered
from cloud.skills.parameters import BindError, bind, confirm_parameters, propose_parameters
from cloud.store import Store
from tests.scale.servers import fresh_database, postgres_server

CODE = 'PREFIX = "D-"  # mark prefix\nLIMIT = 3\nRATIO = 0.5\nDRY = False\nprint PREFIX, LIMIT\n'


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def library(request, tmp_path) -> Iterator[SkillLibrary]:
    store = Store(tmp_path / "s.db" if request.param == "sqlite"
                  else fresh_database(request.getfixturevalue("postgres")))
    yield SkillLibrary(store)
    store.close()


def _save(library: SkillLibrary, user: str, name: str, code: str = CODE, host_app: str = "ifc"):
    return library.save(user_name=user, name=name, description="Prefix door marks", host_app=host_app, code=code,
                        parameters=confirm_parameters(code, ["PREFIX"]), capability_version="2",
                        provenance={"model": "m"}, example={"changes": {}})


def test_versions_search_teams_and_stats(library):
    first = _save(library, "alice", "Door marks")
    second = _save(library, "alice", "Door marks", code=CODE.replace("LIMIT = 3", "LIMIT = 4"))
    assert (first.version, second.version) == (1, 2) and first.sha256 != second.sha256
    assert library.get("alice", "door marks", version=1).code == CODE  # names match case-insensitively
    library.record_run(second, "alice", None, True, None)
    library.record_run(second, "alice", None, False, "boom")
    (listed,) = library.listing("alice", "prefix door")
    assert listed["run_count"] == 2 and listed["success_rate"] == 0.5 and listed["last_failure"]["error"] == "boom"
    assert [v["version"] for v in listed["versions"]] == [2, 1] and listed["team"] == DEFAULT_TEAM
    assert library.listing("alice", "window") == []
    library.set_member("north", "bob", can_edit=False)
    assert library.listing("bob") == [] and library.get("bob", "Door marks") is None
    with pytest.raises(SkillError, match="bob may not edit skills of team north"):
        _save(library, "bob", "Mine")
    with pytest.raises(SkillError, match="is for ifc, not revit"):
        _save(library, "alice", "Door marks", host_app="revit")
    with pytest.raises(SkillError, match="name:"):
        _save(library, "alice", "../etc")
    assert library.teams() == [{"team": "north", "members": [{"user": "bob", "can_edit": False}]}]


def test_a_failed_run_records_the_hosts_structured_error_as_one_line(library):
    skill = _save(library, "alice", "Door marks")
    library.record_run(skill, "alice", "s1", False, {"type": "RuntimeError", "message": "no doors", "line": 4,
                                                      "traceback": "Traceback ..."})
    stats = library.listing("alice")[0]
    assert stats["last_failure"]["error"] == "RuntimeError: no doors (line 4)" and stats["success_rate"] == 0.0


def test_a_changed_stored_script_fails_its_check(library):
    _save(library, "alice", "Door marks")
    with library.store._write() as db:
        db.execute("UPDATE skill_versions SET code = ?", (CODE + "import os\n",))
    with pytest.raises(Tampered):
        library.get("alice", "Door marks").verified_code()


def test_parameters_are_the_top_level_literals_and_bind_only_their_lines():
    assert propose_parameters(CODE) == [
        {"name": "PREFIX", "type": "string", "default": "D-"}, {"name": "LIMIT", "type": "integer", "default": 3},
        {"name": "RATIO", "type": "number", "default": 0.5}, {"name": "DRY", "type": "boolean", "default": False}]
    params = confirm_parameters(CODE, ["PREFIX", {"name": "LIMIT", "description": "how many"}, "DRY"])
    code, values = bind(CODE, params, {"PREFIX": "it's", "LIMIT": "7", "DRY": "yes"})
    assert code == 'PREFIX = "it\'s"  # mark prefix\nLIMIT = 7\nRATIO = 0.5\nDRY = True\nprint PREFIX, LIMIT\n'
    assert values == {"PREFIX": "it's", "LIMIT": 7, "DRY": True}
    assert bind(CODE, params, {})[0] == CODE.replace('"D-"', "'D-'")
    for args, problem in (({"LIMIT": "many"}, "LIMIT: expected integer"), ({"X": 1}, "unknown argument"),
                          ({"PREFIX": "a\nimport os"}, "one line"), ({"DRY": 1}, "DRY: expected boolean")):
        with pytest.raises(BindError, match=problem):
            bind(CODE, params, args)
    with pytest.raises(BindError, match="'print' is not a top-level literal"):
        confirm_parameters(CODE, ["print"])
