"""Persistence in SQLite or PostgreSQL, by concern: each part owns its tables and is handed only to the code
that needs it (the host gate and the web's sign-in get `auth`, the run registry `leases`, the rendezvous
`deliveries`, the audit and usage writers `ledger`, ...).

    database.py       the connection, transactions, migrations (cloud/migrations/, run at start)
    schema.py         the tables the newest migration makes
    auth.py           users, tokens, web sessions, sign-in codes, host owners          store.auth
    user_settings.py  an admin's run policy and validation per user                     store.user_settings
    sessions.py       sessions and their transcripts                                    store.sessions
    leases.py         run leases (which process drives a run)                           store.leases
    deliveries.py     answers to pending requests, recorded once                        store.deliveries
    results.py        the person's copy of tool results, rendered images                store.results
    ledger.py         the audit log of scripts and the usage of model turns             store.ledger
    folders.py        project folders shared with teams                                 store.folders
    rule_sets.py      rule sets saved per team                                          store.rule_sets
    finding_runs.py   findings per model per check run, by severity                     store.finding_runs

The team library's tables (skills, versions, runs, teams) are cloud/skills/library.py's, on `store.db`.
`Store` still answers the flat names of the parts' methods (`store.get_session(...)` is
`store.sessions.get_session(...)`) for code not moved yet; new code names the part.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from cloud.schema_revision import Upgrade
from cloud.store.auth import TOKEN_SCOPES, USER_NAME, Auth, User, hash_token
from cloud.store.database import IN_BATCH, MAX_IDLE_CONNECTIONS, CoreTx, Database, Tx, is_database_url
from cloud.store.deliveries import DELIVERY_KEEP_S, Deliveries
from cloud.store.finding_runs import FindingRuns
from cloud.store.folders import FOLDER_ACCESS, FolderGrants
from cloud.store.leases import RunLeases
from cloud.store.ledger import Ledger
from cloud.store.results import Results
from cloud.store.rule_sets import RuleSets
from cloud.store.sessions import Sessions
from cloud.store.user_settings import UserSettings

__all__ = ["DELIVERY_KEEP_S", "FOLDER_ACCESS", "IN_BATCH", "MAX_IDLE_CONNECTIONS", "TOKEN_SCOPES", "USER_NAME",
           "Auth", "CoreTx", "Database", "Deliveries", "FindingRuns", "FolderGrants", "Ledger", "Results", "RuleSets", "RunLeases",
           "Sessions", "Store", "Tx", "User", "UserSettings", "hash_token", "is_database_url"]

# attribute -> part class, in the order of the table above
PARTS: dict[str, type] = {"auth": Auth, "user_settings": UserSettings, "sessions": Sessions, "leases": RunLeases,
                          "deliveries": Deliveries, "results": Results, "ledger": Ledger, "folders": FolderGrants,
                          "rule_sets": RuleSets, "finding_runs": FindingRuns}


def _flat_names() -> dict[str, str]:
    """Each public method of a part -> the part's attribute (no two parts share a method name)."""
    found: dict[str, str] = {}
    for attribute, part in PARTS.items():
        for name in vars(part):
            if not name.startswith("_") and callable(getattr(part, name)):
                if name in found or name in PARTS:  # a part's attribute would hide a flat name of the same
                    raise TypeError(f"store part {attribute}'s method {name} clashes with {found.get(name, name)}")
                found[name] = attribute
    return found


FLAT = _flat_names()


class Store:
    """One database and its parts. `Store(path_or_url)` opens (and migrates) it; hand a caller the part it needs."""

    auth: Auth
    user_settings: UserSettings
    sessions: Sessions
    leases: RunLeases
    deliveries: Deliveries
    results: Results
    ledger: Ledger
    folders: FolderGrants
    rule_sets: RuleSets
    finding_runs: FindingRuns

    def __init__(self, target: str | Path, migrate: bool = True):
        """`target`: a SQLite file path (":memory:" for a throwaway database) or a postgresql:// URL.
        `migrate=False` opens it as it is (for `nexus db current`)."""
        self.db = Database(target, migrate=migrate)
        for attribute, part in PARTS.items():
            setattr(self, attribute, part(self.db))

    def __getattr__(self, name: str) -> Any:
        # Only reached for names the instance lacks: the flat method names of the parts.
        attribute = FLAT.get(name)
        if attribute is None or "db" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self.__dict__[attribute], name)

    @property
    def path(self) -> str:
        return self.db.path

    @property
    def postgres(self) -> bool:
        return self.db.postgres

    @property
    def engine(self) -> Engine:
        return self.db.engine

    def migrate(self) -> Upgrade:
        return self.db.migrate()

    def schema_revision(self) -> str | None:
        return self.db.schema_revision()

    def close(self) -> None:
        self.db.close()

    # the connection itself, for the team library (cloud/skills/library.py) and tests that write raw rows
    @contextmanager
    def _write(self) -> Iterator[CoreTx]:
        with self.db.core_write() as tx:
            yield tx

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Mapping[str, Any]]:
        return self.db.read(sql, args)

    def _contains(self, expression: str) -> str:
        return self.db.contains(expression)
