"""A view's schema kept in step with its query (``WITH SCHEMA EVOLUTION`` / ``TYPE EVOLUTION``).

Spark re-derives such a view's schema from its query when the tables under it change, and asks the
catalog to store the result; :meth:`ViewSchemaOps.evolve_view_schema` commits it as a new version of
the view (``ushas history`` shows it), once: a second session that finds the same schema stored
commits nothing. Views ``WITH SCHEMA BINDING`` / ``COMPENSATION`` never change this way.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..errors import InvalidArgument
from ..kv import Transaction
from ..model.names import NameLike, TableName
from ..model.objects import ViewInfo
from ..model.schema import parse_schema, struct_from_proto, struct_to_proto
from .base import MetastoreBase
from .commits import Mutation
from .infos import view_info
from .values import copy_record

#: the view property that holds Spark's schema binding mode (``CatalogTable.VIEW_SCHEMA_MODE``)
SCHEMA_MODE = "view.schemaMode"
#: the modes under which Spark updates a view's stored schema from its query
EVOLVING_MODES = ("EVOLUTION", "TYPE EVOLUTION")


class ViewSchemaOps(MetastoreBase):
    """Schema evolution of views."""

    def evolve_view_schema(self, name: NameLike, schema: Any, query_column_names: Sequence[str] | None = None,
                           *, mode: str | None = None) -> ViewInfo:
        """Store ``schema`` (and, under EVOLUTION, the new ``query_column_names``) as the view's new
        version, operation ``EVOLVE VIEW SCHEMA``. Refused unless the view is stored with an evolving
        mode (``mode``, when given, must be the stored one). Nothing is committed when the stored
        schema and column names already are these."""
        tn = TableName.parse(name)
        struct = parse_schema(schema)

        def fn(tr: Transaction) -> ViewInfo:
            v = self.resolver.view(tr, tn)
            stored = v.record.properties.get(SCHEMA_MODE, "")
            if stored not in EVOLVING_MODES:
                raise InvalidArgument(f"view {tn} is not WITH SCHEMA EVOLUTION or TYPE EVOLUTION "
                                      f"(its mode: {stored or 'none stored'}): its schema follows no query")
            if mode is not None and mode != stored:
                raise InvalidArgument(f"view {tn} is WITH SCHEMA {stored}, not {mode}")
            names = list(query_column_names) if query_column_names is not None else list(v.record.query_column_names)
            old = struct_from_proto(v.record.schema)
            if old == struct and names == list(v.record.query_column_names):
                return view_info(tn, v.id, v.record)
            new = copy_record(v.record)
            new.schema.CopyFrom(struct_to_proto(struct))
            del new.query_column_names[:]
            new.query_column_names.extend(names)
            self._commit(tr, Mutation("view", str(tn), v.path, "EVOLVE VIEW SCHEMA", v.record.version + 1, new,
                                      previous_head=v.record,
                                      detail={"mode": stored, "from": old.to_ddl(),
                                              "to": struct.to_ddl()}))
            return view_info(tn, v.id, new)

        return self.run(fn)
