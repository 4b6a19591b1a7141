"""The PostgreSQL engine: ``postgresql://user@host:port/dbname[?sslmode=...&schema=...]`` (psycopg 3).

Size (over 600 lines): one engine: the connection pool, the transaction and the options they share
(held to FoundationDB's semantics by the tests in ``tests/kv``, as the embedded engine is).

A store is one schema of an existing database (``schema=``, default ``ushas``): the database is
created by its operator (``createdb``), the schema and its tables by the first ``open`` with
``create=True`` (``ushas init``).

Storage
    ``kv (k bytea PRIMARY KEY, v bytea NOT NULL)``: PostgreSQL orders ``bytea`` with ``memcmp``
    then by length (shorter first on a common prefix), exactly FoundationDB's key order, whatever
    the database's collation. ``meta`` holds the format and the commit version counter (the row
    ``commit_version``), as on the embedded engine.

URI
    Any libpq parameter in the query string is passed to libpq (``sslmode``, ``sslrootcert``,
    ``connect_timeout``, ``application_name``...). A password is never taken from the URI (it
    would be logged with it): libpq reads it from ``PGPASSWORD`` or ``~/.pgpass`` (``PGPASSFILE``).
    Options of this engine: ``schema=`` (the store's schema), ``pool_size=`` (idle connections
    kept per process, default 8), ``unreachable_s=`` (how long a call retries a server it cannot
    reach, default 10), ``mode=ro`` (writes refused: ``StoreReadOnly``), ``synchronous_commit=``
    (default ``on`` whatever the server's setting: a commit that answered survives a crash of the
    server; ``remote_apply`` for synchronous standbys; ``off`` trades that for speed as SQLite's
    ``synchronous=normal`` does), ``busy_timeout_ms=`` (default 5000: how long a commit waits for
    the store's commit lock before the attempt is retried, as on SQLite). libpq's ``options=`` is this
    engine's (refused in the URI).

Transactions (the contract of :mod:`ushas_catalog.kv.base`)
    - *Snapshot reads*: the first read opens ``BEGIN ISOLATION LEVEL REPEATABLE READ`` (a
      snapshot); every later read, every batch of a streamed range, sees that snapshot.
    - *Read-your-writes*: writes stay in memory (:mod:`ushas_catalog.kv.ryw`) until commit, as on
      the embedded engine, and every read merges them.
    - *Serializable commits, in commit order*: every write commit first increments the counter row
      (``UPDATE meta ... RETURNING``), which holds that row's lock until ``COMMIT``: writers commit one
      at a time, and a transaction that read fails at that update if any commit happened after its
      snapshot (``40001``, PostgreSQL's first-updater-wins in REPEATABLE READ). It is then *re-checked*
      rather than retried: on the same connection a READ COMMITTED transaction takes the counter row's
      lock (no other commit can happen until it commits) and asks every read of the transaction again,
      in one pipeline. Every read getting the same rows means no commit in between wrote anything it
      read (a key, or a key inside a range it read): it commits there, as if it had run under the lock.
      Otherwise it is a conflict (a :class:`RetryableError`, retried by ``Database.run``). So the
      conflict granularity is what the transaction read, FoundationDB's (a transaction that read more
      than ``REVALIDATE_ROWS`` rows is not re-checked: for it, any commit after its snapshot is a
      conflict), never weaker: what a transaction read is unchanged when it commits; reads never wait. A
      transaction that wrote without reading (atomic adds included) commits in READ COMMITTED: it
      waits for the row lock and never conflicts, and its adds read the latest values. (PostgreSQL's
      SERIALIZABLE was tried first: it is serializable but not in commit order -- a transaction that
      read a key a later-committed blind write changed may still commit, ordered before it, which
      breaks FoundationDB's contract and the change feed's order; ``tests/kv/test_contract.py``,
      ``test_a_read_overtaken_by_a_blind_write_conflicts``.)
    - *Versions and versionstamps*: the counter's new value is the commit version; the versionstamp
      is that version as 8 bytes big-endian, then ``0x0000``. Taken under the row lock and committed
      with the writes, versions increase in commit order across every process and replica, without
      gaps, and never go back (also after a crash: the row is in the WAL with the commit).
    - *A retry cannot lose again*: the attempts :meth:`Database.run` makes after a conflict
      (:meth:`PostgresDatabase.create_retry_transaction`) take the counter row's lock with their first
      read (``BEGIN ISOLATION LEVEL READ COMMITTED; SELECT ... FOR UPDATE``, in the same round trip) and
      hold it to their commit: no other commit can happen in between, so every read sees the latest
      commits and the commit cannot be overtaken. Under contention (several writers through several
      replicas) a transaction is retried at most once for conflicts instead of until it wins a race;
      the cost is that the retry holds the store's commit lock while it reads (other writers wait,
      readers never do). A transaction that the same thread commits (or retries) on the same store
      while such a retry holds the lock would wait for it forever: it takes the lock over instead
      (the retry's transaction is rolled back there and its commit raises a conflict, so it runs
      again), as an optimistic attempt would have been overtaken by that commit.
    - *Deadlocks*: every writer takes the counter row first, so writers cannot deadlock on keys;
      ``40P01`` is retried anyway.
    - *Limits*: :mod:`ushas_catalog.kv.guard`; a statement still running past the 5 s limit is
      cancelled by the server (``statement_timeout``) and raises ``LimitExceeded``. A commit that
      waited ``busy_timeout_s`` (5 s, ``lock_timeout``) for the counter row is a :class:`BusyError`,
      retried like SQLite's ``SQLITE_BUSY``, then :class:`~ushas_catalog.errors.StoreBusy`.
    - *Faults*: a server that cannot be reached (refused, restarting, connection lost before
      ``COMMIT`` was sent) is :class:`UnreachableError`, retried for ``unreachable_s`` seconds,
      then :class:`~ushas_catalog.errors.StoreUnavailable` (one line naming host, port and
      database). A connection lost *during* ``COMMIT`` is FoundationDB's
      ``commit_unknown_result`` (:class:`CommitUnknownResult`): retried, so transactions are
      idempotent as on FoundationDB (fenced writes check their recorded outcome).

Connections
    A LIFO pool per process (``pool_size`` idle connections; a broken one is dropped), like the
    embedded engine's; after ``fork`` the child opens its own. Sessions run with
    ``idle_in_transaction_session_timeout`` so a client that stops mid-transaction cannot hold
    locks for long.
"""
from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import InvalidArgument, NotAStore, StoreDamaged, StoreNotFound, StoreReadOnly, StoreUnavailable
from .base import BusyError, CommitUnknownResult, Database, RetryableError, UnreachableError
from .guard import TransactionGuard
from .ryw import ADD, CLEAR, SET, BufferedTransaction, WriteBuffer, add_le64

