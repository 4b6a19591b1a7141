"""Make ``fdb.tuple`` versionstamps work without the FoundationDB C client library.

``fdb.tuple.Versionstamp.to_bytes`` (used by ``fdb.tuple.pack`` and
``pack_with_versionstamp`` for any tuple holding a :class:`fdb.tuple.Versionstamp`) checks
``isinstance(tr_version, fdb.impl.Value)``. ``fdb.impl`` is only an attribute of ``fdb`` once
it has been imported, and importing it loads ``libfdb_c`` — so on a machine without the
client library (where the embedded engine is the only engine) packing a versionstamped key
raises ``AttributeError: module 'fdb' has no attribute 'impl'``, and with the library it
fails the same way until something imports ``fdb.impl``.

:func:`ensure_tuple_versionstamps` imports ``fdb.impl`` when the library is there (this
selects no API version), and otherwise binds ``fdb.impl`` to a placeholder whose ``Value``
class has no instances (there can be no ``fdb.impl.Value`` without the library). The
placeholder is not registered in ``sys.modules``, so a later ``fdb.api_version(...)`` still
tries the real import and fails with its own error. ``ushas_catalog.kv`` calls this on import.
"""
from __future__ import annotations

import types


class _NoFutureValue:
    """Stands for ``fdb.impl.Value`` when ``libfdb_c`` is absent: never instantiated."""


def ensure_tuple_versionstamps() -> None:
    import fdb

    if getattr(fdb, "impl", None) is not None:
        return
    try:
        import fdb.impl  # noqa: F401  (loads libfdb_c; selects no API version)
    except Exception:  # noqa: BLE001 - optional engine: any failure to load it means absent
        placeholder = types.ModuleType("fdb.impl", "placeholder: libfdb_c is not installed")
        placeholder.Value = _NoFutureValue  # type: ignore[attr-defined]
        fdb.impl = placeholder  # type: ignore[attr-defined]
