"""Where a Spark statement's time goes, roughly: ``jstack`` samples of the driver JVM every ~1 s (a helper
module, not a benchmark), each running task thread and each thread of a catalog write's commit counted by
the first matching frame of :data:`KINDS`. ``Sampler(pid).during(fn)`` returns fn's result and the counts
("task", "task: <kind>", "commit", "commit: <kind>"). Used by ``bench/many_partitions.py --sample``."""
from __future__ import annotations

import collections
import subprocess
import threading
import time
from typing import Any, Callable

KINDS = [("RawLocalFileSystem.setPermission", "forked chmod (setPermission)"), ("forkAndExec", "other fork"),
         ("mkdirs", "mkdirs"), ("Bridge.call", "bridge call"), ("commitTask", "task commit"),
         ("Placement", "moving files into place"), ("commitJob", "commit-job merge"),
         ("Staging.remove", "staging delete"), ("rename", "rename"), ("delete", "delete"),
         ("listStatus", "listing"), ("ParquetOutputFormat", "parquet file setup"),
         ("ParquetFileWriter", "parquet file write/close"), ("ChecksumFileSystem", "checksum file")]


class Sampler:
    def __init__(self, pid: int, every_s: float = 1.0) -> None:
        self.pid = pid
        self.every_s = every_s

    def _once(self, counts: collections.Counter[str]) -> None:
        try:
            out = subprocess.run(["jstack", str(self.pid)], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            return
        for thread in out.split("\n\n"):
            lines = thread.split("\n")
            if len(lines) < 2 or "RUNNABLE" not in lines[1]:
                continue
            if '"Executor task launch' in lines[0]:
                who = "task"
            elif "ushas-placement" in lines[0] or "UshasBatchWrite.commit" in thread or "UshasStagedTable" in thread:
                who = "commit"
            else:
                continue
            counts[who] += 1
            counts[f"{who}: " + next((label for frame, label in KINDS if frame in thread), "other")] += 1

    def during(self, fn: Callable[[], Any]) -> tuple[Any, dict[str, int]]:
        counts: collections.Counter[str] = collections.Counter()
        stop = threading.Event()

        def loop() -> None:
            while not stop.is_set():
                self._once(counts)
                stop.wait(self.every_s)

        t = threading.Thread(target=loop, daemon=True)
        t.start()
        try:
            result = fn()
        finally:
            stop.set()
            t.join(timeout=60)
        time.sleep(0)
        return result, dict(counts)


def pid_of(spark: Any) -> int:
    """The driver JVM's process id."""
    return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())


def describe(counts: dict[str, int]) -> str:
    """``task 20 (forked chmod 0, parquet file setup 5, …) · commit 3 (…)``"""
    parts = []
    for who in ("task", "commit"):
        kinds = sorted(((k.split(": ", 1)[1], v) for k, v in counts.items() if k.startswith(who + ": ")),
                       key=lambda kv: -kv[1])
        parts.append(f"{who} {counts.get(who, 0)} (" + ", ".join(f"{k} {v}" for k, v in kinds) + ")")
    return " · ".join(parts)
