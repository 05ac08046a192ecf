"""Who may read and write what under the batch root (NEXUS_BATCH_ROOT), for every path a person names to the
server (a batch's `files` and `out`; any route that takes a server-side path calls
`access_for(store, root, user).resolve`).

Layout: each user has a folder of their own, `<root>/<user folder>/` (the user name itself when it is a plain
lower-case name, else a safe mapping of it: `user_folder_name`), made on first use and readable by the
server's OS user only; an admin shares project folders, `<root>/projects/<name>/`, with teams, read-only or
read-write (the `folder_grants` table, `PUT /api/admin/folders/<name>`). A person names paths relative to
their own folder, or `projects/<name>/...` for a project folder shared with their team.

Every path is checked after symbolic links are resolved: a path, or a glob's match, that leads out of the
folders the person may use for what they ask (read or write) is refused with a FolderError naming it. A
project folder that is not shared with the person's team answers exactly like one that does not exist;
another user's folder cannot be named at all (no path leads from one's own folder to it).
"""
from __future__ import annotations

import glob
import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

PROJECTS = "projects"
READ, READ_WRITE = "read", "read-write"
ACCESS_LEVELS = (READ, READ_WRITE)
WANTS = ("read", "write")
PROJECT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
PLAIN_USER = re.compile(r"[a-z0-9][a-z0-9._@+-]{0,63}")  # used as the folder name as it is
RESERVED = frozenset({PROJECTS})  # names of the root that are not a user's folder
FOLDER_MODE = 0o700
MAX_PATH = 1_000
GLOB_CHARS = re.compile(r"[*?\[]")


class FolderError(ValueError):
    """A path the person may not use as asked; `status` is the HTTP answer (400 malformed, 403 refused)."""

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.status = status


def user_folder_name(user: str) -> str:
    """The folder name of a user's own folder: the name itself when it is plain (lower-case letters, digits,
    `. _ @ + -`, not a reserved name), else a readable, safe form with a hash of the exact name (`~` never
    appears in a plain name, so a mapped name never equals another user's plain one, and names differing only
    in case never share a folder on a case-insensitive disk)."""
    if PLAIN_USER.fullmatch(user) and user not in RESERVED:
        return user
    readable = re.sub(r"[^a-z0-9._-]+", "_", user.lower()).strip("._-")[:40] or "user"
    return f"{readable}~{hashlib.sha256(user.encode('utf-8')).hexdigest()[:12]}"


def user_folder(root: str, user: str, create: bool = True) -> str:
    """`<root>/<user folder>`: where a user's own models live (made on first use, mode 0700)."""
    path = os.path.join(root, user_folder_name(user))
    if create and not os.path.isdir(path):
        try:
            os.makedirs(path, mode=FOLDER_MODE, exist_ok=True)
        except OSError as exc:
            raise FolderError(f"your folder ({user_folder_name(user)}) cannot be made under the batch root: "
                              f"{exc.strerror}; an admin must fix it", status=409) from None
    return path


def check_project_name(name: Any) -> str:
    if not isinstance(name, str) or not PROJECT_NAME.fullmatch(name):
        raise FolderError("folder: a project folder's name is 1-64 letters, digits or . _ - (starting with a "
                          "letter or digit)", status=400)
    return name


def project_folder(root: str, name: str) -> str:
    return os.path.join(root, PROJECTS, check_project_name(name))


def check_relative(value: Any, field: str) -> str:
    """A path relative to the person's folders: no absolute path, no `..`, nothing hidden, no NUL."""
    if not isinstance(value, str) or not value.strip():
        raise FolderError(f"{field}: expected a path relative to your folder (or projects/<name>/...)", 400)
    if len(value) > MAX_PATH:
        raise FolderError(f"{field}: at most {MAX_PATH} characters", 400)
    if "\0" in value or "\\" in value:
        raise FolderError(f"{field}: NUL and backslashes are not allowed", 400)
    if value.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", value):
        raise FolderError(f"{field}: {value!r} is not relative to your folder (absolute paths are refused)", 400)
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise FolderError(f"{field}: {value!r} leaves your folder ('..' is refused)", 400)
    if any(p.startswith(".") for p in parts):
        raise FolderError(f"{field}: {value!r} names a hidden folder or file (refused)", 400)
    return "/".join(parts)


def inside(path: str, folder: str) -> bool:
    return path == folder or os.path.commonpath([path, folder]) == folder


@dataclass(frozen=True)
class Space:
    """One folder a person may use: how they name it, where it really is, and whether they may write."""
    label: str  # "" for their own folder, "projects/<name>" for a project folder
    path: str  # real path
    writable: bool

    def named(self, relative: str) -> str:
        return f"{self.label}/{relative}" if self.label and relative else (self.label or relative)


