"""The engine contract: every test runs on every engine (see ``conftest.store``).

FoundationDB semantics — snapshot reads, read-your-writes, serializable commits retried by
``Database.run``, atomic add, versionstamps, limits — must hold identically on ``sqlite://``
and ``fdb://``. No timing assertions: the time-limit tests lower the limit and sleep past it.
"""
from __future__ import annotations

import multiprocessing
import struct
import threading
import time
import uuid
from typing import Any

import fdb.tuple
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ushas_catalog.errors import Conflict, InvalidArgument, LimitExceeded
from ushas_catalog.kv import FDB_LIMITS, Database, KeyValue, Limits, RetryableError, Transaction, transactional
from ushas_catalog.kv.ryw import MAX_BATCH

from .conftest import Store
from .workers import add, increment, log_with_versionstamps, run_processes, write_and_die


def keys_of(kvs: Any) -> list[bytes]:
    return [kv.key for kv in kvs]


def put(db: Database, items: dict[bytes, bytes]) -> None:
    def write(tr: Transaction) -> None:
        for k, v in items.items():
            tr.set(k, v)
    db.run(write)


def le64(n: int) -> bytes:
    return struct.pack("<q", n)


# --- basic reads and writes ----------------------------------------------------------------------
def test_get_set_clear(store: Store) -> None:
    db, k = store.db, store.key
    assert db.run(lambda tr: tr.get(k(b"a"))) is None
    put(db, {k(b"a"): b"1", k(b"b"): b"", k(b"c"): b"\x00\xff"})
    assert db.run(lambda tr: [tr.get(k(x)) for x in (b"a", b"b", b"c", b"d")]) == [b"1", b"", b"\x00\xff", None]
    put(db, {k(b"a"): b"2"})
    db.run(lambda tr: tr.clear(k(b"c")))
    db.run(lambda tr: tr.clear(k(b"never-written")))
    assert db.run(lambda tr: list(tr.get_range(store.prefix, store.end()))) == [
        KeyValue(k(b"a"), b"2"), KeyValue(k(b"b"), b"")]


def test_set_many_is_set_of_each_pair_in_order(store: Store) -> None:
    db, k = store.db, store.key

    def write(tr: Transaction) -> list[bytes | None]:
        tr.set(k(b"z"), b"old")
        tr.set_many([(k(b"b"), b"1"), (k(b"a"), b"2"), (bytearray(k(b"c")), memoryview(b"3")), (k(b"b"), b"4"),
                     (k(b"z"), b"new")])
        return [tr.get(k(x)) for x in (b"a", b"b", b"c", b"z")]  # read your writes

    assert db.run(write) == [b"2", b"4", b"3", b"new"]
    assert db.run(lambda tr: list(tr.get_range(store.prefix, store.end()))) == [
        KeyValue(k(b"a"), b"2"), KeyValue(k(b"b"), b"4"), KeyValue(k(b"c"), b"3"), KeyValue(k(b"z"), b"new")]
    db.run(lambda tr: tr.set_many([]))
    assert len(db.run(lambda tr: list(tr.get_range(store.prefix, store.end())))) == 4


def test_range_order_is_bytewise_including_high_bytes(store: Store) -> None:
    suffixes = [bytes([b]) for b in range(256)] + [b"\x01\x00", b"\x7f\xff", b"\x80", b"\x80\x00",
                                                    b"\xfe\xff\xff", b"", b"\x00\x00"]
    suffixes = list(dict.fromkeys(suffixes))
    shuffled = sorted(suffixes, key=lambda s: (hash(s) % 97, s))
    put(store.db, {store.key(s): s for s in shuffled})
    expected = [store.key(s) for s in sorted(suffixes)]
    got = store.db.run(lambda tr: keys_of(tr.get_range(store.prefix, store.end())))
    assert got == expected
    assert store.db.run(lambda tr: keys_of(tr.get_range(store.prefix, store.end(), reverse=True))) == expected[::-1]
    assert store.key(b"\x7f\xff") < store.key(b"\x80") < store.key(b"\x80\x00") < store.key(b"\x81")
    assert got.index(store.key(b"\x7f\xff")) < got.index(store.key(b"\x80")) < got.index(store.key(b"\x81"))


