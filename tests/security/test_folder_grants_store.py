"""Folder grants in the store, on SQLite and a real PostgreSQL: one row per folder and team, changed in place,
withdrawn; a user's access is the strongest grant of their teams, and the folder check follows it."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from cloud.folders.access import FolderError, access_for
from cloud.skills.library import SkillLibrary
from cloud.store import Store
from tests.scale.servers import fresh_database, postgres_server


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path) -> Iterator[Store]:
    opened = Store(tmp_path / "store.db" if request.param == "sqlite"
                   else fresh_database(request.getfixturevalue("postgres")))
    yield opened
    opened.close()


def test_grants_are_kept_changed_withdrawn_and_the_strongest_applies(store, tmp_path):
    store.grant_folder("tower", "site", "read", "root")
    store.grant_folder("tower", "design", "read-write", "root")
    store.grant_folder("tower", "site", "read-write", "admin2")  # the same folder and team: changed in place
    store.grant_folder("depot", "site", "read", "root")
    assert [(g["folder"], g["team"], g["access"], g["granted_by"]) for g in store.folder_grants()] == [
        ("depot", "site", "read", "root"), ("tower", "design", "read-write", "root"),
        ("tower", "site", "read-write", "admin2")]
    assert store.folder_access(["site"]) == {"tower": "read-write", "depot": "read"}
    assert store.folder_access(["nobody"]) == {}
    with pytest.raises(ValueError, match="access"):
        store.grant_folder("tower", "site", "write", "root")
    assert store.revoke_folder("tower", "site") and not store.revoke_folder("tower", "site")
    assert store.folder_access(["site"]) == {"depot": "read"}

    # the check follows the store: carol (team site) reads depot and may not write there or read tower
    root = tmp_path / "root"
    (root / "projects" / "depot").mkdir(parents=True)
    (root / "projects" / "tower").mkdir(parents=True)
    SkillLibrary(store).set_member("site", "carol")
    access = access_for(store, str(root), "carol")
    assert access.resolve("projects/depot/a.ifc") == str(root / "projects" / "depot" / "a.ifc")
    with pytest.raises(FolderError, match="read-only"):
        access.resolve("projects/depot/out", "write", "out")
    with pytest.raises(FolderError, match="no project folder 'tower' shared with you"):
        access.resolve("projects/tower/a.ifc")
    assert access.resolve("own/a.ifc", "write") == str(root / "carol" / "own" / "a.ifc")
