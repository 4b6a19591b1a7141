"""The one transaction interface every engine implements.

Semantics are FoundationDB's: a transaction reads a consistent snapshot, sees its own
writes, is serializable (a conflicting concurrent commit makes ``commit`` raise
:class:`RetryableError`), and is bound by FoundationDB's limits (:class:`Limits`).
Code written against this module behaves the same on ``sqlite://`` and ``fdb://``.

Keys and values are ``bytes``. Keys are normally packed with ``fdb.tuple`` by
:mod:`ushas_catalog.keyspace`; engines never interpret them except for versionstamps.

The engines: :mod:`ushas_catalog.kv.sqlite` (embedded, the default) and
:mod:`ushas_catalog.kv.fdb` (FoundationDB); each module's docstring states how it meets
this contract. Limits and argument checks are shared (:mod:`ushas_catalog.kv.guard`):
oversized keys, values, transactions and transactions older than 5 s raise
:class:`~ushas_catalog.errors.LimitExceeded` naming the limit, keys in the system keyspace
(``b"\xff"``...) raise :class:`~ushas_catalog.errors.InvalidArgument`, on every engine.
A transaction must not be used after ``commit``/``cancel`` (nor its range iterators).
Readers never wait for writers (snapshot reads; opening a store takes no lock unless it
creates it). A store locked by another process's write past the retry budget is
:class:`~ushas_catalog.errors.StoreBusy` (retry later), never ``Conflict`` (what was read
changed); ``open_database(uri, create=False)`` never creates a store.
``snapshot=True`` is a hint: FoundationDB then skips the read conflict; the embedded engine
conflicts on any overtaken snapshot anyway.
"""
from __future__ import annotations

import functools
import inspect
import random
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, TypeVar, ParamSpec

from ..errors import Conflict, StoreBusy, StoreUnavailable
from .deadline import check as check_deadline

T = TypeVar("T")
P = ParamSpec("P")


@dataclass(frozen=True, slots=True)
class Limits:
    """FoundationDB's documented limits; every engine enforces them."""

    key_bytes: int = 10_000
    value_bytes: int = 100_000
    transaction_bytes: int = 10_000_000
    transaction_seconds: float = 5.0


FDB_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: bytes
    value: bytes


class RetryableError(Exception):
    """A transaction failed in a way that retrying it from the start may fix
    (conflict, transaction too old, engine busy). Raised by engines, caught by
    :meth:`Database.run`; never seen by callers of ``run``."""


class BusyError(RetryableError):
    """The store is locked by another process's write (SQLite's ``SQLITE_BUSY``). Retried like a
    conflict while the call is younger than :meth:`Database.busy_budget_s`; after that
    :meth:`Database.run` raises :class:`~ushas_catalog.errors.StoreBusy`, not ``Conflict``."""


class UnreachableError(RetryableError):
    """The engine's server could not be reached (connection refused or lost before the commit was
    sent: nothing was applied). Retried while the call is younger than :meth:`Database.unreachable_budget_s`;
    after that :meth:`Database.run` raises :class:`~ushas_catalog.errors.StoreUnavailable` with one line
    naming the server (the PostgreSQL engine)."""


class CommitUnknownResult(RetryableError):
    """FoundationDB's ``commit_unknown_result`` (1021): the commit may or may not have been applied.
    Retried like any retryable error, so a transaction must be idempotent to be applied once (a
    fenced write checks its recorded outcome: :mod:`ushas_catalog.data.write_fence`). Tests inject it with
    :meth:`Database.inject_commit_unknown_result`."""


class Transaction(ABC):
    """One FoundationDB-style transaction. Obtain one from :meth:`Database.run`."""

    # --- reads -------------------------------------------------------------------
    @abstractmethod
    def get(self, key: bytes, *, snapshot: bool = False) -> bytes | None:
        """The value at ``key`` or ``None``. ``snapshot=True`` reads without adding a read conflict."""

    @abstractmethod
    def get_range(self, begin: bytes, end: bytes, *, limit: int = 0, reverse: bool = False,
                  snapshot: bool = False) -> Iterator[KeyValue]:
        """Key-values with ``begin <= key < end`` in key order (descending if ``reverse``),
        at most ``limit`` of them (0 = no limit). Streamed: iterating fetches in batches."""

    def get_range_startswith(self, prefix: bytes, *, limit: int = 0, reverse: bool = False,
                             snapshot: bool = False) -> Iterator[KeyValue]:
        return self.get_range(prefix, strinc(prefix), limit=limit, reverse=reverse, snapshot=snapshot)

    # --- writes ------------------------------------------------------------------
    @abstractmethod
    def set(self, key: bytes, value: bytes) -> None: ...

    @abstractmethod
    def clear(self, key: bytes) -> None: ...

    @abstractmethod
    def clear_range(self, begin: bytes, end: bytes) -> None:
        """Remove every key with ``begin <= key < end``."""

    def set_many(self, pairs: Iterable[tuple[bytes, bytes]]) -> None:
        """``set(key, value)`` of each pair, in order (an engine may check and buffer them in
        one step: the search index merge writes thousands)."""
        for key, value in pairs:
            self.set(key, value)

    def clear_range_startswith(self, prefix: bytes) -> None:
        self.clear_range(prefix, strinc(prefix))

    @abstractmethod
    def add(self, key: bytes, delta: int) -> None:
        """Atomic add of a signed 64-bit little-endian integer (FDB ``MutationType.ADD``).
        Adds no read conflict: concurrent adds never conflict."""

    @abstractmethod
    def set_versionstamped_key(self, key: bytes, value: bytes) -> None:
        """FDB ``SET_VERSIONSTAMPED_KEY``: ``key`` ends with a 4-byte little-endian offset
        (as produced by ``fdb.tuple.pack_with_versionstamp``) of a 10-byte placeholder that
        the engine fills with the commit versionstamp. Keys so written are strictly
        increasing in commit order across all processes."""

    @abstractmethod
    def get_versionstamp(self) -> bytes:
        """The 10-byte versionstamp of this transaction; valid after a successful commit."""

    # --- lifecycle (used by Database.run) ----------------------------------------
    @abstractmethod
    def commit(self) -> None:
        """Make the writes durable. Raises :class:`RetryableError` on conflict."""

    @abstractmethod
    def cancel(self) -> None:
        """Abandon the transaction; nothing it wrote is kept."""


