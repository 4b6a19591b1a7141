"""The tests' PostgreSQL server: :mod:`ushas_catalog.pg_local` (fixture ``postgres`` in tests/conftest.py)."""
from ushas_catalog.pg_local import PASSWORD, PASSWORD_USER, PgServer, free_port, start_server

__all__ = ["PASSWORD", "PASSWORD_USER", "PgServer", "free_port", "start_server"]