RANGE_CASES = [
    # (begin, end, limit, reverse, expected suffixes)
    (b"a", b"e", 0, False, [b"a", b"b", b"c", b"d"]),
    (b"b", b"d", 0, False, [b"b", b"c"]),
    (b"b\x00", b"d\x00", 0, False, [b"c", b"d"]),
    (b"a", b"z", 2, False, [b"a", b"b"]),
    (b"a", b"z", 2, True, [b"e", b"d"]),
    (b"a", b"e", 0, True, [b"d", b"c", b"b", b"a"]),
    (b"a", b"z", 100, False, [b"a", b"b", b"c", b"d", b"e"]),
    (b"c", b"c", 0, False, []),
    (b"d", b"b", 0, False, []),
    (b"x", b"z", 0, True, []),
]


@pytest.mark.parametrize("begin,end,limit,reverse,expected", RANGE_CASES)
def test_range_bounds_limit_reverse(store: Store, begin: bytes, end: bytes, limit: int, reverse: bool,
                                    expected: list[bytes]) -> None:
    put(store.db, {store.key(s): s for s in (b"a", b"b", b"c", b"d", b"e")})
    got = store.db.run(lambda tr: keys_of(tr.get_range(store.key(begin), store.key(end), limit=limit,
                                                       reverse=reverse)))
    assert got == [store.key(s) for s in expected]


def test_get_range_startswith_and_clear_range_startswith(store: Store) -> None:
    put(store.db, {store.key(s): b"v" for s in (b"ab", b"ab\x00", b"ab\xff", b"ac", b"a")})
    got = store.db.run(lambda tr: keys_of(tr.get_range_startswith(store.key(b"ab"))))
    assert got == [store.key(s) for s in (b"ab", b"ab\x00", b"ab\xff")]
    store.db.run(lambda tr: tr.clear_range_startswith(store.key(b"ab")))
    assert store.db.run(lambda tr: keys_of(tr.get_range_startswith(store.prefix))) == [
        store.key(b"a"), store.key(b"ac")]


def test_streaming_over_more_than_one_batch(store: Store) -> None:
    n = MAX_BATCH * 2 + 123
    for start in range(0, n, 5000):
        put(store.db, {store.key(b"%06d" % i): b"%d" % i for i in range(start, min(n, start + 5000))})

    def scan(tr: Transaction) -> tuple[list[bytes], list[bytes], list[bytes]]:
        forward = keys_of(tr.get_range(store.prefix, store.end()))
        backward = keys_of(tr.get_range(store.prefix, store.end(), reverse=True))
        limited = keys_of(tr.get_range(store.prefix, store.end(), limit=MAX_BATCH + 7, reverse=True))
        return forward, backward, limited

    forward, backward, limited = store.db.run(scan)
    expected = [store.key(b"%06d" % i) for i in range(n)]
    assert forward == expected
    assert backward == expected[::-1]
    assert limited == expected[::-1][:MAX_BATCH + 7]


def test_clear_range(store: Store) -> None:
    put(store.db, {store.key(s): s for s in (b"a", b"b", b"b\x00", b"c", b"d")})
    store.db.run(lambda tr: tr.clear_range(store.key(b"b"), store.key(b"c")))
    store.db.run(lambda tr: tr.clear_range(store.key(b"x"), store.key(b"x")))  # empty: no-op
    assert store.db.run(lambda tr: keys_of(tr.get_range(store.prefix, store.end()))) == [
        store.key(b"a"), store.key(b"c"), store.key(b"d")]
    with pytest.raises(InvalidArgument, match="inverted range"):
        store.db.run(lambda tr: tr.clear_range(store.key(b"d"), store.key(b"a")))


