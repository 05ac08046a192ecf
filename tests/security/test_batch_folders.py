"""Batch folders have owners (issue 23, H3 and item 3), on the real app over HTTP with real IFC hosts.

Layout under the batch root: alice/ and bob/ (each user's own folder), projects/std/ (shared by an admin with
alice's team read-write and bob's team read-only) and projects/secret/ (shared with nobody). The two attacks
of the issue (bob's batch writing its output over alice's input, bob's read-only batch reading alice's
model) fail; reading, writing, `out`, globs and symbolic links are checked for both users; the granted
project folder works for read and for read-write, and not once the grant is withdrawn.
"""
from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cloud.batch.worker import wait_for_hosts
from cloud.folders.access import user_folder_name
from tests.batch.support import SCRIPT, assert_exactly_the_change, sha, write_sample
from tests.support.client import Client

WAIT_S = 600


@pytest.fixture
def root(tmp_path, monkeypatch) -> Iterator[Path]:
    root = tmp_path / "root"
    for relative, seed in (("alice/a1.ifc", 1), ("alice/a/a2.ifc", 2), ("bob/a1.ifc", 3), ("bob/b/b1.ifc", 4),
                           ("projects/std/s1.ifc", 5), ("projects/secret/x1.ifc", 6)):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        write_sample(root / relative, seed)
    monkeypatch.setenv("NEXUS_BATCH_ROOT", str(root))
    monkeypatch.delenv("NEXUS_BATCH_STATE", raising=False)
    monkeypatch.delenv("NEXUS_REDIS_URL", raising=False)
    monkeypatch.setenv("NEXUS_BATCH_WORKERS", "2")
    yield root
    wait_for_hosts()  # the files' hosts, stopped in the background once each file was done


@pytest.fixture
def admin(server) -> Client:
    return Client(server.url, server.token("root", admin=True))


@pytest.fixture
def bob(server) -> Client:
    return Client(server.url, server.token("bob"))


@pytest.fixture
def teams(admin, root) -> None:
    """alice in team design (read-write on projects/std), bob in team review (read-only on it)."""
    for team, user in (("design", "alice"), ("review", "bob")):
        assert admin.call("PUT", f"/api/admin/teams/{team}/members/{user}", json={}).status_code == 200
    for team, access in (("design", "read-write"), ("review", "read")):
        granted = admin.call("PUT", "/api/admin/folders/std", json={"team": team, "access": access})
        assert granted.status_code == 200, granted.text
        assert granted.json() == {"folder": "std", "path": "projects/std", "team": team, "access": access,
                                  "exists": True}


def hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): sha(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def unchanged(before: dict[str, str], folder: Path) -> bool:
    return {k: v for k, v in hashes(folder).items() if k in before} == before


def start(client: Client, **body: Any) -> dict[str, Any]:
    response = client.call("POST", "/api/batches", json={"script": SCRIPT, **body})
    assert response.status_code == 202, response.text
    return response.json()


def refused(client: Client, status: int, **body: Any) -> str:
    response = client.call("POST", "/api/batches", json={"script": SCRIPT, **body})
    assert response.status_code == status, (body, response.status_code, response.text)
    return response.json()["error"]


def finished(client: Client, batch_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        detail = client.call("GET", f"/api/batches/{batch_id}").json()
        if detail["progress"]["finished"]:
            return detail
        time.sleep(0.5)
    raise TimeoutError(f"batch {batch_id} did not finish within {WAIT_S} s")


def test_the_two_attacks_of_the_issue_fail_and_each_user_works_in_their_own_folder(server, alice, bob, root):
    alices = hashes(root / "alice")
    # The issue's attack: bob's a1.ifc as the input, alice's folder as `out` (it replaced her a1.ifc)...
    assert "nothing matches 'bob/a1.ifc'" in refused(bob, 400, files="bob/a1.ifc", out="alice")
    for files in ("alice/a1.ifc", "*/a1.ifc", "../alice/a1.ifc", str(root / "alice" / "a1.ifc")):
        error = refused(bob, 400, files=files, out="x")
        assert "nothing matches" in error or "refused" in error, error
    # ...and the read-only one: bob's batch over alice's model never reads it.
    assert "nothing matches 'alice/a1.ifc'" in refused(bob, 400, files="alice/a1.ifc", out="r", policy="readonly")
    # another user's folder answers exactly like a folder that does not exist
    assert (refused(bob, 400, files="alice/a1.ifc", out="r").replace("alice", "X")
            == refused(bob, 400, files="nobody/a1.ifc", out="r").replace("nobody", "X"))

    # bob's own a1.ifc with `out: "alice"` lands in bob's own folder; alice's input is untouched
    by_bob = start(bob, files="a1.ifc", out="alice")
    by_alice = start(alice, files="**/*.ifc", out="checked")
    bob_detail, alice_detail = finished(bob, by_bob["batch_id"]), finished(alice, by_alice["batch_id"])
    assert [(f["file"], f["state"], f["output"]) for f in bob_detail["file_results"]] == [
        ("a1.ifc", "committed", "alice/a1.ifc")]
    assert bob_detail["out"] == "alice"
    assert_exactly_the_change(root / "bob" / "a1.ifc", root / "bob" / "alice" / "a1.ifc")
    assert sorted((f["file"], f["state"], f["output"]) for f in alice_detail["file_results"]) == [
        ("a/a2.ifc", "committed", "checked/a/a2.ifc"), ("a1.ifc", "committed", "checked/a1.ifc")]
    assert_exactly_the_change(root / "alice" / "a1.ifc", root / "alice" / "checked" / "a1.ifc")
    assert {k: v for k, v in hashes(root / "alice").items() if not k.startswith("checked/")} == alices
    assert str(root) not in str(alice_detail) + str(bob_detail)  # named as each person names them


def test_a_project_folder_shared_read_write_and_read_only_and_withdrawn(server, admin, alice, bob, root, teams):
    listed = admin.call("GET", "/api/admin/folders").json()
    assert listed["configured"] is True
    assert [(f["name"], f["exists"], sorted((g["team"], g["access"]) for g in f["grants"]))
            for f in listed["folders"]] == [("secret", True, []),
                                            ("std", True, [("design", "read-write"), ("review", "read")])]
    assert {g["granted_by"] for g in listed["folders"][1]["grants"]} == {"root"}
    std = hashes(root / "projects" / "std")

    # read-write (alice's team): inputs from the project folder, results into it
    written = start(alice, files="projects/std/*.ifc", out="projects/std/checked")
    # read-only (bob's team): inputs from it, results into his own folder; `out` inside it is refused
    read = start(bob, files=["projects/std/s1.ifc"], out="from-std")
    error = refused(bob, 403, files="projects/std/s1.ifc", out="projects/std/bob")
    assert "'projects/std/bob' is in projects/std, which is shared with your team read-only" in error
    assert "read-only" in refused(bob, 403, files="b/*.ifc", out="projects/std")
    alice_detail, bob_detail = finished(alice, written["batch_id"]), finished(bob, read["batch_id"])
    assert [(f["file"], f["state"], f["output"]) for f in alice_detail["file_results"]] == [
        ("projects/std/s1.ifc", "committed", "projects/std/checked/s1.ifc")]
    assert [(f["file"], f["state"], f["output"]) for f in bob_detail["file_results"]] == [
        ("projects/std/s1.ifc", "committed", "from-std/s1.ifc")]
    assert_exactly_the_change(root / "projects" / "std" / "s1.ifc", root / "projects" / "std" / "checked" / "s1.ifc")
    assert_exactly_the_change(root / "projects" / "std" / "s1.ifc", root / "bob" / "from-std" / "s1.ifc")
    assert hashes(root / "projects" / "std")["s1.ifc"] == std["s1.ifc"]
    assert not (root / "projects" / "std" / "bob").exists()

    # a project folder shared with nobody answers exactly like one that does not exist
    secret = refused(alice, 403, files="projects/secret/x1.ifc", out="o")
    assert secret == refused(alice, 403, files="projects/nothing/x1.ifc", out="o").replace("nothing", "secret")
    assert "there is no project folder 'secret' shared with you" in secret
    assert "no project folder" in refused(alice, 403, files="a1.ifc", out="projects/secret/o")
    assert "name one project folder" in refused(alice, 400, files="projects/*/s1.ifc", out="o")

    # the grant withdrawn: bob no longer reads the folder
    assert admin.call("DELETE", "/api/admin/folders/std/teams/review").json() == {
        "folder": "std", "team": "review", "revoked": True}
    assert admin.call("DELETE", "/api/admin/folders/std/teams/review").status_code == 404
    assert "no project folder 'std' shared with you" in refused(bob, 403, files="projects/std/s1.ifc", out="o")
    # read-only downgraded for alice's team: her out there is refused now
    assert admin.call("PUT", "/api/admin/folders/std", json={"team": "design", "access": "read"}).status_code == 200
    assert "read-only" in refused(alice, 403, files="projects/std/s1.ifc", out="projects/std/again")


def test_symbolic_links_never_lead_out_of_a_users_folders(server, admin, alice, bob, root, teams):
    bobs, alices = hashes(root / "bob"), hashes(root / "alice")
    (root / "alice" / "to-bob").symlink_to(root / "bob", target_is_directory=True)
    (root / "alice" / "bobs.ifc").symlink_to(root / "bob" / "b" / "b1.ifc")
    (root / "alice" / "out-bob").symlink_to(root / "bob", target_is_directory=True)
    (root / "alice" / "to-secret").symlink_to(root / "projects" / "secret", target_is_directory=True)
    (root / "projects" / "std" / "leak.ifc").symlink_to(root / "alice" / "a1.ifc")
    (root / "bob" / "std-link").symlink_to(root / "projects" / "std", target_is_directory=True)
    outside = root.parent / "outside"
    outside.mkdir()
    (root / "alice" / "etc").symlink_to(outside, target_is_directory=True)
    for files, out, named in [
            ("to-bob/a1.ifc", "o", "to-bob/a1.ifc"),  # a folder link into bob's folder
            ("bobs.ifc", "o", "bobs.ifc"),  # a file link to bob's model
            ("*.ifc", "o", "bobs.ifc"),  # ...found by a glob: the match is re-checked
            ("**/*.ifc", "o", "bobs.ifc"),
            ("to-secret/*.ifc", "o", "to-secret/x1.ifc"),  # into a project folder not shared with alice
            ("a1.ifc", "out-bob/x", "out-bob/x"),  # `out` through a link into bob's folder
            ("a1.ifc", "etc", "etc"),  # ...or out of the batch root
    ]:
        error = refused(alice, 403, files=files, out=out)
        assert f"{named!r} leads outside your folders" in error, (files, out, error)
    # bob reads the shared folder; the link in it to alice's model is refused by name
    error = refused(bob, 403, files="projects/std/*.ifc", out="o")
    assert "'projects/std/leak.ifc' leads outside your folders" in error
    # a link of bob's into the read-only project folder reads, and cannot be written through
    assert "read-only" in refused(bob, 403, files="b/b1.ifc", out="std-link/o")

    # an out folder whose file is a link to an input (or to bob's model) is refused before anything runs
    (root / "alice" / "o1").mkdir()
    (root / "alice" / "o1" / "a1.ifc").symlink_to(root / "alice" / "a1.ifc")
    (root / "alice" / "o2").mkdir()
    (root / "alice" / "o2" / "a2.ifc").symlink_to(root / "bob" / "b" / "b1.ifc")
    assert "would overwrite the input a1.ifc" in refused(alice, 403, files="a1.ifc", out="o1")
    assert "outside the out folder" in refused(alice, 403, files="a/a2.ifc", out="o2")
    assert unchanged(bobs, root / "bob") and unchanged(alices, root / "alice")
    assert not list(outside.iterdir())


def test_user_folders_are_made_private_and_never_taken_from_a_raw_name(server, root):
    for user in ("dave", "Carol.Smith", "projects"):
        client = Client(server.url, server.token(user))
        error = refused(client, 400, files="std/s1.ifc", out="o")
        assert "nothing matches" in error, error  # `projects` the user has a folder of their own
        folder = root / user_folder_name(user)
        assert folder.is_dir() and stat.S_IMODE(folder.stat().st_mode) == 0o700, user
    assert user_folder_name("dave") == "dave"
    assert user_folder_name("Carol.Smith").startswith("carol.smith~") and user_folder_name("projects") != "projects"
    assert user_folder_name("Carol.Smith") != user_folder_name("carol.Smith")
    assert sorted(os.listdir(root)) == sorted(["alice", "bob", "projects", "dave", user_folder_name("Carol.Smith"),
                                               user_folder_name("projects")])


def test_folder_grants_are_for_admins_and_checked(server, admin, alice, root):
    body = {"team": "design", "access": "read"}
    assert alice.call("PUT", "/api/admin/folders/std", json=body).status_code == 403
    assert alice.call("GET", "/api/admin/folders").status_code == 403
    for name, payload, message in [
            ("std", {"team": "design", "access": "write"}, "access: expected one of read, read-write"),
            ("std", {"team": "bad team", "access": "read"}, "team:"),
            ("std", {"team": "design"}, "expected"),
            ("std", {**body, "extra": 1}, "expected"),
            (".hidden", body, "project folder's name"),
            ("a%20b", body, "project folder's name")]:
        response = admin.call("PUT", f"/api/admin/folders/{name}", json=payload)
        assert response.status_code == 400 and message in response.json()["error"], (name, payload, response.text)
    assert admin.call("PUT", "/api/admin/folders/..", json=body).status_code in (400, 404)
    assert admin.call("GET", "/api/admin/folders").json()["folders"][0]["grants"] == []
    # a grant on a folder not there yet makes it (private to the server's OS user)
    assert admin.call("PUT", "/api/admin/folders/new-site", json=body).status_code == 200
    made = root / "projects" / "new-site"
    assert made.is_dir() and stat.S_IMODE(made.stat().st_mode) == 0o700


def test_a_staged_result_is_not_kept_in_a_project_folder_whose_grant_was_lowered(server, admin, alice, root, teams):
    started = start(alice, files="projects/std/s1.ifc", out="projects/std/reviewed", policy="ask")
    detail = finished(alice, started["batch_id"])
    assert [f["state"] for f in detail["file_results"]] == ["staged"], detail["file_results"]
    review = f"/api/batches/{started['batch_id']}/review"
    assert admin.call("PUT", "/api/admin/folders/std", json={"team": "design", "access": "read"}).status_code == 200
    kept = alice.call("POST", review, json={"file": "projects/std/s1.ifc", "decision": "keep"})
    assert kept.status_code == 403 and "'projects/std/reviewed' is no longer a folder alice may write to" in \
        kept.json()["error"], kept.text
    assert not (root / "projects" / "std" / "reviewed").exists()
    assert admin.call("PUT", "/api/admin/folders/std", json={"team": "design", "access": "read-write"}).status_code == 200
    kept = alice.call("POST", review, json={"file": "projects/std/s1.ifc", "decision": "keep"})
    assert kept.status_code == 200 and kept.json()["output"] == "projects/std/reviewed/s1.ifc", kept.text
    assert_exactly_the_change(root / "projects" / "std" / "s1.ifc", root / "projects" / "std" / "reviewed" / "s1.ifc")


def test_a_folder_that_cannot_be_made_is_a_clear_refusal(server, admin, root):
    (root / "eve").write_text("a file where eve's folder would be")
    error = refused(Client(server.url, server.token("eve")), 409, files="*.ifc", out="o")
    assert "your folder (eve) cannot be made under the batch root" in error and str(root) not in error
    (root / "projects" / "site").write_text("a file where the project folder would be")
    response = admin.call("PUT", "/api/admin/folders/site", json={"team": "design", "access": "read"})
    assert response.status_code == 409 and "nothing was granted" in response.json()["error"], response.text
    assert server.state.store.folder_grants() == []
