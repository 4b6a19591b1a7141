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
FACET_WINDOW = 500
KINDS = ("catalog", "database", "table", "view", "column")


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
    """Each hit's JSON with its owner, format, USER tags and description (one transaction)."""
    from ..metadata.store import ObjectRef, ObjectType
    from ..model.names import CatalogName, DatabaseName, TableName

    def owner_of(tr: Any, otype: ObjectType, name: str) -> str | None:
        from ..model.names import split_name

        parts = split_name(name)
        try:
            if otype is ObjectType.CATALOG:
                return ms.resolver.catalog(tr, CatalogName.parse(parts)).record.owner or None
            if otype is ObjectType.DATABASE:
                return ms.resolver.database(tr, DatabaseName.parse(parts)).record.owner or None
            tn = TableName.parse(parts[:3])
            _, entry = ms.resolver.relation(tr, tn)
            if entry is None:
                return None
            from ..records import ObjectKind

            if entry.kind == ObjectKind.VIEW:
                return ms.resolver.view(tr, tn).record.owner or None
            return ms.resolver.table(tr, tn).store("TableProperties").load(tr, ()).owner or None
        except UshasError:  # a hit dropped since the index answered: no owner
            return None

    def fn(tr: Any) -> list[dict[str, Any]]:
        out = []
        owners: dict[str, str | None] = {}
        for h in hits:
            parent = ObjectType.TABLE if h.type is ObjectType.COLUMN else None
            ref = ObjectRef(h.type, h.id, h.relation, h.column, parent)
            md = ms.metadata.read(tr, ref)
            tags = sorted(md.user.tags)
            fmt = md.system.properties.get("format")
            comment = md.user.properties.get("comment")
            otype = h.type if h.type is not ObjectType.COLUMN else ObjectType.TABLE
            if h.relation not in owners:
                owners[h.relation] = owner_of(tr, otype, h.relation)
            out.append({**h.to_json(), "owner": owners[h.relation], "format": fmt, "tags": tags,
                        "comment": comment})
        return out

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