# --- read-your-writes ------------------------------------------------------------------------------
def test_read_your_writes_over_ranges(store: Store) -> None:
    k = store.key
    put(store.db, {k(s): b"old-" + s for s in (b"a", b"b", b"c", b"d", b"e", b"f")})
    put(store.db, {k(b"n"): le64(10)})

    def work(tr: Transaction) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        tr.set(k(b"b"), b"new-b")
        tr.set(k(b"bb"), b"new-bb")
        tr.clear(k(b"c"))
        tr.clear_range(k(b"d"), k(b"f"))         # d, e gone
        tr.set(k(b"e"), b"again-e")               # written back inside the cleared range
        tr.add(k(b"n"), 5)
        tr.add(k(b"m"), 7)                         # add over a missing key
        tr.clear_range(k(b"x"), k(b"z"))
        tr.add(k(b"y"), 3)                         # add inside a cleared range
        seen["all"] = [(kv.key[len(store.prefix):], kv.value) for kv in tr.get_range(store.prefix, store.end())]
        seen["rev2"] = keys_of(tr.get_range(store.prefix, store.end(), reverse=True, limit=2))
        seen["point"] = [tr.get(k(s)) for s in (b"b", b"c", b"d", b"e", b"n", b"m", b"y")]
        return seen

    seen = store.db.run(work)
    assert seen["all"] == [(b"a", b"old-a"), (b"b", b"new-b"), (b"bb", b"new-bb"), (b"e", b"again-e"),
                           (b"f", b"old-f"), (b"m", le64(7)), (b"n", le64(15)), (b"y", le64(3))]
    assert seen["rev2"] == [k(b"y"), k(b"n")]
    assert seen["point"] == [b"new-b", None, None, b"again-e", le64(15), le64(7), le64(3)]
    # and what was committed is what the transaction saw
    committed = store.db.run(lambda tr: [(kv.key[len(store.prefix):], kv.value)
                                         for kv in tr.get_range(store.prefix, store.end())])
    assert committed == seen["all"]


def test_read_your_writes_across_batches(store: Store) -> None:
    """Pending writes interleaved with more stored rows than one batch holds."""
    n = MAX_BATCH + 500
    put(store.db, {store.key(b"%06d" % (2 * i)): b"stored" for i in range(n)})

    def work(tr: Transaction) -> tuple[list[bytes], list[bytes]]:
        for i in range(0, 2 * n, 7):
            tr.set(store.key(b"%06d" % i), b"pending")       # odd ones are new keys
        tr.clear_range(store.key(b"%06d" % 1000), store.key(b"%06d" % 3000))
        return (keys_of(tr.get_range(store.prefix, store.end())),
                keys_of(tr.get_range(store.prefix, store.end(), reverse=True)))

    forward, backward = store.db.run(work)
    expected = sorted({store.key(b"%06d" % (2 * i)) for i in range(n)}
                      | {store.key(b"%06d" % i) for i in range(0, 2 * n, 7)})
    expected = [key for key in expected if not store.key(b"%06d" % 1000) <= key < store.key(b"%06d" % 3000)]
    assert forward == expected
    assert backward == expected[::-1]


# --- isolation and conflicts --------------------------------------------------------------------
def test_snapshot_isolation(store: Store) -> None:
    k = store.key
    put(store.db, {k(b"a"): b"1", k(b"b"): b"1"})
    reader = store.db.create_transaction()
    try:
        assert reader.get(k(b"a")) == b"1"
        put(store.db, {k(b"a"): b"2", k(b"b"): b"2", k(b"c"): b"2"})      # another committed writer
        assert reader.get(k(b"a")) == b"1"
        assert reader.get(k(b"b")) == b"1"
        assert [(kv.key, kv.value) for kv in reader.get_range(store.prefix, store.end())] == [
            (k(b"a"), b"1"), (k(b"b"), b"1")]
    finally:
        reader.cancel()
    assert store.db.run(lambda tr: tr.get(k(b"c"))) == b"2"


