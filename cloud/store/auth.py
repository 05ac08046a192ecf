"""Who may do what: users and their hashed tokens, browser web sessions, one-time sign-in codes, host owners.

Only hashes of tokens, web session ids and sign-in codes are stored. Admin rights and the scope (user or host)
belong to a token, never to a user: another token of the same user promotes nothing.
"""
from __future__ import annotations

import hashlib
import re
import secrets
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cloud.store.database import Database

TABLES = ("users", "tokens", "web_sessions", "signin_codes", "host_owners")
TOKEN_SCOPES = ("user", "host")  # a host token can connect a host runtime and nothing else
USER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")  # shown in pages and logs: no spaces or controls
WEB_SESSION_KEEP_S = 86400.0  # how long an expired web session's row is kept


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class User:
    """Who a request acts for. `is_admin` and `scope` belong to the token (or web session) presented."""

    name: str
    is_admin: bool
    policy: str
    token_id: str | None = None
    scope: str = "user"


def _user(row: Mapping[str, Any]) -> User:
    return User(row["name"], bool(row["is_admin"]), row["policy"], row["token_id"], row["scope"])


_USER_COLUMNS = "u.name, t.is_admin, u.policy, t.id AS token_id, t.scope"


class Auth:
    def __init__(self, db: Database) -> None:
        self.db = db

    # users and tokens
    def create_token(self, user_name: str, admin: bool = False, scope: str = "user") -> str:
        """A new token for user_name (created on first use). Admin rights belong to this token only."""
        if not USER_NAME.fullmatch(user_name):
            raise ValueError("a user name is 1-64 letters, digits or . _ @ + - (starting with a letter or digit)")
        if scope not in TOKEN_SCOPES:
            raise ValueError(f"token scope must be one of {TOKEN_SCOPES}")
        if admin and scope != "user":
            raise ValueError("a host token cannot be an admin token")
        token = "nx_" + secrets.token_urlsafe(32)
        now = time.time()
        with self.db.write() as db:
            db.execute("INSERT INTO users (name, created) VALUES (?, ?) ON CONFLICT DO NOTHING", (user_name, now))
            db.execute("INSERT INTO tokens (id, token_hash, user_name, created, is_admin, scope) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (uuid.uuid4().hex[:12], hash_token(token), user_name, now, int(admin), scope))
        return token

    def user_for_token(self, token: str) -> User | None:
        rows = self.db.read(f"SELECT {_USER_COLUMNS} FROM tokens t JOIN users u ON u.name = t.user_name "
                            "WHERE t.token_hash = ? AND t.revoked IS NULL", (hash_token(token),))
        return _user(rows[0]) if rows else None

    def token_id(self, token: str) -> str | None:
        """The id of a token (to revoke it later), revoked or not; None for a token never issued here."""
        rows = self.db.read("SELECT id FROM tokens WHERE token_hash = ?", (hash_token(token),))
        return rows[0]["id"] if rows else None

    def token_active(self, token_id: str) -> bool:
        return bool(self.db.read("SELECT 1 FROM tokens WHERE id = ? AND revoked IS NULL", (token_id,)))

    def list_tokens(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.read(
            "SELECT id, user_name, created, revoked, is_admin, scope FROM tokens ORDER BY created")]

    def revoke_token(self, token_id: str) -> bool:
        """Revoke a token; the web sessions signed in with it end with it."""
        now = time.time()
        with self.db.write() as db:
            cur = db.execute("UPDATE tokens SET revoked = ? WHERE id = ? AND revoked IS NULL", (now, token_id))
            db.execute("UPDATE web_sessions SET revoked = ? WHERE token_id = ? AND revoked IS NULL", (now, token_id))
            return cur.rowcount > 0

    def set_token_admin(self, token_id: str, admin: bool) -> bool:
        """Promote or demote one active user token (host tokens are never admin)."""
        with self.db.write() as db:
            return db.execute("UPDATE tokens SET is_admin = ? WHERE id = ? AND revoked IS NULL AND scope = 'user'",
                              (int(admin), token_id)).rowcount > 0

    def admin_users(self) -> set[str]:
        """Users holding at least one active admin token."""
        return {r["user_name"] for r in self.db.read(
            "SELECT DISTINCT user_name FROM tokens WHERE is_admin = 1 AND revoked IS NULL")}

    def get_user(self, user_name: str) -> User | None:
        """The user's record; is_admin says whether they hold any active admin token."""
        rows = self.db.read("SELECT name, policy FROM users WHERE name = ?", (user_name,))
        return User(rows[0]["name"], user_name in self.admin_users(), rows[0]["policy"]) if rows else None

    # browser sign-in: a web session id in the cookie, never the token itself
    def create_web_session(self, token_id: str, ttl_s: float) -> str:
        session_id = "ws_" + secrets.token_urlsafe(32)
        now = time.time()
        with self.db.write() as db:
            db.execute("INSERT INTO web_sessions (id_hash, token_id, created, expires) VALUES (?, ?, ?, ?)",
                       (hash_token(session_id), token_id, now, now + ttl_s))
        return session_id

    def user_for_web_session(self, session_id: str) -> User | None:
        rows = self.db.read(
            f"SELECT {_USER_COLUMNS} FROM web_sessions w JOIN tokens t ON t.id = w.token_id "
            "JOIN users u ON u.name = t.user_name WHERE w.id_hash = ? AND w.revoked IS NULL AND w.expires > ? "
            "AND t.revoked IS NULL", (hash_token(session_id), time.time()))
        return _user(rows[0]) if rows else None

    def end_web_session(self, session_id: str) -> None:
        now = time.time()
        with self.db.write() as db:
            db.execute("UPDATE web_sessions SET revoked = ? WHERE id_hash = ? AND revoked IS NULL",
                       (now, hash_token(session_id)))
            db.execute("DELETE FROM web_sessions WHERE expires < ?", (now - WEB_SESSION_KEEP_S,))

    def create_signin_code(self, token: str, ttl_s: float = 86400.0) -> str:
        """A one-time code that signs a browser in with `token` (the demo's link; the token stays off URLs)."""
        rows = self.db.read("SELECT id FROM tokens WHERE token_hash = ? AND revoked IS NULL", (hash_token(token),))
        if not rows:
            raise ValueError("no active token to make a sign-in code for")
        code = "sc_" + secrets.token_urlsafe(24)
        with self.db.write() as db:
            db.execute("INSERT INTO signin_codes (code_hash, token_id, expires) VALUES (?, ?, ?)",
                       (hash_token(code), rows[0]["id"], time.time() + ttl_s))
        return code

    def redeem_signin_code(self, code: str) -> str | None:
        """The token id a one-time code stands for, once; None when unknown, used, expired or revoked."""
        now = time.time()
        with self.db.write() as db:
            # The update is the check: of two redemptions at once, only one changes the row.
            used = db.execute("UPDATE signin_codes SET used = ? WHERE code_hash = ? AND used IS NULL AND expires > ? "
                              "AND token_id IN (SELECT id FROM tokens WHERE revoked IS NULL)",
                              (now, hash_token(code), now)).rowcount
            if not used:
                return None
            return db.execute("SELECT token_id FROM signin_codes WHERE code_hash = ?",
                              (hash_token(code),)).fetchone()[0]

    # host ownership outlives a server restart: a host id is its first user's for good
    def claim_host(self, host_id: str, user_name: str) -> bool:
        """Record user_name as the owner of host_id; False when another user owns it."""
        now = time.time()
        with self.db.write() as db:
            db.execute("INSERT INTO host_owners (host_id, user_name, first_seen, last_seen) "
                       "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING", (host_id, user_name, now, now))
            return db.execute("UPDATE host_owners SET last_seen = ? WHERE host_id = ? AND user_name = ?",
                              (now, host_id, user_name)).rowcount > 0

    def host_owner(self, host_id: str) -> str | None:
        rows = self.db.read("SELECT user_name FROM host_owners WHERE host_id = ?", (host_id,))
        return rows[0]["user_name"] if rows else None
