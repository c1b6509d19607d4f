"""``from voxwire.store import PostgresStore`` works (as README and docs/persistence.md write
it), and importing ``voxwire.store`` alone does not import psycopg."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.children import child_env

PROBE = """
import sys
import voxwire.store
assert "psycopg" not in sys.modules, "voxwire.store imported psycopg"
from voxwire.store import PostgresStore
print(PostgresStore.__module__, "psycopg" in sys.modules)
"""


def test_postgres_store_is_exported_on_first_use() -> None:
    pytest.importorskip("psycopg")
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=child_env(), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["voxwire.store.postgres", "True"]


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import voxwire.store

    with pytest.raises(AttributeError, match="has no attribute 'PostgreStore'"):
        voxwire.store.PostgreStore  # noqa: B018