def test_read_only_transaction_commits_after_concurrent_writer(store: Store) -> None:
    put(store.db, {store.key(b"a"): b"1"})
    reader = store.db.create_transaction()
    assert reader.get(store.key(b"a")) == b"1"
    put(store.db, {store.key(b"a"): b"2"})
    reader.commit()                               # a read-only transaction never conflicts


def test_overtaken_transaction_fails_retryable_and_loses_no_update(store: Store) -> None:
    key = store.key(b"counter")
    put(store.db, {key: b"0"})
    first, second = store.db.create_transaction(), store.db.create_transaction()
    try:
        a, b = int(first.get(key)), int(second.get(key))
        first.set(key, str(a + 1).encode())
        second.set(key, str(b + 1).encode())
        first.commit()
        with pytest.raises(RetryableError):
            second.commit()
    finally:
        second.cancel()
    assert store.db.run(lambda tr: tr.get(key)) == b"1"


@pytest.mark.parametrize("blind", ["set", "add", "clear_range", "versionstamped"])
def test_a_read_overtaken_by_a_blind_write_conflicts(store: Store, blind: str) -> None:
    """A transaction that read a key and writes ANOTHER one conflicts when a blind write (no read:
    set, atomic add, clear range) committed to what it read after its read: no write skew."""
    k, other = store.key(b"k"), store.key(b"other")
    put(store.db, {k: le64(0)})
    reader = store.db.create_transaction()
    try:
        seen = reader.get(k)
        if blind == "set":
            store.db.run(lambda tr: tr.set(k, le64(1)))
        elif blind == "add":
            store.db.run(lambda tr: tr.add(k, 1))
        elif blind == "clear_range":
            store.db.run(lambda tr: tr.clear_range(k, k + b"\x00"))
        else:
            store.db.run(lambda tr: (tr.set(k, le64(1)),
                                     tr.set_versionstamped_key(fdb.tuple.pack_with_versionstamp(
                                         ("vs", fdb.tuple.Versionstamp()), prefix=store.prefix), b"")))
        reader.set(other, b"decided on " + (seen or b"nothing"))
        with pytest.raises(RetryableError):
            reader.commit()
    finally:
        reader.cancel()
    assert store.db.run(lambda tr: tr.get(other)) is None


def test_concurrent_conflict_is_retried_by_run(store: Store) -> None:
    key = store.key(b"counter")
    barrier = threading.Barrier(2)
    attempts = {"t0": 0, "t1": 0}
    errors: list[BaseException] = []

    def worker(name: str) -> None:
        def bump(tr: Transaction) -> None:
            attempts[name] += 1
            value = int(tr.get(key) or b"0")
            if attempts[name] == 1:
                barrier.wait(timeout=30)             # both have read 0 before either commits
            tr.set(key, str(value + 1).encode())
        try:
            store.db.run(bump)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(name,)) for name in attempts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert store.db.run(lambda tr: tr.get(key)) == b"2"
    assert sum(attempts.values()) >= 3                   # one of them conflicted and ran again


def test_run_gives_up_with_conflict_after_max_retries(store: Store) -> None:
    store.db.max_retries = 2
    calls = 0

    def always_conflicts(tr: Transaction) -> None:
        nonlocal calls
        calls += 1
        tr.get(store.key(b"k"))
        put(store.db, {store.key(b"k"): b"%d" % calls})  # overtake our own snapshot
        tr.set(store.key(b"k"), b"mine")

    with pytest.raises(Conflict, match="3 attempts"):
        store.db.run(always_conflicts)
    assert calls == 3
    assert store.db.run(lambda tr: tr.get(store.key(b"k"))) == b"3"


