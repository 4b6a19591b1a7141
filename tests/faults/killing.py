"""Killing writers at random points and checking what they left (``tests/`` is on ``sys.path``).

A writer runs a fixed program of operations on tables ``main.w.r<run>_<i>`` and prints ``DONE <n>``
after its n-th operation committed. :func:`model` says what the store holds after the first n
operations; after a SIGKILL the store must hold the state after the last reported operation or after
the one in flight (each operation is one transaction: all of it or nothing), and pass ``ushas check``.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

T = TypeVar("T")

#: killed processes running at once in :func:`in_lanes` (the machine's two cores: one starts while another runs)
LANES = 2

#: partitions each table gets in one operation
PARTS = 40
#: tables per writer run (every third is dropped at the end of its steps)
TABLES = 30

#: the writer: a Python API program; argv: uri, run number
WRITER = r"""
import sys
from ushas_catalog.errors import CatalogAlreadyExists, NamespaceAlreadyExists
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.table_changes import SetProperty

uri, run = sys.argv[1], int(sys.argv[2])
ms = Metastore.open(uri, project="acme", user="writer")
try:
    ms.create_catalog("main", if_not_exists=True)
    ms.create_database("main.w", if_not_exists=True)
except (CatalogAlreadyExists, NamespaceAlreadyExists):
    pass
print("READY", flush=True)
n = 0
for i in range(%(tables)d):
    t = f"main.w.r{run}_{i}"
    steps = [
        lambda: ms.create_table(t, "id INT, dt STRING", partition_by=["dt"], properties={"step": "created"}),
        lambda: ms.add_partitions(t, [{"dt": f"d{k:03d}"} for k in range(%(parts)d)]),
        lambda: ms.metadata.tag(t, ["w"]),
        lambda: ms.alter_table(t, [SetProperty("step", "altered")]),
    ]
    if i %% 3 == 0:
        steps.append(lambda: ms.drop_table(t))
    for step in steps:
        step()
        n += 1
        print(f"DONE {n}", flush=True)
print("FINISHED", flush=True)
""" % {"tables": TABLES, "parts": PARTS}


@dataclass(frozen=True)
class TableState:
    partitions: int
    tagged: bool
    step: str


def model(run: int, done: int) -> dict[str, TableState]:
    """The live tables of run ``run`` after its first ``done`` operations."""
    out: dict[str, TableState] = {}
    n = 0
    for i in range(TABLES):
        name = f"r{run}_{i}"
        ops = ["create", "add", "tag", "alter"] + (["drop"] if i % 3 == 0 else [])
        for op in ops:
            if n >= done:
                return out
            n += 1
            if op == "create":
                out[name] = TableState(0, False, "created")
            elif op == "add":
                out[name] = TableState(PARTS, False, "created")
            elif op == "tag":
                out[name] = TableState(PARTS, True, "created")
            elif op == "alter":
                out[name] = TableState(PARTS, True, "altered")
            else:
                del out[name]
    return out


def observed(ms: Any, run: int) -> dict[str, TableState]:
    """The live tables of run ``run`` as the store holds them."""
    from ushas_catalog.metadata.store import Scope

    out: dict[str, TableState] = {}
    try:
        tables = [t.name for t in ms.list_tables("main.w")]
    except Exception:  # noqa: BLE001 - killed before the database existed
        return out
    for name in tables:
        if not name.startswith(f"r{run}_"):
            continue
        info = ms.get_table(f"main.w.{name}")
        parts = sum(1 for _ in ms.list_partitions(f"main.w.{name}"))
        tags = ms.metadata.get(f"main.w.{name}").scope(Scope.USER).tags
        out[name] = TableState(parts, list(tags) == ["w"], info.properties.get("step", ""))
    return out


@dataclass
class Killed:
    """One killed process: the seed and delay it was killed after, and what it reported."""

    seed: int
    delay_s: float
    done: int
    finished: bool
    stdout: str
    stderr: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def run_and_kill(cmd: list[str], delay_s: float, env: dict[str, str] | None = None, *,
                 group: bool = False, ready: str | None = None, timeout_s: float = 120) -> Killed:
    """Start ``cmd``, SIGKILL it ``delay_s`` after it printed ``ready`` (after its start when None),
    and collect what it printed. ``group``: kill its whole process group (a driver and its JVM).

    Everything it printed counts, however far ahead of this process it was: its output is read from the
    pipe's descriptor, here and by ``communicate`` alike (an iteration of a text-mode pipe reads ahead into a
    buffer ``communicate`` never sees, so the lines after ``ready`` that a lagging reader got in the same read
    were lost: on a loaded machine the writer ran ahead and its last reported operation was undercounted)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, bufsize=0,
                            start_new_session=group)
    seen = b""
    deadline = time.monotonic() + timeout_s
    if ready is not None:
        assert proc.stdout is not None
        wanted = ready.encode()
        while time.monotonic() <= deadline:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            seen += chunk
            if any(line.strip() == wanted for line in seen.split(b"\n")[:-1]):  # complete lines only
                break
    time.sleep(delay_s)
    try:
        if group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.send_signal(signal.SIGKILL)
    except ProcessLookupError:
        pass
    out, err = proc.communicate(timeout=timeout_s)
    text = (seen + out).decode(errors="replace")
    done = max([int(ln.split()[1]) for ln in text.splitlines() if ln.startswith("DONE ")] or [0])
    return Killed(0, delay_s, done, "FINISHED" in text, text, err.decode(errors="replace"))


def seeded(name: str) -> random.Random:
    """A random source whose seed is printed (``USHAS_FAULT_SEED`` replays a run)."""
    seed = int(os.environ.get("USHAS_FAULT_SEED") or random.SystemRandom().randrange(1 << 31))
    print(f"{name}: USHAS_FAULT_SEED={seed}", file=sys.stderr)
    return random.Random(seed)


def runs() -> int:
    """Kills per test (``USHAS_FAULT_RUNS``, default 20)."""
    return int(os.environ.get("USHAS_FAULT_RUNS") or 20)


def in_lanes(count: int, run: Callable[[int], T], lanes: int = LANES) -> list[T]:
    """``run(i)`` for every i in ``range(count)``, on ``lanes`` threads: lane ``i % lanes`` runs its share in
    order, the lanes at once. For kills independent of each other: the caller gives each lane its own store,
    so one lane's process starts (a driver's JVM: seconds) while another's runs or is checked. Results in the
    order of i; a failure stops every lane at its next run and is raised here."""
    stop = threading.Event()
    results: dict[int, T] = {}

    def lane(first: int) -> None:
        for i in range(first, count, lanes):
            if stop.is_set():
                return
            try:
                results[i] = run(i)
            except BaseException:
                stop.set()
                raise

    with ThreadPoolExecutor(max_workers=lanes) as pool:
        futures = [pool.submit(lane, first) for first in range(min(lanes, count))]
    for future in futures:
        future.result()
    return [results[i] for i in range(count)]
