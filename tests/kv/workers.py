"""Worker processes of the contract suite (spawned: each opens the store by URI)."""
from __future__ import annotations

import multiprocessing
import os
import traceback
from typing import Any, Callable

import fdb.tuple

from ushas_catalog.kv import Transaction, open_database

TIMEOUT_S = 120


def run_processes(target: Callable[..., Any], args: list[tuple]) -> list[Any]:
    """Start one spawned process per argument tuple, let them all begin at once (barrier), and
    return their results in argument order; a failed worker fails the caller with its traceback."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(args))
    results = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(i, target, a, barrier, results)) for i, a in enumerate(args)]
    for p in procs:
        p.start()
    out: dict[int, Any] = {}
    try:
        for _ in procs:
            index, ok, value = results.get(timeout=TIMEOUT_S)
            if not ok:
                raise AssertionError(f"worker {index} failed:\n{value}")
            out[index] = value
    finally:
        for p in procs:
            p.join(timeout=TIMEOUT_S)
            if p.is_alive():
                p.kill()
    return [out[i] for i in range(len(args))]


def _worker(index: int, target: Callable[..., Any], args: tuple, barrier: Any, results: Any) -> None:
    try:
        barrier.wait(timeout=TIMEOUT_S)
        results.put((index, True, target(*args)))
    except BaseException:
        results.put((index, False, traceback.format_exc()))


def increment(uri: str, key: bytes, times: int) -> int:
    """Read-modify-write ``key`` (a decimal counter) ``times`` times; returns the attempts made."""
    db = open_database(uri)
    attempts = 0

    def bump(tr: Transaction) -> None:
        nonlocal attempts
        attempts += 1
        tr.set(key, str(int(tr.get(key) or b"0") + 1).encode())

    for _ in range(times):
        db.run(bump)
    db.close()
    return attempts


def add(uri: str, key: bytes, deltas: list[int]) -> None:
    db = open_database(uri)
    for delta in deltas:
        db.run(lambda tr: tr.add(key, delta))
    db.close()


def log_with_versionstamps(uri: str, prefix: bytes, worker: int, count: int) -> list[tuple[int, bytes]]:
    """``count`` transactions, each taking the next number of a shared sequence (read-modify-
    write, so the numbers follow commit order) and writing a versionstamped key whose value is
    that number. Returns (number, versionstamp) per committed transaction."""
    db = open_database(uri)
    sequence_key = prefix + b"sequence"
    out = []
    for _ in range(count):
        attempt: list[Transaction] = []

        def step(tr: Transaction) -> int:
            attempt[:] = [tr]
            number = int(tr.get(sequence_key) or b"0")
            tr.set(sequence_key, str(number + 1).encode())
            key = fdb.tuple.pack_with_versionstamp(("log", fdb.tuple.Versionstamp()), prefix=prefix)
            tr.set_versionstamped_key(key, fdb.tuple.pack((number, worker)))
            return number

        number = db.run(step)
        out.append((number, attempt[0].get_versionstamp()))   # the attempt that committed
    db.close()
    return out


def write_and_die(uri: str, key: bytes, value: bytes) -> None:
    """Commit one write, then exit without closing anything (no atexit, no finalizers)."""
    db = open_database(uri)
    db.run(lambda tr: tr.set(key, value))
    os._exit(0)