def test_four_processes_read_modify_write_one_counter(store: Store) -> None:
    key = store.key(b"counter")
    per_process = 25
    attempts = run_processes(increment, [(store.uri, key, per_process)] * 4)
    assert store.db.run(lambda tr: tr.get(key)) == str(4 * per_process).encode()
    assert all(a >= per_process for a in attempts)


# --- limits --------------------------------------------------------------------------------------------
def test_default_limits_are_foundationdb_limits(store: Store) -> None:
    assert store.db.limits == FDB_LIMITS == Limits(key_bytes=10_000, value_bytes=100_000,
                                                   transaction_bytes=10_000_000, transaction_seconds=5.0)


LIMIT_CASES = [
    ("key_bytes", lambda s, tr: tr.set(s.prefix + b"k" * (10_000 - len(s.prefix)), b"v"),
     lambda s, tr: tr.set(s.prefix + b"k" * (10_001 - len(s.prefix)), b"v")),
    ("key_bytes", lambda s, tr: tr.get(s.prefix + b"k" * (10_000 - len(s.prefix))),
     lambda s, tr: tr.get(s.prefix + b"k" * (10_001 - len(s.prefix)))),
    ("key_bytes", lambda s, tr: tr.add(s.prefix + b"k" * (10_000 - len(s.prefix)), 1),
     lambda s, tr: tr.add(s.prefix + b"k" * (10_001 - len(s.prefix)), 1)),
    ("key_bytes", lambda s, tr: tr.clear(s.prefix + b"k" * (10_000 - len(s.prefix))),
     lambda s, tr: tr.clear(s.prefix + b"k" * (10_001 - len(s.prefix)))),
    ("value_bytes", lambda s, tr: tr.set(s.key(b"v"), b"x" * 100_000),
     lambda s, tr: tr.set(s.key(b"v"), b"x" * 100_001)),
    ("key_bytes", lambda s, tr: tr.set_many([(s.key(b"a"), b""), (s.prefix + b"k" * (10_000 - len(s.prefix)), b"v")]),
     lambda s, tr: tr.set_many([(s.key(b"a"), b""), (s.prefix + b"k" * (10_001 - len(s.prefix)), b"v")])),
    ("value_bytes", lambda s, tr: tr.set_many([(s.key(b"v"), b"x" * 100_000)]),
     lambda s, tr: tr.set_many([(s.key(b"a"), b""), (s.key(b"v"), b"x" * 100_001)])),
]


@pytest.mark.parametrize("limit,within,beyond", LIMIT_CASES)
def test_key_and_value_limits(store: Store, limit: str, within: Any, beyond: Any) -> None:
    store.db.run(lambda tr: within(store, tr))
    with pytest.raises(LimitExceeded, match=limit) as info:
        store.db.run(lambda tr: beyond(store, tr))
    assert info.value.limit == limit


def test_transaction_size_limit(store: Store) -> None:
    value = b"x" * 100_000
    done = 0

    def big(tr: Transaction) -> None:
        nonlocal done
        tr.set(store.key(b"first"), b"must not be committed")
        for i in range(200):
            tr.set(store.key(b"big%03d" % i), value)
            done = i + 1

    with pytest.raises(LimitExceeded, match="transaction_bytes") as info:
        store.db.run(big)
    assert info.value.limit == "transaction_bytes"
    per_set = len(store.key(b"big000")) + len(value)
    assert done == (10_000_000 - len(store.key(b"first")) - 21) // per_set
    assert store.db.run(lambda tr: list(tr.get_range(store.prefix, store.end()))) == []   # nothing half-written


