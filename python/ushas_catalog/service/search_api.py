"""``GET /api/v1/search``: the discovery index (``Metastore.search``) with facets.

The index ranks the hits (exact before prefix, then recent use). The service takes the first
:data:`FACET_WINDOW` of them, reads each one's owner, format, USER tags and description in one
transaction, filters by the facet parameters (``kind``, ``tag``, ``owner``, ``format``), counts
the facet values of what remains and pages it (``cursor``: an offset within that result, bound
to the query). ``facets_over`` says how many hits the facets were counted over."""
from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from flask import Blueprint, request

from ..errors import InvalidArgument, UshasError
from .routing import int_arg, list_arg, str_arg
from .state import ServiceState

#: hits of the index the facets are computed over
FACET_WINDOW = 250
KINDS = ("catalog", "database", "table", "view", "column", "object")


def _fingerprint() -> str:
    data = json.dumps([request.args.get("q"), sorted(request.args.getlist("kind")),
                       sorted(request.args.getlist("tag")), request.args.get("owner"), request.args.get("format")])
    return hashlib.sha256(data.encode()).hexdigest()[:12]


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"{_fingerprint()}:{offset}".encode()).decode().rstrip("=")


def _offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        fp, _, off = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode().partition(":")
        offset = int(off)
    except (ValueError, UnicodeDecodeError):
        raise InvalidArgument(f"invalid search cursor {cursor[:40]!r}") from None
    if fp != _fingerprint() or offset < 0:
        raise InvalidArgument("this cursor belongs to another search (query or facets differ)")
    return offset


def describe_hits(ms: Any, hits: list[Any]) -> list[dict[str, Any]]:
    """Each hit's JSON with its owner, format, USER tags and description (one transaction; a
    hit's owner is one read of its table's properties or view record by id, its database
    resolved once). ``hits`` are a search's: under authorization only objects the caller sees (USE on each,
    which lets it describe them), so this read needs what the search needed, USE on the project."""
    from ..catalog.authorization import PROJECT, Requirement, requiring
    from ..governance.privileges import USE
    from ..keyspace.layout import OBJECT_RECORD, TABLE_PROPERTIES, VIEW_RECORD, Layout
    from ..metadata.store import ObjectRef, ObjectType
    from ..model.names import CatalogName, DatabaseName, split_name
    from ..records.store import RecordStore

    def fn(tr: Any) -> list[dict[str, Any]]:
        databases: dict[tuple[str, ...], Any] = {}
        owners: dict[Any, str | None] = {}

        def owner_of(h: Any) -> str | None:
            parts = split_name(h.relation)
            try:
                if h.type is ObjectType.CATALOG:
                    return ms.resolver.catalog(tr, CatalogName.parse(parts)).record.owner or None
                if h.type is ObjectType.DATABASE:
                    return ms.resolver.database(tr, DatabaseName.parse(parts)).record.owner or None
                key = tuple(parts[:2])
                if key not in databases:
                    databases[key] = ms.resolver.database(tr, DatabaseName.parse(parts[:2]), load=False)
                db = databases[key].path
                if h.type is ObjectType.OBJECT:  # a versioned object
                    obj = RecordStore.of(Layout.object(db, h.id), OBJECT_RECORD).load(tr, (), snapshot=True)
                    return (str(obj.owner) or None) if obj is not None else None
                if h.type is not ObjectType.VIEW:
                    props = RecordStore.of(Layout.table(db, h.id), TABLE_PROPERTIES).load(tr, (), snapshot=True)
                    if props is not None:
                        return str(props.owner) or None
                view = RecordStore.of(Layout.view(db, h.id), VIEW_RECORD).load(tr, (), snapshot=True)
                return (str(view.owner) or None) if view is not None else None
            except UshasError:  # a hit dropped since the index answered: no owner
                return None

        out = []
        for h in hits:
            parent = ObjectType.TABLE if h.type is ObjectType.COLUMN else None
            md = ms.metadata.read(tr, ObjectRef(h.type, h.id, h.relation, h.column, parent))
            if (h.type, h.id) not in owners:
                owners[(h.type, h.id)] = owner_of(h)
            out.append({**h.to_json(), "owner": owners[(h.type, h.id)], "format": md.system.properties.get("format"),
                        "tags": sorted(md.user.tags), "comment": md.user.properties.get("comment")})
        return out

    with requiring(Requirement(USE, PROJECT)):
        return list(ms.run(fn))


def register(bp: Blueprint, state: ServiceState) -> None:
    @bp.get("/search")
    @state.endpoint
    def search() -> Any:
        q = str_arg("q", required=True, what="the search text")
        assert q is not None
        kinds = list_arg("kind")
        for k in kinds:
            if k not in KINDS:
                raise InvalidArgument(f"kind must be one of {', '.join(KINDS)}, not {k[:40]!r}")
        tags, owner, fmt = list_arg("tag"), str_arg("owner"), str_arg("format")
        limit = int_arg("limit", 25, 1, 200) or 25
        offset = _offset(request.args.get("cursor"))
        page = state.metastore.search(q.strip() or q, types=kinds or None, limit=FACET_WINDOW)
        rows = describe_hits(state.metastore, page.hits)
        facets: dict[str, dict[str, int]] = {"kind": {}, "tag": {}, "owner": {}, "format": {}}
        kept = []
        for r in rows:
            if tags and not set(tags) <= set(r["tags"]):
                continue
            if owner is not None and r["owner"] != owner:
                continue
            if fmt is not None and (r["format"] or "").lower() != fmt.lower():
                continue
            kept.append(r)
            facets["kind"][r["type"].lower()] = facets["kind"].get(r["type"].lower(), 0) + 1
            for t in r["tags"]:
                facets["tag"][t] = facets["tag"].get(t, 0) + 1
            if r["owner"]:
                facets["owner"][r["owner"]] = facets["owner"].get(r["owner"], 0) + 1
            if r["format"]:
                facets["format"][r["format"]] = facets["format"].get(r["format"], 0) + 1
        filtered = bool(tags or owner or fmt)
        total = len(kept) if filtered or page.total <= FACET_WINDOW else page.total
        hits = kept[offset:offset + limit]
        more = offset + limit < len(kept)
        return {"total": total, "hits": hits, "next_cursor": _cursor(offset + limit) if more else None,
                "facets": facets, "facets_over": len(rows)}


__all__ = ["register", "describe_hits", "FACET_WINDOW"]
