"""The FoundationDB engine: ``fdb:///path/to/fdb.cluster`` or ``fdb://`` (the default cluster file).

It wraps the official ``foundationdb`` bindings; FoundationDB itself provides snapshot
reads, read-your-writes, serializable commits with key-range conflicts, atomic ``ADD`` and
versionstamps. This module adds only what makes it interchangeable with ``sqlite://``:

- the API version is chosen once, here (:data:`API_VERSION`): 730 (FoundationDB 7.3, the
  newest stable line), or the bindings' newest if they are older;
- every operation goes through :class:`~ushas_catalog.kv.guard.TransactionGuard`, so the
  key / value / transaction size / 5 s limits raise the same
  :class:`~ushas_catalog.errors.LimitExceeded` at the same operation as on the embedded engine;
- :meth:`FdbDatabase.run` is FoundationDB's retry loop: a retryable ``FDBError`` (conflict,
  transaction too old, ...) is passed to ``tr.on_error``, which backs off and resets the
  transaction, and the function runs again, at most ``max_retries`` times (then
  :class:`~ushas_catalog.errors.Conflict`). As with ``fdb.transactional``, an error that
  may have committed (``commit_unknown_result``) is retried too: functions must be idempotent;
- errors are translated: size errors from the cluster -> ``LimitExceeded``, a timeout or any
  other non-retryable error -> :class:`~ushas_catalog.errors.StoreUnavailable`;
- ``get_versionstamp()`` returns the 10-byte versionstamp after a successful commit.

The bindings need the FoundationDB C client library (``libfdb_c``); without it, opening an
``fdb://`` URI raises ``StoreUnavailable`` naming the missing library.
"""
from __future__ import annotations

import os
import platform
from typing import Any, Callable, Iterator, TypeVar
from urllib.parse import unquote, urlsplit

from ..errors import Conflict, InvalidArgument, LimitExceeded, StoreBusy, StoreNotFound, StoreUnavailable
from .base import Database, KeyValue, RetryableError, Transaction
from .guard import TransactionGuard
from .ryw import MASK64

T = TypeVar("T")

#: the FoundationDB API version this project speaks (the one place it is chosen)
PREFERRED_API_VERSION = 730
#: a transaction that gets no answer from the cluster for this long fails (instead of hanging)
TIMEOUT_MS = 60_000

_SIZE_ERRORS = {2101: "transaction_bytes", 2102: "key_bytes", 2103: "value_bytes"}
#: retryable errors that mean "the cluster is overloaded", not "what you read changed": past the
#: retry budget they end as StoreBusy, like SQLITE_BUSY on the embedded engine (process_behind,
#: proxy_memory_limit_exceeded, batch_transaction_throttled, tag_throttled, grv_proxy_memory_limit_exceeded)
_BUSY_ERRORS = frozenset({1037, 1040, 1051, 1078, 1213})
_TIMED_OUT = 1031


def client_library_name() -> str:
    system = platform.system()
    if system == "Darwin":
        return "libfdb_c.dylib"
    if system == "Windows":
        return "fdb_c.dll"
    return "libfdb_c.so"


def api_version() -> int:
    """:data:`PREFERRED_API_VERSION`, or the installed bindings' newest if lower."""
    import fdb

    return min(PREFERRED_API_VERSION, fdb.LATEST_API_VERSION)


def load_bindings() -> Any:
    """The ``fdb`` module with the API version selected (idempotent)."""
    try:
        import fdb
    except ImportError as exc:
        raise StoreUnavailable("the foundationdb Python package is not installed "
                               "(pip install foundationdb)") from exc
    version = api_version()
    try:
        fdb.api_version(version)
    except RuntimeError as exc:           # another API version was selected in this process
        raise StoreUnavailable(f"cannot use FoundationDB API version {version}: {exc}") from exc
    except Exception as exc:              # the bindings could not load libfdb_c
        lib = client_library_name()
        raise StoreUnavailable(
            f"the FoundationDB C client library {lib} (libfdb_c) is not installed or not on the "
            f"library path, so fdb:// stores cannot be opened; install the FoundationDB client "
            f"package matching your cluster ({exc})", library=lib) from exc
    return fdb