@pytest.mark.parametrize("op,cost", [
    (lambda s, tr: tr.set(s.key(b"k"), b"vvvv"), lambda s: len(s.key(b"k")) + 4),
    (lambda s, tr: tr.set_many([(s.key(b"k"), b"vv"), (s.key(b"l"), b"")]), lambda s: 2 * len(s.key(b"k")) + 2),
    (lambda s, tr: tr.clear(s.key(b"k")), lambda s: 2 * len(s.key(b"k")) + 1),
    (lambda s, tr: tr.clear_range(s.key(b"a"), s.key(b"bb")), lambda s: len(s.key(b"a")) + len(s.key(b"bb"))),
    (lambda s, tr: tr.add(s.key(b"k"), 1), lambda s: len(s.key(b"k")) + 8),
])
def test_transaction_size_counts_mutations_like_foundationdb(store: Store, op: Any, cost: Any) -> None:
    store.db.limits = Limits(transaction_bytes=3 * cost(store))
    store.db.run(lambda tr: [op(store, tr) for _ in range(3)])
    with pytest.raises(LimitExceeded, match="transaction_bytes"):
        store.db.run(lambda tr: [op(store, tr) for _ in range(4)])


def test_transaction_time_limit(store: Store) -> None:
    store.db.limits = Limits(transaction_seconds=0.2)
    k = store.key(b"k")

    def slow_then_read(tr: Transaction) -> None:
        tr.set(k, b"v")
        time.sleep(0.3)
        tr.get(k)

    with pytest.raises(LimitExceeded, match="transaction_seconds") as info:
        store.db.run(slow_then_read)
    assert info.value.limit == "transaction_seconds"

    tr = store.db.create_transaction()
    tr.set(k, b"v")
    time.sleep(0.3)
    with pytest.raises(LimitExceeded, match="transaction_seconds"):
        tr.commit()
    tr.cancel()
    store.db.limits = FDB_LIMITS
    assert store.db.run(lambda tr: tr.get(k)) is None


