"""Fixtures of the store tests: the same suite runs on SQLite and on a real PostgreSQL server.

PostgreSQL: a throwaway cluster started once per test session (``initdb`` + ``pg_ctl`` on a
temporary directory, trust authentication, listening on a unix socket in that directory only)
and stopped at the end. ``initdb`` refuses to run as root, so as root the cluster runs as the
``postgres`` user (``runuser``), which Debian's ``postgresql`` package creates. Each test gets
its own schema, so tests never see each other's conversations. The PostgreSQL cases are
skipped — with the reason — only where the server binaries or psycopg are not installed.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.children import child_env
from voxwire.store import ConversationStore, SQLiteStore

PG_BIN_GLOB = "/usr/lib/postgresql/*/bin"
ROOT = Path(__file__).resolve().parents[2]


def spawn(module: str, *args: str) -> subprocess.Popen[str]:
    """``python -m module args`` with this run's voxwire (tests/children.py), pipes for its
    output."""
    env = child_env()
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _pg_bin() -> Path | None:
    """The directory holding initdb and pg_ctl: PATH first, then Debian's versioned dirs."""
    found = shutil.which("initdb")
    if found is not None and shutil.which("pg_ctl") is not None:
        return Path(found).parent
    for directory in sorted(glob.glob(PG_BIN_GLOB), reverse=True):
        if (Path(directory) / "initdb").exists() and (Path(directory) / "pg_ctl").exists():
            return Path(directory)
    return None


def _as_cluster_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _why_no_postgres() -> str | None:
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        return 'psycopg is not installed (pip install "voxwire[postgres]")'
    if _pg_bin() is None:
        return (
            f"the PostgreSQL server binaries (initdb, pg_ctl) are not in PATH nor {PG_BIN_GLOB} "
            "(apt-get install postgresql; .ci/run does)"
        )
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run initdb as"
        if shutil.which("runuser") is None:
            return "running as root and runuser is missing (initdb refuses to run as root)"
    return None


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[str]:
    """A running throwaway PostgreSQL cluster; yields its libpq connection string."""
    reason = _why_no_postgres()
    if reason is not None:
        pytest.skip(reason)
    bin_dir = _pg_bin()
    assert bin_dir is not None
    root = Path(tempfile.mkdtemp(prefix="voxwire-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, user="postgres")
    data = root / "data"
    subprocess.run(
        _as_cluster_user(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
            ]
        ),
        check=True,
        capture_output=True,
    )
    options = f"-k {root} -c listen_addresses='' -c fsync=off -c max_connections=60"
    subprocess.run(
        _as_cluster_user(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(root / "log"),
                "-w",
                "start",
            ]
        ),
        check=True,
        capture_output=True,
    )
    try:
        yield f"host={root} user=postgres dbname=postgres"
    finally:
        subprocess.run(
            _as_cluster_user([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
            check=False,
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class Backend:
    """How one test opens its store: ``open()`` as many times as it likes (same data)."""

    name: str
    target: str  # the SQLite file, or the PostgreSQL connection string
    schema: str = ""

    async def open(self, **options: Any) -> ConversationStore:
        if self.name == "sqlite":
            return await SQLiteStore.open(self.target, **options)
        from voxwire.store.postgres import PostgresStore

        return await PostgresStore.open(self.target, schema=self.schema, **options)

    def execute(self, sql: str) -> list[tuple[Any, ...]]:
        """Run one SQL statement straight on the database (autocommit), as an operator would."""
        if self.name == "sqlite":
            with closing(sqlite3.connect(self.target, isolation_level=None)) as connection:
                return connection.execute(sql).fetchall()
        import psycopg

        with psycopg.connect(self.target, autocommit=True) as connection:
            connection.execute(f'SET search_path TO "{self.schema}"')
            cursor = connection.execute(sql)
            return cursor.fetchall() if cursor.description is not None else []

    def argv(self) -> list[str]:
        """Command-line arguments naming this store, for the writer processes (writer.py)."""
        return [self.name, self.target, self.schema or "-"]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "sqlite":
        return Backend("sqlite", str(tmp_path / "conversations.db"))
    conninfo = request.getfixturevalue("pg_cluster")
    return Backend("postgres", conninfo, schema=f"t_{uuid.uuid4().hex[:12]}")