FORMAT_VERSION = 1
POOL_SIZE = 8
#: an overtaken transaction that read at most this many rows re-reads them to find whether it really conflicts
REVALIDATE_ROWS = 10_000
#: an abandoned transaction's session is ended by the server after this long
IDLE_IN_TRANSACTION_MS = 30_000
REPAIR_HINT = "run 'ushas --uri URI repair --counter' to rebuild it from the commit log"
_OWN_OPTIONS = {"schema", "pool_size", "unreachable_s", "mode", "synchronous_commit", "busy_timeout_ms"}
_SYNCHRONOUS = ("on", "remote_apply", "remote_write", "local", "off")
_SCHEMA_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789_")


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise StoreUnavailable("the psycopg package is not installed, so postgresql:// stores cannot be opened "
                               "(pip install 'psycopg[binary]')") from exc
    return psycopg


@dataclass(frozen=True, slots=True)
class PostgresOptions:
    #: the libpq connection URI (without this engine's options; no password)
    conninfo: str
    #: where the store is, for messages: host:port/dbname schema
    where: str
    schema: str = "ushas"
    pool_size: int = POOL_SIZE
    unreachable_s: float = 10.0
    read_only: bool = False
    synchronous_commit: str = "on"
    busy_timeout_ms: int = 5000

    @classmethod
    def parse(cls, uri: str) -> "PostgresOptions":
        parts = urlsplit(uri)
        if parts.scheme not in ("postgresql", "postgres"):
            raise InvalidArgument(f"invalid PostgreSQL URI {uri!r}: expected postgresql://user@host:port/dbname")
        if parts.password is not None:
            raise InvalidArgument("a PostgreSQL URI must not carry a password (it would be logged with the URI): "
                                  "set PGPASSWORD or use ~/.pgpass")
        dbname = parts.path.lstrip("/")
        if not dbname or "/" in dbname:
            raise InvalidArgument(f"invalid PostgreSQL URI {uri!r}: name the database: "
                                  f"postgresql://user@host:port/dbname")
        query = parse_qsl(parts.query, keep_blank_values=True)
        own = {k: v for k, v in query if k in _OWN_OPTIONS}
        schema = own.get("schema", "ushas")
        if not schema or schema[0].isdigit() or not set(schema) <= _SCHEMA_NAME_CHARS or len(schema) > 63:
            raise InvalidArgument(f"invalid schema={schema!r} in the PostgreSQL URI: expected lower-case letters, "
                                  f"digits and _ (not first a digit), at most 63")
        pool = own.get("pool_size", str(POOL_SIZE))
        if not (pool.isascii() and pool.isdigit()):
            raise InvalidArgument(f"invalid pool_size={pool!r} in the PostgreSQL URI: expected a number >= 0")
        try:
            unreachable = float(own.get("unreachable_s", "10"))
        except ValueError:
            unreachable = -1.0
        if not 0 <= unreachable <= 3600:
            raise InvalidArgument(f"invalid unreachable_s={own.get('unreachable_s')!r} in the PostgreSQL URI: "
                                  f"expected seconds between 0 and 3600")
        mode = own.get("mode", "rw").lower()
        if mode not in ("rw", "ro"):
            raise InvalidArgument(f"invalid mode={mode!r} in the PostgreSQL URI: expected rw or ro")
        synchronous = own.get("synchronous_commit", "on").lower()
        if synchronous not in _SYNCHRONOUS:
            raise InvalidArgument(f"invalid synchronous_commit={synchronous!r} in the PostgreSQL URI: expected "
                                  f"{', '.join(_SYNCHRONOUS)}")
        if any(k == "options" for k, _ in query):
            raise InvalidArgument("the PostgreSQL URI's options= is set by this engine (statement and idle "
                                  "timeouts, synchronous_commit): use its own options instead")
        busy = own.get("busy_timeout_ms", "5000")
        if not (busy.isascii() and busy.isdigit()) or int(busy) < 1:
            raise InvalidArgument(f"invalid busy_timeout_ms={busy!r} in the PostgreSQL URI: expected milliseconds >= 1")
        libpq = [(k, v) for k, v in query if k not in _OWN_OPTIONS]
        if not any(k == "connect_timeout" for k, _ in libpq):
            libpq.append(("connect_timeout", "5"))
        conninfo = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(libpq), ""))
        host = parts.hostname or os.environ.get("PGHOST", "localhost")
        where = f"{host}:{parts.port or os.environ.get('PGPORT', 5432)}/{dbname} schema {schema}"
        return cls(conninfo, where, schema, int(pool), unreachable, mode == "ro", synchronous, int(busy))