@pytest.mark.parametrize("op,message", [
    (lambda s, tr: tr.set("text", b"v"), "key must be bytes"),
    (lambda s, tr: tr.set(s.key(b"k"), "text"), "value must be bytes"),
    (lambda s, tr: tr.get(b"\xff/system"), "system keyspace"),
    (lambda s, tr: tr.set(b"\xff", b"v"), "system keyspace"),
    (lambda s, tr: tr.set_many([(s.key(b"k"), b"v"), (b"\xff", b"v")]), "system keyspace"),
    (lambda s, tr: tr.set_many([(s.key(b"k"), "text")]), "value must be bytes"),
    (lambda s, tr: tr.set_many([("text", b"v")]), "key must be bytes"),
    (lambda s, tr: list(tr.get_range(b"", b"\xff\x00")), "system keyspace"),
    (lambda s, tr: list(tr.get_range(b"", b"\xff", limit=-1)), "range limit"),
    (lambda s, tr: tr.add(s.key(b"k"), 1.5), "delta must be an int"),
    (lambda s, tr: tr.set_versionstamped_key(s.key(b"k"), b"v"), "versionstamp offset"),
])
def test_bad_arguments_are_typed_errors(store: Store, op: Any, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        store.db.run(lambda tr: op(store, tr))


def test_finished_transaction_refuses_use(store: Store) -> None:
    tr = store.db.create_transaction()
    tr.set(store.key(b"k"), b"v")
    tr.commit()
    with pytest.raises(InvalidArgument, match="already committed"):
        tr.get(store.key(b"k"))


# --- atomic add ---------------------------------------------------------------------------------
ADD_CASES = [
    # (stored value or None, deltas, expected stored value)
    (None, [5], le64(5)),
    (le64(10), [-3, -10], le64(-3)),
    (le64(2**63 - 1), [1], le64(-2**63)),                       # signed wrap
    (b"\xff" * 8, [1], le64(0)),                                # unsigned wrap
    (b"\x01", [1], le64(2)),                                    # shorter: zero-extended
    (le64(7) + b"tail", [1], le64(8)),                          # longer: truncated to 8 bytes
    (None, [2**64 + 3], le64(3)),                               # delta wraps too
]


@pytest.mark.parametrize("stored,deltas,expected", ADD_CASES)
def test_atomic_add(store: Store, stored: bytes | None, deltas: list[int], expected: bytes) -> None:
    key = store.key(b"n")
    if stored is not None:
        put(store.db, {key: stored})
    store.db.run(lambda tr: [tr.add(key, d) for d in deltas])
    assert store.db.run(lambda tr: tr.get(key)) == expected


def test_concurrent_adds_from_processes_are_exact(store: Store) -> None:
    key = store.key(b"total")
    deltas = [[i * 1000 + j for j in range(30)] for i in range(4)]
    run_processes(add, [(store.uri, key, d) for d in deltas])
    assert store.db.run(lambda tr: tr.get(key)) == le64(sum(map(sum, deltas)))


# --- versionstamps ------------------------------------------------------------------------------
def test_versionstamped_key_is_filled_at_commit(store: Store) -> None:
    holder: list[Transaction] = []

    def write(tr: Transaction) -> None:
        holder[:] = [tr]
        for user_version in (1, 0):
            key = fdb.tuple.pack_with_versionstamp(("ev", fdb.tuple.Versionstamp(user_version=user_version)),
                                                   prefix=store.prefix)
            tr.set_versionstamped_key(key, b"v%d" % user_version)

    store.db.run(write)
    stamp = holder[0].get_versionstamp()
    assert len(stamp) == 10
    rows = store.db.run(lambda tr: list(tr.get_range_startswith(store.prefix)))
    decoded = [fdb.tuple.unpack(kv.key, prefix_len=len(store.prefix)) for kv in rows]
    assert [d[1] for d in decoded] == [fdb.tuple.Versionstamp(stamp, 0), fdb.tuple.Versionstamp(stamp, 1)]
    assert [kv.value for kv in rows] == [b"v0", b"v1"]


def test_versionstamp_of_a_read_only_transaction_is_an_error(store: Store) -> None:
    tr = store.db.create_transaction()
    tr.get(store.key(b"k"))
    tr.commit()
    with pytest.raises(InvalidArgument, match="versionstamp"):
        tr.get_versionstamp()


def test_versionstamps_follow_commit_order_across_processes(store: Store) -> None:
    per_process = 15
    results = run_processes(log_with_versionstamps, [(store.uri, store.prefix, w, per_process) for w in range(4)])
    rows = store.db.run(lambda tr: list(tr.get_range_startswith(store.prefix + fdb.tuple.pack(("log",)))))
    numbers = [fdb.tuple.unpack(kv.value)[0] for kv in rows]
    stamps = [fdb.tuple.unpack(kv.key, prefix_len=len(store.prefix))[1].tr_version for kv in rows]
    total = 4 * per_process
    assert numbers == list(range(total))                  # key order == commit order
    assert len(set(stamps)) == total and stamps == sorted(stamps)
    reported = dict(number_stamp for worker in results for number_stamp in worker)
    assert [reported[n] for n in numbers] == stamps       # get_versionstamp() is the key's stamp


# --- durability ------------------------------------------------------------------------------
def test_durable_across_reopen_and_process_exit(store: Store) -> None:
    put(store.db, {store.key(b"a"): b"1"})
    store.db.close()
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=write_and_die, args=(store.uri, store.key(b"b"), b"2"))
    proc.start()
    proc.join(timeout=120)
    assert proc.exitcode == 0
    reopened = store.reopen()
    store.db = reopened
    assert reopened.run(lambda tr: [tr.get(store.key(b"a")), tr.get(store.key(b"b"))]) == [b"1", b"2"]


# --- @transactional ------------------------------------------------------------------------
@transactional
def bump(tr: Transaction, key: bytes, by: int = 1) -> int:
    value = int(tr.get(key) or b"0") + by
    tr.set(key, str(value).encode())
    return value


@transactional
def bump_second(label: str, tr: Transaction, key: bytes) -> str:
    return f"{label}:{bump(tr, key)}"


