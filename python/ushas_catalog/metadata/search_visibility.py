"""Search shows a caller only what it may see: the hits whose object a listing shows it
(:func:`ushas_catalog.catalog.listing.listed`)."""
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Protocol, Sequence, TypeVar

from ..catalog.listing import listed
from ..governance.identity import Caller
from ..kv.base import Transaction
from ..model.names import split_name
from .values import ObjectType

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


__all__ = ["visible_hits"]
