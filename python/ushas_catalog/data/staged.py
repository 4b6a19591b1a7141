"""What a staged write (atomic CTAS / RTAS, :mod:`ushas_catalog.spark.staged`) may leave behind.

A staged table does not exist until its commit, so no table holds its files while the query runs.
Its stage records a ``DataGarbage`` entry under an id of its own (:func:`staged_id`, derived from the
write id) naming the write's staging directory, and, before the write places its files into the
table's directories, those files (:func:`add_staged_files`; a write of very many files in several
entries under the same id, each starting with the staging directory). The commit removes the entry in its own
transaction (:func:`forget_staged`); an abort removes it once the shim deleted the files. An entry left
behind (the driver was killed, the commit failed and the files could not be removed) is deleted by
``ushas purge`` once its write is over (:func:`leftovers`): recorded ABORTED, or never committed and its
writer gone (the staging directory's owner is no live process, or the entry is older than the grace
period); the write is then recorded ABORTED so it can never commit.
"""
from __future__ import annotations

import re
import uuid
from typing import Any, Callable

from ..kv import Transaction
from ..model.data_files import DataFile
from .garbage import Garbage, GarbageEntry, data_file_records, garbage_store, record_garbage

#: the operation of a staged write's entry starts with this
STAGED = "STAGED"
_WRITE = re.compile(r"\(write ([^)]+)\)$")
#: the namespace of the staged entries' ids
_NAMESPACE = uuid.UUID("6f1d2c0e-5a47-4c1b-9a55-2d0f3c7e8b11")


def staged_id(write_id: str) -> uuid.UUID:
    """The id a staged write's entry is kept under (no table has it)."""
    return uuid.uuid5(_NAMESPACE, write_id)


def staged_operation(statement: str, write_id: str) -> str:
    return f"{STAGED} {statement} (write {write_id})"


def staged_write(entry: GarbageEntry) -> str | None:
    """The write id of a staged write's entry; None for other entries."""
    if not entry.operation.startswith(STAGED + " "):
        return None
    m = _WRITE.search(entry.operation)
    return m.group(1) if m else None


def _entries(tr: Transaction, project: Any, write_id: str) -> list[Any]:
    store = garbage_store(project)
    return list(store.scan(tr, *store.prefix_range((staged_id(write_id),))))


#: the most files one entry of a staged write takes: a write placing more (a CTAS of 100,000 partitions)
#: records them in several entries, one transaction each, every entry starting with the staging directory
#: (so :func:`leftovers` and :func:`writer_gone` read each entry alone)
FILES_PER_ENTRY = 20_000
#: the most bytes of paths one entry takes, as a share of the engine's transaction size limit (long paths
#: fill an entry before its count does: 2.5 MB of FoundationDB's 10 MB)
ENTRY_SHARE_OF_TRANSACTION = 4


def _chunks(files: list[DataFile], budget: int) -> list[list[DataFile]]:
    """``files`` in runs of at most :data:`FILES_PER_ENTRY` files and ``budget`` bytes of paths (a file
    counted with 64 bytes of its record's other fields; at least one file a run)."""
    out: list[list[DataFile]] = [[]]
    size = 0
    for f in files:
        cost = len(f.path.encode()) + 64
        if out[-1] and (len(out[-1]) == FILES_PER_ENTRY or size + cost > budget):
            out.append([])
            size = 0
        out[-1].append(f)
        size += cost
    return out