def test_transactional_decorator_both_call_forms(store: Store) -> None:
    key = store.key(b"n")
    assert bump(store.db, key) == 1                       # a Database: own retried transaction
    assert bump(tr=store.db, key=key, by=2) == 3          # keyword form
    assert bump_second("x", store.db, key) == "x:4"       # tr not the first parameter
    assert store.db.run(lambda tr: (bump(tr, key), bump(tr=tr, key=key))) == (5, 6)   # inside a transaction

    def then_fail(tr: Transaction) -> None:
        bump(tr, key)                                     # joins the caller's transaction ...
        raise ValueError("boom")

    with pytest.raises(ValueError):
        store.db.run(then_fail)
    assert store.db.run(lambda tr: tr.get(key)) == b"6"   # ... so nothing of it was committed


# --- read-your-writes against a model --------------------------------------------------------------
KEYS = st.lists(st.sampled_from([b"\x00", b"a", b"\x80"]), max_size=2).map(b"".join)
OPS = st.one_of(
    st.tuples(st.just("set"), KEYS, st.binary(max_size=10)),
    st.tuples(st.just("clear"), KEYS),
    st.tuples(st.just("clear_range"), KEYS, KEYS),
    st.tuples(st.just("add"), KEYS, st.integers(min_value=-2**64, max_value=2**64)),
    st.tuples(st.just("get"), KEYS),
    st.tuples(st.just("range"), KEYS, KEYS, st.integers(min_value=0, max_value=6), st.booleans()),
)


def model_add(value: bytes | None, delta: int) -> bytes:
    base = int.from_bytes((value or b"")[:8].ljust(8, b"\x00"), "little")
    return ((base + delta) % 2**64).to_bytes(8, "little")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(initial=st.dictionaries(KEYS, st.binary(max_size=10), min_size=3, max_size=13), ops=st.lists(OPS, min_size=10, max_size=40))
def test_read_your_writes_matches_a_model(store: Store, monkeypatch: pytest.MonkeyPatch,
                                          initial: dict[bytes, bytes], ops: list[tuple]) -> None:
    """Random mutations and reads in one transaction over random stored data behave like a
    sorted dict; tiny batches make every range read cross batch boundaries."""
    monkeypatch.setattr("ushas_catalog.kv.ryw.FIRST_BATCH", 2)
    monkeypatch.setattr("ushas_catalog.kv.ryw.MAX_BATCH", 4)
    prefix = store.prefix + uuid.uuid4().hex.encode() + b"/"
    put(store.db, {prefix + k: v for k, v in initial.items()})
    model: dict[bytes, bytes] = {}

    def work(tr: Transaction) -> None:
        model.clear()
        model.update(initial)
        for op in ops:
            kind = op[0]
            if kind == "set":
                tr.set(prefix + op[1], op[2])
                model[op[1]] = op[2]
            elif kind == "clear":
                tr.clear(prefix + op[1])
                model.pop(op[1], None)
            elif kind == "clear_range":
                lo, hi = sorted(op[1:3])
                tr.clear_range(prefix + lo, prefix + hi)
                for k in [k for k in model if lo <= k < hi]:
                    del model[k]
            elif kind == "add":
                tr.add(prefix + op[1], op[2])
                model[op[1]] = model_add(model.get(op[1]), op[2])
            elif kind == "get":
                assert tr.get(prefix + op[1]) == model.get(op[1]), op
            else:
                _, lo, hi, limit, reverse = op
                expected = sorted(k for k in model if lo <= k < hi)
                if reverse:
                    expected.reverse()
                if limit:
                    expected = expected[:limit]
                got = [(kv.key[len(prefix):], kv.value)
                       for kv in tr.get_range(prefix + lo, prefix + hi, limit=limit, reverse=reverse)]
                assert got == [(k, model[k]) for k in expected], op

    store.db.run(work)
    stored = store.db.run(lambda tr: [(kv.key[len(prefix):], kv.value) for kv in tr.get_range_startswith(prefix)])
    assert stored == sorted(model.items())
