"""Writes whose tasks create their files at their final names (the shim's ``DirectCommitProtocol``).

A ``file:`` table's batch write has each task create ``<root>/<partition dir>/part-<split>-<write id>-<attempt>…``
directly; only the write's fenced commit (``commit_write``) makes the files part of the table. While the
write runs (or after its driver died, until the next write or ``ushas purge`` cleans up) its staging
directory ``<root>/_ushas_staging/<write id>`` exists, with one manifest per task attempt
(``files-<attempt>``: the paths the task created, one a line, written before each file is). Hence:

- a listing of a directory whose files the catalog does not record skips the files of the writes that
  have a staging directory (:func:`running_writes`, :func:`of_running_write`);
- a dead write's files are what its manifests list (:func:`manifest_files`); they are deleted unless the
  write COMMITTED (its commit may have gone through just before its driver died).

Only local (``file:``) locations are seen here; the shim applies the same rules on any file system
(``Staging.running``, ``Staging.removeStale``).
"""
from __future__ import annotations

import os
import re
import stat

from .locations import local_path

#: staging directories of writes (``<table root>/_ushas_staging/<write id>``)
STAGING_DIR = "_ushas_staging"
#: the manifests' name prefix in a staging directory
MANIFEST = "files-"
#: a manifest line naming a partition directory a task created (then its path), not a file
CREATED_DIR = "dir\t"
#: a staging directory's name: its write id, a UUID (a directory named otherwise hides no file)
WRITE_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def running_writes(location: str) -> frozenset[str]:
    """The write ids of the direct writes that have a staging directory with a manifest under the (local)
    table location ``location``: a task writes its manifest before its first file, and a staged write's
    directory has none (its files, moved into place just before it registers them, are never hidden)."""
    local = local_path(location)
    if local is None:
        return frozenset()
    try:
        with os.scandir(os.path.join(local, STAGING_DIR)) as it:
            return frozenset(e.name for e in it if e.is_dir() and WRITE_ID.fullmatch(e.name)
                             and has_manifests(e.path))
    except (FileNotFoundError, NotADirectoryError):
        return frozenset()


def of_running_write(name: str, running: frozenset[str]) -> bool:
    """Whether the file name ``name`` is one a running (uncommitted) write created."""
    return any(w in name for w in running)


def _manifest_lines(local: str) -> list[str]:
    try:
        entries = list(os.scandir(local))
    except (FileNotFoundError, NotADirectoryError):
        return []
    out: list[str] = []
    for e in entries:
        if e.is_file() and e.name.startswith(MANIFEST):
            try:
                with open(e.path, encoding="utf-8", errors="replace") as f:
                    out.extend(line.rstrip("\n") for line in f if line.strip())
            except FileNotFoundError:
                continue
    return out


def _under(path: str, root: str) -> bool:
    return os.path.commonpath([os.path.realpath(path), root]) == root and os.path.realpath(path) != root


def manifest_files(staging: str) -> list[str]:
    """The files the manifests of a (local) staging directory list, as ``file:`` paths: only regular files
    (not a symbolic link, never a directory) under the table's root whose name carries the write id (the
    staging directory's name), so that a torn or forged manifest line can never name a partition, the
    table's root or anything outside it."""
    local = local_path(staging)
    if local is None:
        return []
    local = local.rstrip("/")
    write_id = os.path.basename(local)
    root = os.path.realpath(os.path.dirname(os.path.dirname(local)))
    out: list[str] = []
    for line in _manifest_lines(local):
        if line.startswith(CREATED_DIR):
            continue
        path = local_path(line.strip())
        if path is None or write_id not in os.path.basename(path) or not _under(path, root):
            continue
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                continue
        except OSError:
            continue
        out.append("file:" + path)
    return out


def remove_created_dirs(staging: str) -> int:
    """Removes the partition directories the tasks of a (local) staging directory's write created (their
    manifests' ``dir`` lines), deepest first, when they are empty (``rmdir``: never anything in them), and
    only under the table's root. Returns how many went."""
    local = local_path(staging)
    if local is None:
        return 0
    local = local.rstrip("/")
    root = os.path.realpath(os.path.dirname(os.path.dirname(local)))
    dirs = {p for line in _manifest_lines(local) if line.startswith(CREATED_DIR)
            for p in [local_path(line[len(CREATED_DIR):].strip())] if p is not None and _under(p, root)}
    removed = 0
    for d in sorted(dirs, key=lambda x: x.count("/"), reverse=True):
        try:
            os.rmdir(d)
            removed += 1
        except OSError:
            pass  # not empty (another write's file), or gone
    return removed


def has_manifests(staging: str) -> bool:
    """Whether a (local) staging directory is a direct write's (holds manifests)."""
    local = local_path(staging)
    if local is None:
        return False
    try:
        with os.scandir(local) as it:
            return any(e.name.startswith(MANIFEST) for e in it)
    except (FileNotFoundError, NotADirectoryError):
        return False


__all__ = ["CREATED_DIR", "MANIFEST", "STAGING_DIR", "WRITE_ID", "has_manifests", "manifest_files", "of_running_write",
           "remove_created_dirs", "running_writes"]
