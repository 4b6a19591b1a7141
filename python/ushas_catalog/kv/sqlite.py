"""The embedded engine: ``sqlite:///abs/path/ushas.db`` — durable, multi-process, FoundationDB semantics.

Size (over 600 lines): one engine: the database, its transaction and the options they share
(held to FoundationDB's semantics by the tests in ``tests/kv``).

Storage
    One table ``kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID``: keys and values are BLOBs and
    SQLite compares BLOBs with ``memcmp`` (shorter first on a common prefix), which is exactly
    FoundationDB's key order. A ``meta`` table holds the commit version counter. The file is in
    WAL mode; the parent directory is created when missing.

URI options (query string)
    ``synchronous=full`` (default: a committed transaction survives power loss, one fsync per
    write commit) or ``synchronous=normal`` (survives a crash of the process, not of the
    machine; much faster commits). ``busy_timeout_ms`` (default 5000): how long a committing
    writer waits for another process's commit before the attempt is retried.
    ``mode=ro`` opens the store read-only (chosen by itself too when the file or its directory
    is not writable). ``wal_autocheckpoint`` (default 1000, SQLite's own; pages of 4 kB): a write commit that
    leaves more pages than that in the WAL copies them back into the database file (a
    passive checkpoint, which also fsyncs the database under ``synchronous=normal``). A
    larger value writes back less (a page dirtied several times between two checkpoints is
    written once) for a bigger WAL file (it keeps its largest size: ~4 kB per page of the
    setting) and rarer, longer checkpoints. Measured with ``bench/search.py`` (10,000 tables,
    total time of the creations): 10,000 to 30,000 pages make a table creation 13-20 %
    cheaper with the search index and 4-7 % without; a WAL of 40 / 79 / 118 MB at 10,000 /
    20,000 / 30,000; a full WAL of 10,000 / 30,000 pages checkpoints in 90 / 130 ms and is
    replayed in 25 / 50 ms when the store is opened after a crash; reads (searches,
    ``get_table``) are not slower with a full WAL. Not the default: it narrows the index's
    write cost but does not bring it under its goal on every run (README, "Metadata and
    search").

Opening (readers never wait for writers)
    ``SqliteDatabase.open(uri, create=...)`` looks at an existing file through a read-only
    connection, in one WAL read transaction: it never takes the write lock, so opening and
    reading answer while another process holds a write transaction. Only creating a store
    (``create=True`` and no file, an empty file, or a SQLite database without tables) runs
    ``BEGIN IMMEDIATE`` and the schema set-up. Refused, and left byte-identical:
    ``create=False`` and no store (:class:`~ushas_catalog.errors.StoreNotFound`,
    ``store not found: PATH``); a SQLite file with other tables
    (:class:`~ushas_catalog.errors.NotAStore`, ``not an ushas store: PATH``); a store whose
    commit version counter is missing or damaged (:class:`~ushas_catalog.errors.StoreDamaged`,
    naming ``ushas repair --counter``, which rebuilds it from the versionstamps in the store:
    :mod:`ushas_catalog.kv.counter`) -- never silently restarted at 0. A store whose file or
    directory is not writable (or ``mode=ro`` in the URI) opens read-only: reads work (with
    ``immutable=1`` when the directory is read-only and has no ``-wal``/``-shm`` files), a
    write is :class:`~ushas_catalog.errors.StoreReadOnly`.

Transactions (the contract of :mod:`ushas_catalog.kv.base`)
    - *Snapshot reads*: the first read of a transaction opens a SQLite read transaction
      (``BEGIN`` deferred); every later read, including every batch of a streamed
      ``get_range``, sees that same snapshot.
    - *Read-your-writes*: writes stay in memory (:mod:`ushas_catalog.kv.ryw`) until commit and
      every read merges them, including ranges overlapping pending sets, clears and adds.
    - *Serializable commits*: at commit the buffered mutations are written in one SQLite write
      transaction. A transaction that read and whose snapshot was overtaken by another
      committed writer fails there with ``SQLITE_BUSY_SNAPSHOT``, raised as
      :class:`RetryableError`; ``Database.run`` retries it from the start, so updates are
      never lost. ``SQLITE_BUSY`` (another process holds the write lock: a blind write waited
      the busy timeout for it, a transaction that read is refused at once) is a
      :class:`BusyError`: retried while the call is younger than ``Database.busy_budget_s()``
      (the busy timeout x 3), then :class:`~ushas_catalog.errors.StoreBusy` (not
      ``Conflict``). The conflict granularity is the
      whole database (coarser than FoundationDB's key ranges, never weaker). Blind writes
      (no read before commit) and atomic adds never conflict: they wait for the write lock.
    - *Read-only transactions* never take the write lock.
    - *Atomic add* and *versionstamped keys* are applied under the write lock. Every write
      commit increments the commit version; the versionstamp is that version as 8 bytes
      big-endian followed by batch order ``0x0000``, so versionstamps are strictly
      increasing in commit order across all processes sharing the file.
    - *Limits*: :mod:`ushas_catalog.kv.guard`, identical to the FoundationDB engine. The 5 s
      limit holds for reads too: besides the check at every operation, a statement still
      running past it is interrupted (a SQLite progress handler) and raises ``LimitExceeded``.

Connections
    Connections are pooled and reused (LIFO): a transaction borrows one and returns it when it
    commits or is cancelled, so a transaction costs a few statements, not an ``open``. After a
    ``fork`` the child never touches the parent's connections (it opens its own).
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

from ..errors import (InvalidArgument, NotAStore, StoreBusy, StoreDamaged, StoreNotFound, StoreReadOnly,
                      StoreUnavailable)
from .base import BusyError, Database, RetryableError
from .guard import TransactionGuard
from .ryw import ADD, CLEAR, SET, BufferedTransaction, WriteBuffer, add_le64

FORMAT_VERSION = 1
#: idle connections kept per database
POOL_SIZE = 8
#: WAL pages after which a commit checkpoints (``wal_autocheckpoint=`` in the URI)
WAL_AUTOCHECKPOINT = 1000

#: ``PRAGMA application_id`` of the stores this engine creates ("USHS")
APPLICATION_ID = 0x55534853
#: VM steps between two checks of the transaction time limit while a statement runs
PROGRESS_STEPS = 20_000
#: how to rebuild a damaged counter (named by StoreDamaged)
REPAIR_HINT = "run 'ushas --uri URI repair --counter' to rebuild it from the commit log"

_META = "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL) WITHOUT ROWID"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) WITHOUT ROWID",
    _META,
    "INSERT OR IGNORE INTO meta (name, value) VALUES ('commit_version', 0)",
    f"INSERT OR IGNORE INTO meta (name, value) VALUES ('format', {FORMAT_VERSION})",
    f"PRAGMA application_id = {APPLICATION_ID}",
)
_GET = "SELECT v FROM kv WHERE k = ?"
_RANGE = "SELECT k, v FROM kv WHERE k >= ? AND k < ? ORDER BY k LIMIT ?"
_RANGE_REVERSE = "SELECT k, v FROM kv WHERE k >= ? AND k < ? ORDER BY k DESC LIMIT ?"
_NEXT_VERSION = "UPDATE meta SET value = value + 1 WHERE name = 'commit_version' RETURNING value"
_UPSERT = "INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)"
_DELETE = "DELETE FROM kv WHERE k = ?"
_DELETE_RANGE = "DELETE FROM kv WHERE k >= ? AND k < ?"

#: SQLite error names (extended ones included) that mean "another connection is in the way"
_BUSY = ("SQLITE_BUSY", "SQLITE_LOCKED")
#: ... and the one that means "another writer committed after this transaction's snapshot"
_CONFLICT = "SQLITE_BUSY_SNAPSHOT"


@dataclass(frozen=True, slots=True)
class SqliteOptions:
    path: Path
    synchronous: str = "FULL"
    busy_timeout_ms: int = 5000
    wal_autocheckpoint: int = WAL_AUTOCHECKPOINT
    read_only: bool = False

    @classmethod
    def parse(cls, uri: str) -> "SqliteOptions":
        parts = urlsplit(uri)
        if parts.scheme != "sqlite" or parts.netloc or not parts.path.startswith("/"):
            raise InvalidArgument(f"invalid sqlite URI {uri!r}: expected sqlite:///absolute/path/to/file.db")
        path = "/" + unquote(parts.path).lstrip("/")   # sqlite:///abs and sqlite:////abs alike
        if path.endswith("/"):
            raise InvalidArgument(f"invalid sqlite URI {uri!r}: the path names a directory, not a file")
        query = parse_qs(parts.query, keep_blank_values=True)
        unknown = set(query) - {"synchronous", "busy_timeout_ms", "wal_autocheckpoint", "mode"}
        if unknown:
            raise InvalidArgument(f"unknown option(s) {', '.join(sorted(unknown))} in {uri!r}: "
                                  f"expected synchronous=full|normal, busy_timeout_ms=N, wal_autocheckpoint=PAGES, "
                                  f"mode=rw|ro")
        mode = query.get("mode", ["rw"])[-1].lower()
        if mode not in ("rw", "ro"):
            raise InvalidArgument(f"invalid mode={mode!r} in {uri!r}: expected rw or ro")
        synchronous = query.get("synchronous", ["full"])[-1].upper()
        if synchronous not in ("FULL", "NORMAL"):
            raise InvalidArgument(f"invalid synchronous={synchronous.lower()!r} in {uri!r}: expected full or normal")
        timeout = query.get("busy_timeout_ms", ["5000"])[-1]
        if not timeout.isdigit():
            raise InvalidArgument(f"invalid busy_timeout_ms={timeout!r} in {uri!r}: expected milliseconds")
        pages = query.get("wal_autocheckpoint", [str(WAL_AUTOCHECKPOINT)])[-1]
        if not (pages.isascii() and pages.isdigit()) or int(pages) < 1:
            raise InvalidArgument(f"invalid wal_autocheckpoint={pages!r} in {uri!r}: expected a number of pages >= 1")
        return cls(Path(path), synchronous, int(timeout), int(pages), mode == "ro")


def _store_error(exc: sqlite3.Error, doing: str, path: Path) -> Exception:
    """A SQLite error as this project's error: busy/locked are retryable, the rest unavailable."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name == _CONFLICT:
        return RetryableError(f"{doing}: {name} ({exc})")
    if name.startswith(_BUSY):
        return BusyError(f"{doing}: {name} ({exc})")
    if name == "SQLITE_READONLY" or name.startswith("SQLITE_READONLY_"):
        return StoreReadOnly(f"the store {path} is read-only ({exc}): it can be read, not written")
    return StoreUnavailable(f"sqlite store {path} failed while {doing}: {name or type(exc).__name__}: {exc}")


