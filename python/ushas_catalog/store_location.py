"""Where the store is when nobody says: ONE default for the ``ushas`` command, ``ushas demo``,
``ushas_catalog.spark.configure()``, ``ushas spark-conf`` and the example configurations.

The default is ``sqlite:///<data dir>/ushas.db`` with the user's data directory of the XDG base directory
specification: ``$XDG_DATA_HOME/ushas`` (``~/.local/share/ushas`` when ``XDG_DATA_HOME`` is unset). It is
writable without root, one per user. ``USHAS_URI`` overrides it everywhere; a shared deployment names its
store (``fdb://``, ``postgresql://``) or its service (``http(s)://``) explicitly."""
from __future__ import annotations

import os
from pathlib import Path

#: the environment variable naming the store, for every entry point
URI_ENV = "USHAS_URI"

#: what to do about a store that does not exist, for a person at the command line
STORE_HINT = ("name the store with --uri URI (or the environment variable USHAS_URI), or create it with "
              "'ushas init' (the default store: sqlite:///$XDG_DATA_HOME/ushas/ushas.db, "
              "~/.local/share/ushas/ushas.db without XDG_DATA_HOME)")


def data_dir() -> Path:
    """The user's data directory of ushas: ``$XDG_DATA_HOME/ushas``, else ``~/.local/share/ushas``."""
    base = os.environ.get("XDG_DATA_HOME", "").strip()
    # the XDG specification: a relative XDG_DATA_HOME is invalid and ignored
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "share"
    return root / "ushas"


def default_store_path() -> Path:
    """The file of the default embedded store."""
    return data_dir() / "ushas.db"


def default_uri() -> str:
    """``$USHAS_URI`` when set, else the default embedded store (:func:`default_store_path`)."""
    given = os.environ.get(URI_ENV, "").strip()
    return given or f"sqlite:///{default_store_path()}"


__all__ = ["URI_ENV", "STORE_HINT", "data_dir", "default_store_path", "default_uri"]