@dataclass(frozen=True)
class Access:
    """The folders one user may use (their own, and the project folders shared with their teams)."""
    user: str
    root: str  # real path of the batch root
    own: Space
    projects: Mapping[str, Space]

    @classmethod
    def of(cls, root: str, user: str, grants: Mapping[str, str]) -> Access:
        """`grants`: project folder name -> "read" | "read-write" (the strongest of the user's teams')."""
        root = os.path.realpath(root)
        own = Space("", os.path.realpath(user_folder(root, user)), True)
        projects = {name: Space(f"{PROJECTS}/{name}", os.path.realpath(project_folder(root, name)),
                                level == READ_WRITE) for name, level in grants.items()}
        return cls(user, root, own, projects)

    def spaces(self) -> list[Space]:
        return [self.own, *self.projects.values()]

    def allows(self, real: str, want: str) -> bool:
        return any(inside(real, s.path) and (want == "read" or s.writable) for s in self.spaces())

    def _space(self, clean: str, original: str, field: str) -> tuple[Space, str]:
        """The folder a checked relative path starts in, and the rest of the path inside it."""
        parts = clean.split("/") if clean else []
        if not parts or parts[0] != PROJECTS:
            return self.own, clean
        if len(parts) < 2 or GLOB_CHARS.search(parts[1]):
            raise FolderError(f"{field}: {original!r}: name one project folder, projects/<name>/... "
                              "(no wildcards in the name)", 400)
        space = self.projects.get(parts[1])
        if space is None:  # not shared with the person, or not there: the same answer
            raise FolderError(f"{field}: {original!r}: there is no project folder {parts[1]!r} shared with you")
        return space, "/".join(parts[2:])

    def resolve(self, path: Any, want: str = "read", field: str = "path") -> str:
        """The real path `path` names, if the person may `want` ("read" | "write") it; FolderError otherwise."""
        if want not in WANTS:
            raise ValueError(f"want: one of {WANTS}")
        clean = check_relative(path, field)
        space, rest = self._space(clean, path, field)
        real = os.path.realpath(os.path.join(space.path, rest))
        self._check(real, want, path, field)
        return real

    def _check(self, real: str, want: str, named: str, field: str) -> None:
        if self.allows(real, want):
            return
        if want == "write" and self.allows(real, "read"):
            where = next(s for s in self.projects.values() if inside(real, s.path))
            raise FolderError(f"{field}: {named!r} is in {where.label}, which is shared with your team "
                              "read-only: choose a folder you may write to")
        raise FolderError(f"{field}: {named!r} leads outside your folders (through a symbolic link): refused")

    def expand(self, pattern: Any, field: str = "files") -> list[tuple[str, str]]:
        """A glob's matches inside the one folder it starts in, each re-checked after its links are resolved
        (a match leading outside the person's folders refuses the whole request, naming it): (name, real)."""
        clean = check_relative(pattern, field)
        space, rest = self._space(clean, pattern, field)
        if not rest:
            return []
        found = []
        for match in sorted(glob.glob(rest, root_dir=space.path, recursive=True)):
            named = space.named(match)
            real = os.path.realpath(os.path.join(space.path, match))
            self._check(real, "read", named, field)
            found.append((named, real))
        return found

    def shown(self, real: str) -> str:
        return Namer(self.root, self.user)(real)


class Namer:
    """How real paths under the root are shown to the person who owns a batch: relative to their own folder,
    or `projects/<name>/...`; anything else relative to the root (never a full server path)."""

    def __init__(self, root: str, owner: str) -> None:
        self.root = os.path.realpath(root)
        self.spaces = [("", os.path.realpath(user_folder(self.root, owner, create=False)))]
        projects = os.path.join(self.root, PROJECTS)
        if os.path.isdir(projects):
            self.spaces += [(f"{PROJECTS}/{e.name}", os.path.realpath(e.path))
                            for e in os.scandir(projects) if e.is_dir()]

    def __call__(self, real: str) -> str:
        for label, path in self.spaces:
            if inside(real, path):
                relative = os.path.relpath(real, path)
                return Space(label, path, False).named("" if relative == "." else relative)
        return os.path.relpath(real, self.root) if inside(real, self.root) else os.path.basename(real)

    def text(self, text: str) -> str:
        """A message with every server path in it named as above."""
        for label, path in sorted(self.spaces, key=lambda s: len(s[1]), reverse=True):
            text = text.replace(path + os.sep, f"{label}/" if label else "")
        return text.replace(self.root + os.sep, "")


def strongest(levels: Iterable[str]) -> str:
    return READ_WRITE if READ_WRITE in levels else READ


def access_for(store: Any, root: str, user: str) -> Access:
    """The user's folders from the store: their own, and the project folders granted to their team."""
    from cloud.skills.library import SkillLibrary

    teams = [SkillLibrary(store).membership(user).team]
    return Access.of(root, user, store.folders.folder_access(teams))
