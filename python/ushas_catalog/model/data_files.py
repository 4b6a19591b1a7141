"""The data files a committed write registered: what reads use instead of listing directories."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable


@dataclass(frozen=True, slots=True)
class DataFile:
    """One data file: its absolute, qualified path (``file:/…``, ``s3a://…``), size in bytes and
    modification time in milliseconds since the epoch."""

    path: str
    size: int
    mtime: int

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "mtime": self.mtime}

    @staticmethod
    def from_json(d: dict[str, Any]) -> "DataFile":
        return DataFile(str(d["path"]), int(d["size"]), int(d["mtime"]))


def files_to_json(files: Iterable[DataFile] | None) -> list[dict[str, Any]] | None:
    """A file list as JSON (``None`` stays ``None``: not recorded)."""
    return None if files is None else [f.to_json() for f in files]


def files_from_json(items: Iterable[dict[str, Any]] | None) -> list[DataFile] | None:
    return None if items is None else [DataFile.from_json(d) for d in items]


def total_size(files: Iterable[DataFile]) -> int:
    return sum(f.size for f in files)


def merge(old: Iterable[DataFile], new: Iterable[DataFile]) -> list[DataFile]:
    """``old`` then ``new``, a path given twice kept once (the newer entry)."""
    out: dict[str, DataFile] = {f.path: f for f in old}
    for f in new:
        out[f.path] = f
    return list(out.values())


def to_records(files: Iterable[DataFile], message: Any) -> list[Any]:
    """Protobuf ``DataFile`` messages (``message`` is the type) of a file list."""
    return [message(path=f.path, size=f.size, mtime=f.mtime) for f in files]


def from_records(records: Iterable[Any]) -> list[DataFile]:
    return [DataFile(r.path, r.size, r.mtime) for r in records]
