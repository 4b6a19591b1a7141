"""Search shows a caller only what it may see: the hits whose object a listing shows it
(:func:`ushas_catalog.catalog.listing.listed`)."""
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Protocol, Sequence, TypeVar

from ..catalog.listing import listed
from ..catalog.row_policies import filters_rows_of
from ..governance.identity import Caller
from ..kv.base import Transaction
from ..model.names import split_name
from .values import ObjectType, counts_rows

if TYPE_CHECKING:
    from ..catalog.core import CatalogCore as Metastore


class Hit(Protocol):
    """What a search hit says of its object (:class:`~ushas_catalog.metadata.search.SearchHit`)."""

    type: ObjectType
    id: uuid.UUID
    relation: str


H = TypeVar("H", bound=Hit)


def _listed_as(hit: Hit) -> tuple[str, Any, uuid.UUID | None]:
    """(kind, name, id) of the object whose listing shows ``hit``: a column is its table's or view's; a versioned
    object has no grants of its own, its database's govern it (``OBJECT_RULES``)."""
    if hit.type is ObjectType.CATALOG:
        return "catalog", hit.relation, hit.id
    if hit.type is ObjectType.DATABASE:
        return "database", hit.relation, hit.id
    if hit.type is ObjectType.OBJECT:
        return "database", split_name(hit.relation)[:2], None
    return "relation", hit.relation, hit.id


def visible_hits(tr: Transaction, ms: "Metastore", caller: Caller, hits: Sequence[H]) -> list[H]:
    """The ``hits`` ``caller`` may see: those whose object a listing shows it
    (:func:`~ushas_catalog.catalog.listing.listed`: USE on it, which also lets it describe the object, so
    whatever matched — a comment, a column, a tag, a property — is its to see). Counts, pages and facets are made
    from these only: a hidden object is not even counted."""
    if not caller.authorization or not hits:
        return list(hits)
    return [h for h, shown in zip(hits, listed(tr, ms, caller, [_listed_as(h) for h in hits])) if shown]


class CountedHit(Hit, Protocol):
    """A hit with its matches (:class:`~ushas_catalog.metadata.search.SearchHit`)."""

    matches: list[Any]


C = TypeVar("C", bound=CountedHit)


def without_row_data(ms: "Metastore", hits: list[C]) -> list[C]:
    """``hits`` without the matches on a table's SYSTEM row and partition counts
    (:data:`~ushas_catalog.metadata.values.ROW_DATA_SYSTEM_KEYS`) of the tables the caller reads through their row
    filter (one table read per such table; none when no hit matched on them), and without the hits left with no
    match: a search for a count must not tell a filtered reader what ``meta show`` does not."""
    counted = {h.relation for h in hits if h.type is ObjectType.TABLE and any(counts_rows(m.scope, m.key)
                                                                              for m in h.matches)}
    if not counted:
        return hits
    hidden = {name for name in counted if filters_rows_of(ms, name)}
    out = []
    for h in hits:
        if h.relation in hidden and h.type is ObjectType.TABLE:
            h.matches[:] = [m for m in h.matches if not counts_rows(m.scope, m.key)]
            if not h.matches:
                continue
        out.append(h)
    return out


__all__ = ["visible_hits", "without_row_data"]