class Database(ABC):
    """An opened engine. Cheap to share; transactions are not shared across threads."""

    uri: str
    limits: Limits = FDB_LIMITS
    #: retries of one transaction before :class:`Conflict` is raised
    max_retries: int = 100
    #: how long one attempt waits for another process's write lock (the engine's busy timeout)
    busy_timeout_s: float = 5.0
    #: attempts after the first that may wait that long before :class:`~ushas_catalog.errors.StoreBusy`
    max_busy_retries: int = 2

    #: test hook: the next this many successful commits of :meth:`run` raise
    #: :class:`CommitUnknownResult` after committing (:meth:`inject_commit_unknown_result`)
    _unknown_results: int = 0

    def inject_commit_unknown_result(self, count: int = 1) -> None:
        """Test hook: the next ``count`` commits through :meth:`run` are applied and then raise
        :class:`CommitUnknownResult`, as a FoundationDB commit whose answer was lost can; the retry
        loop runs the transaction again."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"count must be an int >= 0, not {count!r}")
        self._unknown_results = count

    def _after_commit(self) -> None:
        if self._unknown_results > 0:
            self._unknown_results -= 1
            raise CommitUnknownResult("commit_unknown_result (injected): the transaction may have committed")

    #: how long :meth:`run` keeps retrying a server it cannot reach (:class:`UnreachableError`)
    unreachable_s: float = 10.0

    def unreachable_budget_s(self) -> float:
        return self.unreachable_s

    def busy_budget_s(self) -> float:
        """How long :meth:`run` keeps retrying a store locked by another writer."""
        return self.busy_timeout_s * (self.max_busy_retries + 1)

    @abstractmethod
    def create_transaction(self) -> Transaction: ...

    def create_retry_transaction(self) -> Transaction:
        """The transaction of :meth:`run`'s attempts after a conflict (by default :meth:`create_transaction`).
        An engine whose conflicts are coarse may make it one that cannot conflict again (PostgreSQL: it takes
        the store's commit lock first), so that a transaction that lost once is not overtaken forever."""
        return self.create_transaction()

    @abstractmethod
    def close(self) -> None: ...

    def run(self, fn: Callable[[Transaction], T]) -> T:
        """Run ``fn(tr)`` in a transaction and commit it, retrying from the start with
        bounded, jittered exponential backoff on :class:`RetryableError` (the retry loop
        of ``fdb.transactional``). ``fn`` must be safe to run more than once. A store
        still locked by another writer after :meth:`busy_budget_s` raises ``StoreBusy``;
        conflicts after :attr:`max_retries` raise ``Conflict``."""
        delay = 0.001
        busy = 0
        attempt = 0
        started = time.monotonic()
        while True:
            tr = self.create_retry_transaction() if attempt else self.create_transaction()
            try:
                result = fn(tr)
                tr.commit()
                self._after_commit()
                return result
            except RetryableError as exc:
                tr.cancel()
                check_deadline("retrying the transaction on a busy store")
                waited = time.monotonic() - started
                if isinstance(exc, BusyError):
                    busy += 1
                    if waited > self.busy_budget_s():
                        raise StoreBusy(f"the store {self.uri} stayed locked by another process's write for "
                                        f"{waited:.1f} s ({busy} busy attempt(s)): {exc}; try again later",
                                        waited_s=round(waited, 3)) from exc
                if isinstance(exc, UnreachableError) or getattr(exc, "server_lost", False):
                    # the server is down or restarting: not a conflict, retried for a while, not counted
                    if waited > self.unreachable_budget_s():
                        raise StoreUnavailable(f"{exc} (still failing after {waited:.1f} s; try again when the "
                                               f"server is back)", waited_s=round(waited, 3)) from exc
                    delay = max(delay, 0.05)
                else:
                    if attempt == self.max_retries:
                        raise Conflict(f"transaction did not commit after {attempt + 1} attempts: {exc}") from exc
                    attempt += 1
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 0.25)
            except BaseException:
                tr.cancel()
                raise

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def transactional(func: Callable[..., T]) -> Callable[..., T]:
    """Like ``fdb.transactional``: the decorated function takes a transaction as the
    parameter named ``tr``; callers may pass a :class:`Database` there instead, and the
    call then runs in its own retried transaction."""
    params = list(inspect.signature(func).parameters)
    index = params.index("tr")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        if "tr" in kwargs:
            target = kwargs["tr"]
            if isinstance(target, Database):
                return target.run(lambda tr: func(*args, **{**kwargs, "tr": tr}))
            return func(*args, **kwargs)
        target = args[index]
        if isinstance(target, Database):
            return target.run(lambda tr: func(*args[:index], tr, *args[index + 1:], **kwargs))
        return func(*args, **kwargs)

    return wrapper


def strinc(key: bytes) -> bytes:
    """The first key after every key starting with ``key`` (FDB's ``strinc``)."""
    key = key.rstrip(b"\xff")
    if not key:
        raise ValueError("strinc: key must contain a byte other than 0xff")
    return key[:-1] + bytes([key[-1] + 1])
