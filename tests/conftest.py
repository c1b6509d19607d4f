"""Fixtures shared across test folders: the throwaway PostgreSQL cluster of the store tests
(tests/store/conftest.py), for the docs' and the examples' PostgreSQL blocks — started once for
all of them, only when one asks for it."""

from tests.store.conftest import pg_cluster

__all__ = ["pg_cluster"]