def _lock_key(schema: str) -> int:
    """The advisory lock that serializes creating and repairing one store (a signed 64-bit number
    derived from its schema)."""
    return int.from_bytes(hashlib.sha256(b"ushas-commit:" + schema.encode()).digest()[:8], "big", signed=True)


@dataclass(frozen=True, slots=True)
class StoreState:
    """What :meth:`PostgresDatabase.state` found."""

    #: "empty" (no such schema or no tables in it), "ushas" or "foreign"
    kind: str
    format: int | None = None
    commit_version: int | None = None
    problem: str | None = None


class PostgresDatabase(Database):
    """A pool of connections to one store (a schema of a PostgreSQL database)."""

    def __init__(self, uri: str, options: PostgresOptions) -> None:
        self.uri = uri
        self.options = options
        self.read_only = options.read_only
        self.unreachable_s = options.unreachable_s
        self.busy_timeout_s = options.busy_timeout_ms / 1000
        self.created = False
        self._pg = _psycopg()
        self._lock = threading.Lock()
        self._idle: list[Any] = []
        self._pid = os.getpid()
        self._inherited: list[Any] = []
        self._closed = False
        self._lock_key = _lock_key(options.schema)
        #: per thread, the exclusive transaction (a retry) holding the commit lock, if any
        self._holder = threading.local()
        s = options.schema
        self._sql_get = f"SELECT v FROM {s}.kv WHERE k = %b"
        self._sql_range = f"SELECT k, v FROM {s}.kv WHERE k >= %b AND k < %b ORDER BY k LIMIT %s"
        self._sql_range_rev = f"SELECT k, v FROM {s}.kv WHERE k >= %b AND k < %b ORDER BY k DESC LIMIT %s"
        self._sql_next_version = (f"UPDATE {s}.meta SET value = value + 1 WHERE name = 'commit_version' "
                                  f"RETURNING value")
        self._sql_commit_lock = f"SELECT value FROM {s}.meta WHERE name = 'commit_version' FOR UPDATE"

    # --- opening ---------------------------------------------------------------------------
    @classmethod
    def open(cls, uri: str, *, create: bool = True, check_counter: bool = True) -> "PostgresDatabase":
        db = cls(uri, PostgresOptions.parse(uri))
        try:
            state = db.state()
            if state.kind == "foreign":
                raise NotAStore(f"not an ushas store: {db.options.where} (the schema holds other tables; "
                                f"left untouched)")
            if state.kind == "empty":
                if not create or db.read_only:
                    raise StoreNotFound(f"store not found: {db.options.where} (no ushas tables; 'ushas init' "
                                        f"creates them)")
                db.created = db._initialise()
                state = db.state()
            if state.format is not None and state.format != FORMAT_VERSION:
                raise StoreUnavailable(f"postgresql store {db.options.where} has format {state.format}, this "
                                       f"version reads format {FORMAT_VERSION}")
            if state.problem is not None and check_counter:
                raise StoreDamaged(f"the store {db.options.where} is damaged: {state.problem}; {REPAIR_HINT}",
                                   path=db.options.where)
        except BaseException:
            db.close()
            raise
        return db

    def _initialise(self) -> bool:
        """Create the schema's tables under the store's advisory lock; True when this call did."""
        s = self.options.schema
        conn = self._borrow()
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
                state = self._inspect(conn)
                if state.kind != "empty":
                    return False
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
                conn.execute(f"CREATE TABLE {s}.kv (k bytea PRIMARY KEY, v bytea NOT NULL)")
                conn.execute(f"CREATE TABLE {s}.meta (name text PRIMARY KEY, value bigint NOT NULL)")
                conn.execute(f"INSERT INTO {s}.meta (name, value) VALUES ('format', %s), ('commit_version', 0)",
                             (FORMAT_VERSION,))
            return True
        except self._pg.Error as exc:
            error = self._error(exc, "creating the store")
            raise (StoreUnavailable(str(error)) if isinstance(error, RetryableError) else error) from exc
        finally:
            self._release(conn)

    def _inspect(self, conn: Any) -> StoreState:
        s = self.options.schema
        tables = {r[0] for r in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind IN ('r', 'S', 'p', 'v')", (s,))}
        if not tables:
            return StoreState("empty")
        if "kv" not in tables:
            return StoreState("foreign") if "meta" not in tables else StoreState("ushas", problem="its kv table is missing")
        columns = [r[0] for r in conn.execute(
            "SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = 'kv' AND a.attnum > 0 "
            "AND NOT a.attisdropped ORDER BY a.attnum", (s,))]
        if columns != ["k", "v"] or "meta" not in tables:
            return StoreState("foreign")
        fmt_row = conn.execute(f"SELECT value FROM {s}.meta WHERE name = 'format'").fetchone()
        fmt = int(fmt_row[0]) if fmt_row else None
        row = conn.execute(f"SELECT value FROM {s}.meta WHERE name = 'commit_version'").fetchone()
        if row is None or row[0] < 0:
            what = "missing" if row is None else f"damaged ({row[0]})"
            return StoreState("ushas", fmt, problem=f"its commit version counter is {what}")
        version = int(row[0])
        if fmt is None:
            return StoreState("ushas", None, version, problem="its format record is missing")
        return StoreState("ushas", fmt, version)

    def state(self) -> StoreState:
        """What the store's schema holds now (outside :meth:`run`: an unreachable server is
        :class:`~ushas_catalog.errors.StoreUnavailable` at once)."""
        conn = self._borrow()
        try:
            with conn.transaction():
                return self._inspect(conn)
        except self._pg.Error as exc:
            error = self._error(exc, "reading the store's tables")
            raise (StoreUnavailable(str(error)) if isinstance(error, RetryableError) else error) from exc
        finally:
            self._release(conn)

    # --- the counter (ushas_catalog.kv.counter) ------------------------------------------------
    def commit_version(self) -> int | None:
        return self.state().commit_version

    def set_commit_version_floor(self, floor: int) -> tuple[int | None, int]:
        """Raise the counter to at least ``floor`` (re-creating its row if missing), under the row's
        lock; never lowers it. Returns (value before or None, value after)."""
        if self.read_only:
            raise StoreReadOnly(f"the store {self.options.where} is open read-only: cannot repair its counter")
        s = self.options.schema
        conn = self._borrow()
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
                row = conn.execute(f"SELECT value FROM {s}.meta WHERE name = 'commit_version' FOR UPDATE").fetchone()
                before = int(row[0]) if row is not None and row[0] >= 0 else None
                after = max(before or 0, floor)
                conn.execute(f"INSERT INTO {s}.meta (name, value) VALUES ('commit_version', %s) "
                             f"ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value", (after,))
                conn.execute(f"INSERT INTO {s}.meta (name, value) VALUES ('format', %s) ON CONFLICT DO NOTHING",
                             (FORMAT_VERSION,))
        except self._pg.Error as exc:
            error = self._error(exc, "repairing the commit version")
            raise (StoreUnavailable(str(error)) if isinstance(error, RetryableError) else error) from exc
        finally:
            self._release(conn)
        return before, after

    def integrity_check(self, full: bool = False) -> list[str]:
        """The store's tables and counter as this engine made them ([]: ok); ``full`` also checks
        that every key reads back through the primary key index in order (PostgreSQL checks its
        own pages: see docs/engines.md for amcheck)."""
        try:
            state = self.state()
        except StoreUnavailable as exc:
            return [f"the check could not run: {exc.message}"]
        problems = [state.problem] if state.problem else []
        if state.kind != "ushas":
            problems.append(f"no ushas store in schema {self.options.schema}")
        if full and not problems:
            conn = self._borrow()
            try:
                with conn.transaction():
                    dup = conn.execute(f"SELECT count(*) - count(DISTINCT k) FROM {self.options.schema}.kv").fetchone()
                if dup and dup[0]:
                    problems.append(f"{dup[0]} duplicate key(s) in the kv table")
            except self._pg.Error as exc:
                problems.append(f"the full check could not run: {_one_line(exc)}")
            finally:
                self._release(conn)
        return problems

    # --- errors --------------------------------------------------------------------------------
    def _error(self, exc: Exception, doing: str, *, committing: bool = False) -> Exception:
        """A psycopg error as this project's error."""
        pg = self._pg
        where = self.options.where
        state = getattr(exc, "sqlstate", None) or ""
        if state in ("40001", "40P01"):
            return RetryableError(f"{doing}: {_one_line(exc)} (sqlstate {state})")
        if state == "55P03":   # lock_timeout: other writers held the store's counter row that long
            return BusyError(f"{doing}: the store's commit lock (its counter row) stayed taken by other writers "
                             f"({_one_line(exc)})")
        if state == "25006" or (state == "42501" and self.read_only):
            return StoreReadOnly(f"the store {where} is read-only: {_one_line(exc)}")
        text = _one_line(exc)
        if state == "3D000":
            return StoreNotFound(f"store not found: {where} (the database does not exist: {text})")
        if state.startswith("28") or "password" in text or "authentication" in text or \
                "no pg_hba.conf entry" in text:
            return StoreUnavailable(f"cannot log in to PostgreSQL at {where}: {text} (the password comes from "
                                    f"PGPASSWORD or ~/.pgpass, never the URI)")
        broken = isinstance(exc, pg.OperationalError) or state.startswith(("08", "57P"))
        if broken:
            text = f"PostgreSQL at {where} is unreachable while {doing}: {_one_line(exc)}"
            if committing:
                lost = CommitUnknownResult(f"commit_unknown_result: the connection was lost during COMMIT, the "
                                           f"transaction may have committed ({text})")
                lost.server_lost = True  # type: ignore[attr-defined]
                return lost
            return UnreachableError(text)
        return StoreUnavailable(f"postgresql store {where} failed while {doing}: {_one_line(exc)}")

    # --- connections -----------------------------------------------------------------------------
    def _connect(self) -> Any:
        pg = self._pg
        timeout_ms = int(self.limits.transaction_seconds * 1000) + 1000
        try:
            settings = (f"-c statement_timeout={timeout_ms} "
                        f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS} "
                        f"-c lock_timeout={int(self.busy_timeout_s * 1000)} "
                        f"-c synchronous_commit={self.options.synchronous_commit}")
            if self.read_only:
                settings += " -c default_transaction_read_only=on"
            conn = pg.connect(self.options.conninfo, autocommit=True, options=settings)
        except pg.Error as exc:
            raise self._error(exc, "connecting") from exc
        return conn

    def _acquire(self) -> Any:
        with self._lock:
            if self._closed:
                raise StoreUnavailable(f"postgresql store {self.options.where} is closed")
            if self._pid != os.getpid():   # forked: the parent's connections are not ours
                self._inherited.extend(self._idle)
                self._idle = []
                self._pid = os.getpid()
            if self._idle:
                return self._idle.pop()
        return self._connect()

    def _borrow(self) -> Any:
        """:meth:`_acquire` outside :meth:`run`: an unreachable server is ``StoreUnavailable`` at once."""
        try:
            return self._acquire()
        except UnreachableError as exc:
            raise StoreUnavailable(str(exc)) from exc

    def _release(self, conn: Any, *, broken: bool = False) -> None:
        """Back to the pool, its transaction rolled back (a connection that cannot is closed)."""
        pg = self._pg
        if not broken and not conn.closed and conn.info.transaction_status != pg.pq.TransactionStatus.IDLE:
            try:
                conn.execute("ROLLBACK")
            except pg.Error:
                broken = True
        if broken or conn.closed or conn.broken:
            if self._pid == os.getpid():
                conn.close()
            return
        with self._lock:
            if not self._closed and self._pid == os.getpid() and len(self._idle) < self.options.pool_size:
                self._idle.append(conn)
                return
        if self._pid == os.getpid():
            conn.close()

    # --- Database --------------------------------------------------------------------------------
    def create_transaction(self) -> "PostgresTransaction":
        return PostgresTransaction(self)

    def create_retry_transaction(self) -> "PostgresTransaction":
        """A transaction that holds the store's commit lock from its first read to its commit (see the
        module's "A retry cannot lose again")."""
        return PostgresTransaction(self, exclusive=True)

    def take_commit_lock_over(self, taker: "PostgresTransaction") -> None:
        """``taker`` is about to wait for the commit lock: if another transaction of this thread holds it,
        that one gives it up (it is rolled back and will fail its commit as a conflict)."""
        holder = getattr(self._holder, "tx", None)
        if holder is not None and holder is not taker:
            holder.overtaken()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _literal(key: bytes) -> str:
    """``key`` as a bytea literal (hex digits only: nothing of it can be read as SQL)."""
    return f"'\\x{key.hex()}'::bytea"


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


