"""Head records -> the dataclasses the metastore returns (:mod:`ushas_catalog.model.objects`)."""
from __future__ import annotations

import uuid

from .. import records as rec
from ..model.bucketing import Bucketing
from ..model.names import CatalogName, DatabaseName, TableName
from ..model.objects import CatalogInfo, DatabaseInfo, TableInfo, ViewInfo, micros_to_datetime
from ..model.row_policies import ColumnMask, RowFilter
from ..model.schema import struct_from_proto
from .resolver import ResolvedObject


def catalog_info(cat: ResolvedObject) -> CatalogInfo:
    r = cat.record
    assert isinstance(cat.name, CatalogName)
    return CatalogInfo(cat.name.catalog, str(cat.id), r.comment or None, dict(r.properties), r.owner or None,
                       micros_to_datetime(r.created_at_micros), micros_to_datetime(r.updated_at_micros),
                       r.version)


def database_info(db: ResolvedObject) -> DatabaseInfo:
    r = db.record
    assert isinstance(db.name, DatabaseName)
    return DatabaseInfo(db.name.catalog, db.name.database, str(db.id), r.comment or None, r.location or None,
                        dict(r.properties), r.owner or None, micros_to_datetime(r.created_at_micros),
                        micros_to_datetime(r.updated_at_micros), r.version)


def table_info(tn: TableName, tid: uuid.UUID, ref: rec.TableReference, schema: rec.TableSchema,
               storage: rec.TableStorage, props: rec.TableProperties) -> TableInfo:
    return TableInfo(tn.catalog, tn.database, tn.name, str(tid), ref.version, schema.schema_id,
                     struct_from_proto(schema.schema), list(schema.partition_columns), storage.format,
                     storage.location or None, storage.external, dict(props.properties),
                     props.comment if props.HasField("comment") else None, props.owner or None,
                     micros_to_datetime(ref.created_at_micros), micros_to_datetime(ref.updated_at_micros),
                     bucketing_of(schema), *policies_of(props))


def policies_of(props: rec.TableProperties) -> tuple[RowFilter | None, list[ColumnMask]]:
    """The row filter and column masks a TableProperties record holds."""
    row_filter = RowFilter(props.row_filter.expression, props.row_filter.exempt) \
        if props.HasField("row_filter") else None
    return row_filter, [ColumnMask(m.column, m.expression, m.exempt) for m in props.column_masks]


def bucketing_of(schema: rec.TableSchema) -> Bucketing | None:
    """The bucketing a TableSchema record holds (None: not bucketed)."""
    if not schema.num_buckets:
        return None
    return Bucketing(schema.num_buckets, list(schema.bucket_columns), list(schema.sort_columns))


def view_info(tn: TableName, vid: uuid.UUID, r: rec.ViewRecord) -> ViewInfo:
    return ViewInfo(tn.catalog, tn.database, tn.name, str(vid), r.version, r.sql, struct_from_proto(r.schema),
                    r.comment if r.HasField("comment") else None, dict(r.properties), r.current_catalog or None,
                    list(r.current_namespace), list(r.query_column_names), r.owner or None,
                    micros_to_datetime(r.created_at_micros), micros_to_datetime(r.updated_at_micros))