def add_staged_files(ms: Any, write_id: str, files: list[DataFile]) -> None:
    """Adds ``files`` to the staged write's entries: up to :data:`FILES_PER_ENTRY` (and a quarter of the
    engine's transaction size in paths) to its first entry, the rest in new entries of as many, one
    transaction each. Every transaction checks the write is not over; a failure part-way leaves recorded
    only files not yet placed (the caller places them after this returns)."""
    store = garbage_store(ms.project_path)
    chunks = _chunks(files, ms.db.limits.transaction_bytes // ENTRY_SHARE_OF_TRANSACTION)

    def add(chunk: list[DataFile], first: bool) -> Callable[[Transaction], None]:
        def fn(tr: Transaction) -> None:
            found = _entries(tr, ms.project_path, write_id)
            if not found:
                from ..errors import WriteAborted

                raise WriteAborted(f"staged write {write_id} is over (aborted, or its leftovers purged): its "
                                   f"files are not placed", write_id=write_id, table="")
            r = found[0]
            if getattr(ms, "caller", None) is not None and ms.caller().authorization:  # the new table's files
                root = r.record.files[0].path.rstrip("/").rsplit("/_ushas_staging/", 1)[0] if r.record.files else ""
                ms._check_registered(tr, r.record.table, [root], [f.path for f in chunk], what="staged file")
            if first:
                r.record.files.extend(data_file_records(chunk))
                store.save(tr, tuple(r.key), r.record)
                return
            staging = DataFile(r.record.files[0].path, 0, 0)  # the entry's time: when the write was staged
            record_garbage(tr, ms.project_path, staged_id(write_id), r.record.table, r.record.operation,
                           Garbage(files=[staging, *chunk]), r.record.time_micros)
        return fn

    for i, chunk in enumerate(chunks):
        ms.db.run(add(chunk, i == 0))


def forget_staged(ms: Any, write_id: str) -> None:
    """Removes the staged write's entry (one transaction, or the caller's)."""
    store = garbage_store(ms.project_path)

    def fn(tr: Transaction) -> None:
        for r in _entries(tr, ms.project_path, write_id):
            store.delete(tr, tuple(r.key))

    ms.db.run(fn)


def writer_gone(ms: Any, entry: GarbageEntry, owner_alive: Callable[[str], bool], grace_micros: int,
                now_micros: int) -> bool:
    """Read-only: whether the staged write of ``entry`` can no longer commit by itself (ABORTED, or
    never committed and its writer gone: what :func:`leftovers` then cleans)."""
    from .write_fence import ABORTED, COMMITTED, get_outcome

    write_id = staged_write(entry)
    if write_id is None:
        return False
    state = get_outcome(ms, write_id).state
    if state == ABORTED or state == COMMITTED:
        return True
    staging = entry.files[0].path if entry.files else ""
    return now_micros - entry.time_micros >= grace_micros or not owner_alive(staging)


def leftovers(ms: Any, entry: GarbageEntry, owner_alive: Callable[[str], bool], grace_micros: int,
              now_micros: int) -> list[str] | None:
    """What ``ushas purge`` deletes for a staged write's entry before forgetting it (see the module
    docstring); None: the write may still run, keep the entry. ``owner_alive(staging_dir)``: whether
    the process that owns a staging directory may still run. A write found over but not yet ended
    is recorded ABORTED first, so it can never commit."""
    from .direct_writes import manifest_files
    from .write_fence import ABORTED, COMMITTED, abort_write, get_outcome

    write_id = staged_write(entry)
    paths = [f.path for f in entry.files]
    if write_id is None:
        return paths
    outcome = get_outcome(ms, write_id)
    if outcome.state == COMMITTED:
        # committed in more than one transaction (a write too big for one): its files are the
        # table's; only the staging directory is left to go
        return paths[:1]
    if outcome.state != ABORTED:
        staging = paths[0] if paths else ""
        if now_micros - entry.time_micros < grace_micros and owner_alive(staging):
            return None
        if abort_write(ms, write_id, "its writer is gone (found by ushas purge)", entry.table).state != ABORTED:
            return paths[:1]
    # a direct write's files not yet named in the entry: its manifests (in the staging directory) list them
    return (manifest_files(paths[0]) if paths else []) + paths


__all__ = ["FILES_PER_ENTRY", "STAGED", "add_staged_files", "forget_staged", "leftovers", "staged_id", "staged_operation",
           "staged_write", "writer_gone"]