class PostgresTransaction(BufferedTransaction):
    """One transaction; a pooled connection is borrowed at its first read or its commit."""

    def __init__(self, db: PostgresDatabase, *, exclusive: bool = False) -> None:
        self._db = db
        #: takes the commit lock with its first read (READ COMMITTED under the lock: it cannot be overtaken)
        self.exclusive = exclusive
        self._conn: Any = None
        self._done = False
        self._guard = TransactionGuard(db.limits)
        self._writes = WriteBuffer()
        self._versionstamp: bytes | None = None
        #: another transaction of this thread took the commit lock over: the commit is a conflict
        self._overtaken = False
        #: what the reads asked the server and got: (sql, args, rows), re-asked when the commit is overtaken
        self._asked: list[tuple[str, tuple, list]] = []
        self._rows_read = 0

    # --- internals -------------------------------------------------------------------------------
    def _live(self) -> None:
        if self._done:
            raise InvalidArgument("transaction already committed or cancelled")
        self._guard.check_time()

    _check_live = _live

    def _execute(self, doing: str, sql: str, args: tuple, first: str) -> list:
        """The rows of ``sql`` with ``args``; ``first`` is the same statement with its arguments written
        as literals, sent with ``BEGIN`` in one round trip when it opens the transaction."""
        self._live()
        pg = self._db._pg
        try:
            if self._conn is None:
                self._conn = self._db._acquire()
                # one round trip: BEGIN and the first read as one simple query (no parameters)
                if self.exclusive:
                    self._db.take_commit_lock_over(self)
                    self._db._holder.tx = self
                    cur = self._conn.execute(f"BEGIN ISOLATION LEVEL READ COMMITTED; {self._db._sql_commit_lock}; "
                                             f"{first}")
                    cur.nextset()
                else:
                    cur = self._conn.execute(f"BEGIN ISOLATION LEVEL REPEATABLE READ; {first}")
                cur.nextset()
                return cur.fetchall()
            return self._conn.execute(sql, args, binary=True).fetchall()
        except pg.errors.QueryCanceled as exc:
            self._guard.check_time()   # raises LimitExceeded (transaction_seconds)
            raise self._db._error(exc, doing) from exc
        except pg.Error as exc:
            raise self._db._error(exc, doing) from exc

    def _read(self, key: bytes) -> bytes | None:
        db = self._db
        rows = self._execute("reading a key", db._sql_get, (key,), db._sql_get.replace("%b", _literal(key)))
        self._remember(db._sql_get, (key,), rows)
        return rows[0][0] if rows else None

    def _fetch(self, lo: bytes, hi: bytes, n: int, reverse: bool) -> list[tuple[bytes, bytes]]:
        sql = self._db._sql_range_rev if reverse else self._db._sql_range
        first = sql.replace("%b", _literal(lo), 1).replace("%b", _literal(hi), 1).replace("%s", str(int(n)))
        rows = self._execute("reading a range", sql, (lo, hi, n), first)
        self._remember(sql, (lo, hi, n), rows)
        return rows

    def _remember(self, sql: str, args: tuple, rows: list) -> None:
        if self._rows_read <= REVALIDATE_ROWS:
            self._asked.append((sql, args, [tuple(bytes(c) for c in r) for r in rows]))
        self._rows_read += max(len(rows), 1)

    def _unchanged(self, conn: Any) -> bool:
        """Whether every read of this transaction gets the same rows now (under the commit lock): asked again
        in one pipeline."""
        if self._rows_read > REVALIDATE_ROWS or self._overtaken:
            return False
        with conn.pipeline():
            cursors = []
            for sql, args, _ in self._asked:
                cur = conn.cursor(binary=True)
                cur.execute(sql, args)
                cursors.append(cur)
        return all([tuple(bytes(c) for c in r) for r in cur.fetchall()] == rows
                   for cur, (_, _, rows) in zip(cursors, self._asked))

    def _recommit(self, conn: Any) -> tuple[bool, Any]:
        """After the snapshot was overtaken by other commits (``40001`` at the counter): a new READ COMMITTED
        transaction takes the commit lock and asks every read again. (False, None) when a read gets other
        rows (a conflict: a commit in between wrote what this transaction read); else (True, the counter's
        row, incremented): the transaction commits as if it had run now."""
        db = self._db
        conn.execute("ROLLBACK")
        conn.execute(f"BEGIN ISOLATION LEVEL READ COMMITTED; {db._sql_commit_lock}")
        self._guard.check_time()
        if not self._unchanged(conn):
            return False, None
        return True, conn.execute(db._sql_next_version).fetchone()

    # --- lifecycle -------------------------------------------------------------------------------
    def overtaken(self) -> None:
        """Gives the commit lock up (see :meth:`PostgresDatabase.take_commit_lock_over`): rolled back; later
        reads start a new snapshot; the commit fails as a conflict."""
        self._overtaken = True
        self.exclusive = False
        conn, self._conn = self._conn, None
        if getattr(self._db._holder, "tx", None) is self:
            self._db._holder.tx = None
        if conn is not None:
            self._db._release(conn)

    def commit(self) -> None:
        self._live()
        db, pg = self._db, self._db._pg
        if self._overtaken and self._writes:
            self.cancel()
            raise RetryableError("another transaction of this thread committed while this one held the store's "
                                 "commit lock: retried")
        if not self._writes:
            if self._conn is not None:
                try:
                    self._conn.execute("COMMIT")
                except pg.Error as exc:
                    self._finish()
                    raise db._error(exc, "committing a read") from exc
            self._finish()
            return
        if db.read_only:
            self.cancel()
            raise StoreReadOnly(f"the store {db.options.where} is open read-only (mode=ro): it can be read, "
                                f"not written")
        committing = False
        db.take_commit_lock_over(self)
        try:
            if self._conn is None:
                self._conn = db._acquire()
                self._conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")   # a blind write: nothing to re-check
            conn = self._conn
            # the counter row: waits for the commit before ours, fails (40001) if our snapshot was overtaken
            try:
                row = conn.execute(db._sql_next_version).fetchone()
            except pg.errors.SerializationFailure:
                # overtaken by other commits: a conflict only if one of them wrote what this one read
                unchanged, row = self._recommit(conn)
                if not unchanged:
                    raise
            if row is None:
                raise StoreDamaged(f"the store {db.options.where} is damaged: its commit version counter is "
                                   f"missing; {REPAIR_HINT}", path=db.options.where)
            self._guard.check_time()
            stamp = int(row[0]).to_bytes(8, "big") + b"\x00\x00"
            stored = self._read_added(conn)
            # from here the COMMIT may have been sent: a lost connection is an unknown result
            committing = True
            self._write_and_commit(conn, stamp, stored)
        except pg.errors.QueryCanceled as exc:
            self._finish()
            self._guard.check_time()
            raise db._error(exc, "committing") from exc
        except pg.errors.UndefinedTable as exc:
            self._finish()
            raise StoreDamaged(f"the store {db.options.where} is damaged: {_one_line(exc)}; {REPAIR_HINT}",
                               path=db.options.where) from exc
        except pg.Error as exc:
            self._finish()
            raise db._error(exc, "committing", committing=committing) from exc
        except BaseException:
            self._finish(broken=True)
            raise
        self._versionstamp = stamp
        self._finish()

    def _read_added(self, conn: Any) -> dict[bytes, bytes]:
        """The stored values of the keys this transaction adds to (read under the commit lock: no other
        commit runs between this read and the write)."""
        keys = [k for k, (kind, _) in self._writes.entries.items() if kind == ADD]
        if not keys:
            return {}
        return dict(conn.execute(f"SELECT k, v FROM {self._db.options.schema}.kv WHERE k = ANY(%b)", (keys,),
                                 binary=True).fetchall())

    def _write_and_commit(self, conn: Any, stamp: bytes, stored: dict[bytes, bytes]) -> None:
        """The writes and ``COMMIT`` in one pipeline: one round trip (a statement that fails aborts the
        rest, ``COMMIT`` included)."""
        s = self._db.options.schema
        writes = self._writes
        sets: dict[bytes, bytes] = {}
        clears: list[bytes] = []
        for key, (kind, arg) in writes.entries.items():
            if kind == SET:
                sets[key] = arg  # type: ignore[assignment]
            elif kind == CLEAR:
                clears.append(key)
            else:
                assert kind == ADD
                sets[key] = add_le64(stored.get(key), arg)  # type: ignore[arg-type]
        for key, value in writes.final_versionstamped(stamp):
            sets.pop(key, None)
            sets[key] = value
        with conn.pipeline():
            cur = conn.cursor(binary=True)
            if writes.begins:
                cur.executemany(f"DELETE FROM {s}.kv WHERE k >= %b AND k < %b", list(zip(writes.begins, writes.ends)))
            if clears:
                cur.execute(f"DELETE FROM {s}.kv WHERE k = ANY(%b)", (clears,))
            if sets:
                cur.execute(f"INSERT INTO {s}.kv (k, v) SELECT * FROM unnest(%b::bytea[], %b::bytea[]) "
                            f"ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v", (list(sets), list(sets.values())))
            cur.execute("COMMIT")

    def cancel(self) -> None:
        if not self._done:
            self._finish()

    def _finish(self, *, broken: bool = False) -> None:
        self._done = True
        if getattr(self._db._holder, "tx", None) is self:
            self._db._holder.tx = None
        conn, self._conn = self._conn, None
        if conn is not None:
            self._db._release(conn, broken=broken)