@dataclass(frozen=True, slots=True)
class StoreState:
    """What a look at an existing file found (:func:`probe`)."""

    #: "empty" (a SQLite database without tables), "ushas" or "foreign"
    kind: str
    format: int | None = None
    #: the commit version counter; None when missing or damaged (then ``problem`` says how)
    commit_version: int | None = None
    problem: str | None = None


def _ro_uri(path: Path, immutable: bool) -> str:
    return f"file:{quote(str(path))}?mode=ro" + ("&immutable=1" if immutable else "")


def probe(conn: sqlite3.Connection, path: Path) -> StoreState:
    """Whether the database of ``conn`` is an ushas store, in one read transaction (no write lock)."""
    conn.execute("BEGIN")
    try:
        return _inspect(conn)
    finally:
        conn.execute("ROLLBACK")


def _inspect(conn: sqlite3.Connection) -> StoreState:
    """:func:`probe` inside the caller's transaction."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if not tables:
        return StoreState("empty")
    kv_columns = [r[1] for r in conn.execute("PRAGMA table_info(kv)")] if "kv" in tables else []
    if kv_columns != ["k", "v"] and app_id != APPLICATION_ID:
        return StoreState("foreign")
    if kv_columns != ["k", "v"]:
        return StoreState("ushas", problem="its kv table is missing or damaged")
    if "meta" not in tables:
        return StoreState("ushas", problem="its meta table (the commit version counter) is missing")
    rows = dict(conn.execute("SELECT name, value FROM meta WHERE name IN ('format', 'commit_version')"))
    fmt = rows.get("format")
    version = rows.get("commit_version")
    fmt = fmt if isinstance(fmt, int) else None
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        what = "missing" if "commit_version" not in rows else f"damaged ({version!r})"
        return StoreState("ushas", fmt, problem=f"its commit version counter is {what}")
    if fmt is None:
        return StoreState("ushas", None, version, problem="its format record is missing")
    return StoreState("ushas", fmt, version)


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


class SqliteDatabase(Database):
    """A pool of connections to one SQLite file."""

    def __init__(self, uri: str, options: SqliteOptions, *, read_only: bool = False,
                 immutable: bool = False) -> None:
        self.uri = uri
        self.options = options
        #: writes are refused (StoreReadOnly): ``mode=ro`` or a file / directory not writable
        self.read_only = read_only
        self._immutable = immutable
        self.busy_timeout_s = options.busy_timeout_ms / 1000
        #: this open created the store
        self.created = False
        self._lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._pid = os.getpid()
        #: connections inherited over fork: kept referenced, never used nor closed in the child
        self._inherited: list[sqlite3.Connection] = []
        self._closed = False

    @classmethod
    def open(cls, uri: str, *, create: bool = True, check_counter: bool = True) -> "SqliteDatabase":
        """Open the store of ``uri`` (module docstring, "Opening"). ``create=False``: never create
        one. ``check_counter=False`` opens a store whose counter is damaged (for the repair)."""
        options = SqliteOptions.parse(uri)
        path = options.path
        try:
            exists = path.exists()
            if exists and not path.is_file():
                raise NotAStore(f"not an ushas store: {path} (not a regular file)")
            empty = exists and path.stat().st_size == 0
        except OSError as exc:
            raise StoreUnavailable(f"cannot open sqlite store {path}: {exc}") from exc
        if not exists or empty:
            if not create:
                raise StoreNotFound(f"store not found: {path}" + (" (an empty file)" if exists else ""))
            return cls._create(uri, options)
        state, immutable = cls._look(path)
        if state.kind == "empty":
            if not create:
                raise StoreNotFound(f"store not found: {path} (a SQLite database without tables)")
            return cls._create(uri, options)
        if state.kind == "foreign":
            raise NotAStore(f"not an ushas store: {path} (a SQLite database with other tables; left untouched)")
        if state.format is not None and state.format != FORMAT_VERSION:
            raise StoreUnavailable(f"sqlite store {path} has format {state.format}, this version reads format "
                                   f"{FORMAT_VERSION}")
        if state.problem is not None and check_counter:
            raise StoreDamaged(f"the store {path} is damaged: {state.problem}; {REPAIR_HINT}", path=str(path))
        read_only = options.read_only or not _writable(path)
        return cls(uri, options, read_only=read_only, immutable=read_only and immutable)

    @staticmethod
    def _look(path: Path) -> tuple[StoreState, bool]:
        """:func:`probe` through a read-only connection; ``immutable=1`` when a read-only directory
        has no ``-wal`` / ``-shm`` files to share (returned: whether that was needed)."""
        last: sqlite3.Error | None = None
        for immutable in (False, True):
            try:
                conn = sqlite3.connect(_ro_uri(path, immutable), uri=True, isolation_level=None, timeout=5.0)
            except sqlite3.Error as exc:
                last = exc
                continue
            try:
                return probe(conn, path), immutable
            except sqlite3.DatabaseError as exc:
                name = getattr(exc, "sqlite_errorname", "") or ""
                if name in ("SQLITE_NOTADB",):
                    raise NotAStore(f"not an ushas store: {path} (not a SQLite database; left untouched)") from exc
                if name.startswith(_BUSY):
                    raise StoreBusy(f"the store {path} stayed locked by another process while opening it: "
                                    f"{name} ({exc}); try again later") from exc
                last = exc
            finally:
                conn.close()
            if _writable(path.parent):
                break  # a writable directory: immutable would not help
        raise StoreUnavailable(f"cannot open sqlite store {path}: {last}") from last

    @classmethod
    def _create(cls, uri: str, options: SqliteOptions) -> "SqliteDatabase":
        """Create the store (or finish a creation that was interrupted), under the write lock."""
        path = options.path
        if options.read_only:
            raise StoreNotFound(f"store not found: {path} (mode=ro never creates one)")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(f"cannot create the directory of sqlite store {path}: {exc}") from exc
        db = cls(uri, options)
        conn = db._connect()
        try:
            db.created = db._initialise_retrying(conn)
        except BaseException:
            conn.close()
            raise
        db._release(conn)
        return db

    def _initialise_retrying(self, conn: sqlite3.Connection) -> bool:
        """:meth:`_initialise`, again while another connection holds the lock it needs: switching a new
        file to WAL is refused at once (no busy handler) while a second process or thread creates the
        same store, so the first opening by two processes together would fail. Within the busy budget."""
        deadline = time.monotonic() + self.busy_budget_s()
        pause = 0.01
        while True:
            try:
                return self._initialise(conn)
            except StoreBusy:
                if time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 0.2)

    # --- connections -------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        path = self.options.path
        try:
            if self.read_only:
                conn = sqlite3.connect(_ro_uri(path, self._immutable), uri=True,
                                       timeout=self.options.busy_timeout_ms / 1000, isolation_level=None,
                                       check_same_thread=False, cached_statements=64)
                return conn
            conn = sqlite3.connect(str(path), timeout=self.options.busy_timeout_ms / 1000,
                                   isolation_level=None, check_same_thread=False, cached_statements=64)
            conn.execute(f"PRAGMA synchronous = {self.options.synchronous}")
            conn.execute(f"PRAGMA wal_autocheckpoint = {self.options.wal_autocheckpoint}")
            return conn
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot open sqlite store {path}: {exc}") from exc

    def _initialise(self, conn: sqlite3.Connection) -> bool:
        """The schema, in one write transaction; True when this call created it. A file that
        another process filled meanwhile is checked again (ours: nothing to do; not ours: refused)."""
        path = self.options.path
        try:
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                state = probe(conn, path)
                if state.kind == "foreign":  # "ushas": another connection is creating it (checked below)
                    raise NotAStore(f"not an ushas store: {path} (a SQLite database with other tables; "
                                    f"left untouched)")
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StoreUnavailable(f"sqlite store {path}: cannot switch to WAL journal mode (got {mode!r})")
            conn.execute("BEGIN IMMEDIATE")
            try:
                state = _inspect(conn)
                if state.kind == "foreign":
                    raise NotAStore(f"not an ushas store: {path} (a SQLite database with other tables; "
                                    f"left untouched)")
                created = state.kind == "empty"
                if created:
                    for statement in _SCHEMA:
                        conn.execute(statement)
                    state = StoreState("ushas", FORMAT_VERSION, 0)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as exc:
            if (getattr(exc, "sqlite_errorname", "") or "").startswith(_BUSY):
                raise StoreBusy(f"the store {path} stayed locked by another process while creating it: {exc}; "
                                f"try again later") from exc
            raise StoreUnavailable(f"cannot initialise sqlite store {path}: {exc}") from exc
        if state.problem is not None:
            raise StoreDamaged(f"the store {path} is damaged: {state.problem}; {REPAIR_HINT}", path=str(path))
        fmt = state.format
        if fmt != FORMAT_VERSION:
            raise StoreUnavailable(f"sqlite store {path} has format {fmt}, this version reads format {FORMAT_VERSION}")
        return created

    # --- the counter (see ushas_catalog.kv.counter) -------------------------------------------
    def state(self) -> StoreState:
        """What the store holds now: its format and counter, or what is wrong with them."""
        conn = self._acquire()
        try:
            return probe(conn, self.options.path)
        except sqlite3.Error as exc:
            raise _store_error(exc, "reading the commit version", self.options.path) from exc
        finally:
            self._release(conn)

    def commit_version(self) -> int | None:
        """The commit version counter (the last version committed), None if missing or damaged."""
        return self.state().commit_version

    def set_commit_version_floor(self, floor: int) -> tuple[int | None, int]:
        """Raise the counter to at least ``floor`` (re-creating its table or record if missing),
        under the write lock; never lowers it. Returns (value before or None, value after)."""
        if self.read_only:
            raise StoreReadOnly(f"the store {self.options.path} is read-only: cannot repair its counter")
        conn = self._acquire()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(_META)
                row = conn.execute("SELECT value FROM meta WHERE name = 'commit_version'").fetchone()
                before = row[0] if row and isinstance(row[0], int) and row[0] >= 0 else None
                after = max(before or 0, floor)
                conn.execute("INSERT OR REPLACE INTO meta (name, value) VALUES ('commit_version', ?)", (after,))
                conn.execute(f"INSERT OR IGNORE INTO meta (name, value) VALUES ('format', {FORMAT_VERSION})")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise _store_error(exc, "repairing the commit version", self.options.path) from exc
        finally:
            self._release(conn)
        return before, after

    def integrity_check(self, full: bool = False) -> list[str]:
        """SQLite's own check of the file: ``PRAGMA quick_check`` (``integrity_check`` when
        ``full``: also every index against its table). Read-only; returns the problems ([]: ok)."""
        conn = self._acquire()
        try:
            rows = conn.execute("PRAGMA integrity_check" if full else "PRAGMA quick_check").fetchall()
        except sqlite3.Error as exc:
            return [f"the integrity check could not run: {getattr(exc, 'sqlite_errorname', '')} {exc}".strip()]
        finally:
            self._release(conn)
        problems = [str(r[0]) for r in rows]
        return [] if problems == ["ok"] else problems

    def _acquire(self) -> sqlite3.Connection:
        with self._lock:
            if self._closed:
                raise StoreUnavailable(f"sqlite store {self.options.path} is closed")
            if self._pid != os.getpid():          # forked: the parent's connections are not ours
                self._inherited.extend(self._idle)
                self._idle = []
                self._pid = os.getpid()
            if self._idle:
                return self._idle.pop()
        return self._connect()

    def _release(self, conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                conn.close()
                return
        with self._lock:
            if not self._closed and self._pid == os.getpid() and len(self._idle) < POOL_SIZE:
                self._idle.append(conn)
                return
        if self._pid == os.getpid():
            conn.close()

    # --- Database ------------------------------------------------------------------------
    def create_transaction(self) -> "SqliteTransaction":
        return SqliteTransaction(self, self._acquire())

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


class SqliteTransaction(BufferedTransaction):
    """One transaction on a pooled connection; see the module docstring for the semantics."""

    def __init__(self, db: SqliteDatabase, conn: sqlite3.Connection) -> None:
        self._db = db
        self._conn: sqlite3.Connection | None = conn
        self._guard = TransactionGuard(db.limits)
        self._writes = WriteBuffer()
        self._reading = False
        self._versionstamp: bytes | None = None

    # --- internals -----------------------------------------------------------------------
    def _live(self) -> sqlite3.Connection:
        if self._conn is None:
            raise InvalidArgument("transaction already committed or cancelled")
        self._guard.check_time()
        return self._conn

    def _execute(self, doing: str, sql: str, args: tuple = ()) -> list:
        conn = self._live()
        try:
            if not self._reading:
                conn.set_progress_handler(self._over_time, PROGRESS_STEPS)
                conn.execute("BEGIN")
                self._reading = True
            return conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            if getattr(exc, "sqlite_errorname", "") == "SQLITE_INTERRUPT":
                self._guard.check_time()  # raises LimitExceeded (transaction_seconds)
            raise _store_error(exc, doing, self._db.options.path) from exc

    def _over_time(self) -> bool:
        """SQLite's progress handler: True interrupts a statement running past the time limit."""
        return time.monotonic() - self._guard.started > self._guard.limits.transaction_seconds

    def _read(self, key: bytes) -> bytes | None:
        rows = self._execute("reading a key", _GET, (key,))
        return rows[0][0] if rows else None

    def _fetch(self, lo: bytes, hi: bytes, n: int, reverse: bool) -> list[tuple[bytes, bytes]]:
        return self._execute("reading a range", _RANGE_REVERSE if reverse else _RANGE, (lo, hi, n))

    def _check_live(self) -> None:
        self._live()

    # --- lifecycle ---------------------------------------------------------------------------
    def commit(self) -> None:
        conn = self._live()
        writes = self._writes
        try:
            if not writes:
                if self._reading:
                    conn.execute("COMMIT")
                self._finish()
                return
            if self._db.read_only:
                self.cancel()
                raise StoreReadOnly(f"the store {self._db.options.path} is open read-only (mode=ro, or its file "
                                    f"or directory is not writable): it can be read, not written")
            if self._reading:
                conn.set_progress_handler(None, 0)  # a commit that started in time is not interrupted
            else:
                conn.execute("BEGIN IMMEDIATE")  # a blind write: wait for the lock, no snapshot to lose
            # the first write: fails with SQLITE_BUSY_SNAPSHOT if our snapshot was overtaken
            rows = conn.execute(_NEXT_VERSION).fetchall()
            if not rows or not isinstance(rows[0][0], int):
                conn.execute("ROLLBACK")
                self.cancel()
                raise StoreDamaged(f"the store {self._db.options.path} is damaged: its commit version counter "
                                   f"is missing; {REPAIR_HINT}", path=str(self._db.options.path))
            (version,) = rows[0]
            stamp = int(version).to_bytes(8, "big") + b"\x00\x00"
            _apply(conn, writes, stamp)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self.cancel()
            if "no such table: meta" in str(exc):
                raise StoreDamaged(f"the store {self._db.options.path} is damaged: its meta table (the commit "
                                   f"version counter) is missing; {REPAIR_HINT}",
                                   path=str(self._db.options.path)) from exc
            raise _store_error(exc, "committing", self._db.options.path) from exc
        self._versionstamp = stamp
        self._finish()

    def cancel(self) -> None:
        if self._conn is not None:
            self._finish()

    def _finish(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            if self._reading:
                conn.set_progress_handler(None, 0)
            self._db._release(conn)


def _apply(conn: sqlite3.Connection, writes: WriteBuffer, stamp: bytes) -> None:
    """Write a transaction's buffered mutations inside an open SQLite write transaction."""
    if writes.begins:
        conn.executemany(_DELETE_RANGE, zip(writes.begins, writes.ends))
    sets: list[tuple[bytes, bytes]] = []
    clears: list[tuple[bytes]] = []
    adds: list[tuple[bytes, int]] = []
    for key, (kind, arg) in writes.entries.items():
        if kind == SET:
            sets.append((key, arg))  # type: ignore[arg-type]
        elif kind == CLEAR:
            clears.append((key,))
        else:
            assert kind == ADD
            adds.append((key, arg))  # type: ignore[arg-type]
    if clears:
        conn.executemany(_DELETE, clears)
    for key, delta in adds:
        row = conn.execute(_GET, (key,)).fetchall()
        sets.append((key, add_le64(row[0][0] if row else None, delta)))
    sets.extend(writes.final_versionstamped(stamp))
    if sets:
        conn.executemany(_UPSERT, sets)
