"""What several commands share: the store location and the error exit."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

if TYPE_CHECKING:
    from cloud.store import Store


def default_db() -> str:
    # NEXUS_DATABASE_URL (postgresql://...) for several machines; else a SQLite file.
    return (os.environ.get("NEXUS_DATABASE_URL") or os.environ.get("NEXUS_DB")
            or str(Path(platformdirs.user_data_dir("nexusai")) / "nexus.db"))


def open_store(args: argparse.Namespace) -> Store:
    # Imported here: SQLAlchemy and Alembic take a second or more, spent only by the commands that need them.
    from cloud.store import Store

    return Store(args.db or default_db())


def with_db(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--db", help="SQLite database (default: $NEXUS_DB or the user data directory)")
    return parser


def fail(message: str, code: int = 2) -> int:
    print(f"nexus: {message}", file=sys.stderr)
    return code