def cluster_file_of(uri: str) -> str | None:
    """``fdb://`` -> ``None`` (the default cluster file); ``fdb:///path/fdb.cluster`` -> the path."""
    parts = urlsplit(uri)
    if parts.scheme != "fdb" or parts.netloc or parts.query or parts.fragment:
        raise InvalidArgument(f"invalid FoundationDB URI {uri!r}: expected fdb:///path/to/fdb.cluster or fdb://")
    path = unquote(parts.path)
    if path in ("", "/"):
        return None
    return path


class FdbDatabase(Database):
    """A FoundationDB database opened through the official bindings."""

    def __init__(self, uri: str, fdb_module: Any, db: Any, cluster_file: str | None) -> None:
        self.uri = uri
        self.cluster_file = cluster_file
        self._fdb = fdb_module
        self._db = db

    @classmethod
    def open(cls, uri: str, *, create: bool = True) -> "FdbDatabase":
        """``create`` is accepted for the engines' common signature: a FoundationDB cluster is
        created by its operator, never by opening it (a named cluster file that does not exist
        is ``StoreNotFound``). Opening takes no lock; reads run at a read version."""
        cluster_file = cluster_file_of(uri)
        fdb = load_bindings()
        if cluster_file is not None and not os.path.exists(cluster_file):
            raise StoreNotFound(f"store not found: {cluster_file} (no such FoundationDB cluster file)")
        try:
            db = fdb.open(cluster_file)
            db.options.set_transaction_timeout(TIMEOUT_MS)
        except fdb.FDBError as exc:
            raise StoreUnavailable(f"cannot open FoundationDB at {cluster_file or 'the default cluster file'}: "
                                   f"{exc}") from exc
        return cls(uri, fdb, db, cluster_file)

    def create_transaction(self) -> "FdbTransaction":
        if self._db is None:
            raise StoreUnavailable(f"FoundationDB store {self.uri} is closed")
        return FdbTransaction(self, self._db.create_transaction())

    def run(self, fn: Callable[[Transaction], T]) -> T:
        tr = self.create_transaction()
        attempts = 0
        while True:
            try:
                result = fn(tr)
                tr.commit()
                return result
            except RetryableError as exc:
                attempts += 1
                if attempts > self.max_retries:
                    tr.cancel()
                    if getattr(getattr(exc, "fdb_error", None), "code", None) in _BUSY_ERRORS:
                        raise StoreBusy(f"FoundationDB stayed overloaded through {attempts} attempts: {exc}; "
                                        f"try again later") from exc
                    raise Conflict(f"transaction did not commit after {attempts} attempts: {exc}") from exc
                try:
                    tr.on_error(exc)
                except BaseException:
                    tr.cancel()
                    raise
            except BaseException:
                tr.cancel()
                raise

    def translate(self, exc: Exception) -> Exception:
        """An ``FDBError`` as this project's error."""
        fdb = self._fdb
        code = getattr(exc, "code", None)
        if isinstance(exc, fdb.FDBError) and fdb.predicates.is_retryable(exc):
            retry = RetryableError(f"FoundationDB: {exc}")
            retry.fdb_error = exc  # type: ignore[attr-defined]
            return retry
        if code in _SIZE_ERRORS:
            return LimitExceeded(f"FoundationDB refused the transaction: {exc} (limit {_SIZE_ERRORS[code]})",
                                 limit=_SIZE_ERRORS[code])
        if code == _TIMED_OUT:
            return StoreUnavailable(f"no answer from FoundationDB ({self.cluster_file or 'default cluster file'}) "
                                    f"within {TIMEOUT_MS // 1000} s: is the cluster reachable? ({exc})")
        return StoreUnavailable(f"FoundationDB error: {exc}")

    def close(self) -> None:
        # the bindings keep one network thread and one handle per cluster file for the process
        self._db = None


