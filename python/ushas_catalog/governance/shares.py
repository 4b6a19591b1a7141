"""Shares between projects: the records (the owner project's ``Share`` subspace) and the rules.

A share is a named set of tables and whole databases of ONE catalog of its owner project, granted
read-only (``SELECT``) to other projects (its recipients, "accounts"). Objects are kept by id
(catalog, database, table UUIDs), so a rename follows and a dropped object leaves the share until it
is undropped. A recipient mounts a share as a catalog of its own (an entry of kind ``SHARE`` in its
catalog names, pointing to owner project and share name): nothing of the owner's metadata is copied;
reads resolve the owner's keys, filtered by :class:`Shared`, in the recipient's transaction.

This module holds what needs no catalog operation: names, the record store, the access check and the
visible set; the operations are :mod:`ushas_catalog.catalog.shares`.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgument, InvalidName, NoSuchShare
from ..keyspace.layout import SHARE, Layout
from ..kv.base import Transaction
from ..model.names import check_new_part, normalize, quote, split_name, validate_project
from ..records.share_pb2 import ShareRecord
from ..records.store import RecordStore

#: the only privilege a share grants
PRIVILEGES = ("SELECT",)
#: the catalog property keys of a mount (the recipient's catalog record of kind SHARE)
MOUNT_PROJECT = "ushas.share.project"
MOUNT_SHARE = "ushas.share.name"


def share_name(name: object) -> str:
    """A share's name: one name part, validated and lower-cased like a catalog's."""
    if not isinstance(name, str):
        raise InvalidName(f"share name must be a string, not {type(name).__name__}")
    return check_new_part(normalize(name, "share"), "share")


def recipient(text: object) -> str:
    """A recipient project: ``project:NAME`` or ``NAME`` (the project name keeps its case)."""
    if not isinstance(text, str):
        raise InvalidArgument(f"recipient must be a string like 'project:NAME', not {type(text).__name__}")
    kind, sep, name = text.partition(":")
    if sep and kind.strip().lower() != "project":
        raise InvalidArgument(f"recipient {text!r}: a share is granted to a project ('project:NAME'), "
                              f"not to a {kind!r} (grant privileges to users, groups and roles with grant)")
    return validate_project(name if sep else text)


@dataclass(frozen=True)
class ShareRef:
    """A share as another project names it: ``OWNER_PROJECT.SHARE``."""

    project: str
    name: str

    @classmethod
    def parse(cls, text: object) -> "ShareRef":
        if not isinstance(text, str):
            raise InvalidName(f"share must be a string 'owner_project.share', not {type(text).__name__}")
        parts = split_name(text)
        if len(parts) != 2 or not all(parts):
            raise InvalidName(f"share {text!r}: expected owner_project.share (backticks quote a part)")
        return cls(validate_project(parts[0]), share_name(parts[1]))

    def __str__(self) -> str:
        return f"{quote(self.project)}.{quote(self.name)}"


def store(layout: Layout, project: str) -> RecordStore[ShareRecord]:
    """The ``Share`` subspace of ``project``: name -> :class:`ShareRecord`."""
    return RecordStore.of(layout.project(project), SHARE)


def load(tr: Transaction, layout: Layout, project: str, name: str) -> ShareRecord | None:
    return store(layout, project).load(tr, (name,))


def accessible(tr: Transaction, layout: Layout, ref: ShareRef, project: str) -> ShareRecord:
    """The share ``ref`` as project ``project`` may read it; :class:`NoSuchShare` when it does not exist
    or is not granted to ``project`` (the same answer: existence is not disclosed)."""
    record = load(tr, layout, ref.project, ref.name) if ref.project != project else None
    if record is None or project not in record.recipients:
        raise NoSuchShare(f"share {ref} does not exist or is not shared with project {project!r}",
                          share=str(ref), project=project)
    return record


def ids(raw: bytes) -> uuid.UUID | None:
    return uuid.UUID(bytes=raw) if raw else None


@dataclass(frozen=True)
class Shared:
    """What a share lets a recipient see: its catalog, whole databases and single tables (ids)."""

    catalog_id: uuid.UUID | None
    databases: frozenset[uuid.UUID]
    tables: frozenset[uuid.UUID]
    table_databases: frozenset[uuid.UUID]

    @classmethod
    def of(cls, record: ShareRecord) -> "Shared":
        cat: uuid.UUID | None = None
        dbs: set[uuid.UUID] = set()
        tables: set[uuid.UUID] = set()
        table_dbs: set[uuid.UUID] = set()
        for o in record.objects:
            cat = cat or ids(o.catalog_id)
            did = uuid.UUID(bytes=o.database_id)
            if o.table_id:
                tables.add(uuid.UUID(bytes=o.table_id))
                table_dbs.add(did)
            else:
                dbs.add(did)
        return cls(cat, frozenset(dbs), frozenset(tables), frozenset(table_dbs))

    def database_visible(self, database_id: uuid.UUID) -> bool:
        return database_id in self.databases or database_id in self.table_databases

    def table_visible(self, database_id: uuid.UUID, table_id: uuid.UUID) -> bool:
        return database_id in self.databases or table_id in self.tables


def describe(record: ShareRecord) -> dict[str, Any]:
    """The JSON form of a share record (without object names: see ``catalog.shares``)."""
    return {"id": str(uuid.UUID(bytes=record.id)) if record.id else None, "comment": record.comment,
            "recipients": list(record.recipients), "privileges": list(record.privileges), "owner": record.owner,
            "version": record.version, "objects": len(record.objects)}


__all__ = ["PRIVILEGES", "MOUNT_PROJECT", "MOUNT_SHARE", "share_name", "recipient", "ShareRef", "store", "load",
           "accessible", "ids", "Shared", "describe", "ShareRecord"]