class FdbTransaction(Transaction):
    """Our interface over one ``fdb.Transaction`` (reused across the retries of ``run``)."""

    def __init__(self, db: FdbDatabase, tr: Any) -> None:
        self._db = db
        self._fdb = db._fdb
        self._tr = tr
        self._guard = TransactionGuard(db.limits)
        self._wrote = False
        self._stamp_future: Any = None
        self._versionstamp: bytes | None = None
        self._done = False

    def _live(self) -> Any:
        if self._done:
            raise InvalidArgument("transaction already committed or cancelled")
        self._guard.check_time()
        return self._tr

    def _call(self, op: Callable[[], T]) -> T:
        try:
            return op()
        except self._fdb.FDBError as exc:
            raise self._db.translate(exc) from exc

    # --- reads ---------------------------------------------------------------------------
    def get(self, key: bytes, *, snapshot: bool = False) -> bytes | None:
        tr = self._live()
        k = self._guard.key(key)
        source = tr.snapshot if snapshot else tr
        return self._call(lambda: source.get(k).value)

    def get_range(self, begin: bytes, end: bytes, *, limit: int = 0, reverse: bool = False,
                  snapshot: bool = False) -> Iterator[KeyValue]:
        tr = self._live()
        b, e = self._guard.range(begin, end)
        if not isinstance(limit, int) or limit < 0:
            raise InvalidArgument(f"range limit must be an int >= 0 (0 = no limit), not {limit!r}")
        source = tr.snapshot if snapshot else tr
        rows = self._call(lambda: source.get_range(b, e, limit=limit, reverse=reverse,
                                                    streaming_mode=self._fdb.StreamingMode.iterator))
        return self._stream(iter(rows))

    def _stream(self, rows: Iterator[Any]) -> Iterator[KeyValue]:
        while True:
            self._live()
            try:
                kv = next(rows)
            except StopIteration:
                return
            except self._fdb.FDBError as exc:
                raise self._db.translate(exc) from exc
            yield KeyValue(kv.key, kv.value)

    # --- writes ------------------------------------------------------------------------------
    def set(self, key: bytes, value: bytes) -> None:
        tr = self._live()
        k, v = self._guard.on_set(key, value)
        self._call(lambda: tr.set(k, v))
        self._wrote = True

    def clear(self, key: bytes) -> None:
        tr = self._live()
        k = self._guard.on_clear(key)
        self._call(lambda: tr.clear(k))
        self._wrote = True

    def clear_range(self, begin: bytes, end: bytes) -> None:
        tr = self._live()
        b, e = self._guard.on_clear_range(begin, end)
        if b < e:
            self._call(lambda: tr.clear_range(b, e))
            self._wrote = True

    def add(self, key: bytes, delta: int) -> None:
        tr = self._live()
        k, d = self._guard.on_add(key, delta)
        self._call(lambda: tr.add(k, (d & MASK64).to_bytes(8, "little")))
        self._wrote = True

    def set_versionstamped_key(self, key: bytes, value: bytes) -> None:
        tr = self._live()
        body, v, offset = self._guard.on_versionstamped_key(key, value)
        self._call(lambda: tr.set_versionstamped_key(body + offset.to_bytes(4, "little"), v))
        self._wrote = True

    def get_versionstamp(self) -> bytes:
        if self._versionstamp is None:
            raise InvalidArgument("no versionstamp: the transaction has not committed a write")
        return self._versionstamp

    # --- lifecycle ---------------------------------------------------------------------------
    def commit(self) -> None:
        tr = self._live()
        if self._wrote:
            self._stamp_future = self._call(tr.get_versionstamp)
        self._call(lambda: tr.commit().wait())
        if self._stamp_future is not None:
            self._versionstamp = bytes(self._call(lambda: self._stamp_future.value))
        self._done = True

    def on_error(self, exc: RetryableError) -> None:
        """FoundationDB's backoff and reset after a retryable error, then a fresh attempt."""
        error = getattr(exc, "fdb_error", None)
        if error is None:
            raise exc
        self._call(lambda: self._tr.on_error(error).wait())
        self._guard = TransactionGuard(self._db.limits)
        self._wrote = False
        self._stamp_future = None
        self._versionstamp = None
        self._done = False
        for name in [n for n in vars(self) if n.startswith("ushas_")]:
            # what the catalog noted in the failed attempt (a requirement it checked) was read at that
            # attempt's read version: the next attempt checks again, as a new transaction would
            del self.__dict__[name]

    def cancel(self) -> None:
        if not self._done:
            self._done = True
            try:
                self._tr.cancel()
            except self._fdb.FDBError:
                pass
