"""Protobuf records of the metastore (the record store that keeps them in the key space is
:mod:`ushas_catalog.records.store`).

The ``*.proto`` files here are the source; ``*_pb2.py`` are generated and checked in
(``python -m ushas_catalog.records.generate`` rebuilds them). Records never carry their
own location (project, catalog, database or table id): the key path says where they live.
"""
from __future__ import annotations

from .catalog_pb2 import CatalogRecord, DatabaseRecord
from .change_pb2 import ChangeEvent, PartitionDelta
from .commit_pb2 import Commit, HistoryEntry
from .function_pb2 import FunctionRecord, FunctionResource
from .names_pb2 import DroppedObjectName, ObjectKind, ObjectName
from .partition_pb2 import DataFile, DataFileList, DataGarbage, Partition, PartitionChange
from .schema_pb2 import ArrayType, DataType, DecimalType, MapType, StructField, StructType
from .table_pb2 import ColumnMask, RowFilter, TableProperties, TableReference, TableSchema, TableStorage
from .view_pb2 import ViewRecord
from .work_pb2 import PendingWork
from .write_pb2 import WriteOutcome

__all__ = [
    "CatalogRecord", "DatabaseRecord", "ChangeEvent", "PartitionDelta", "Commit", "HistoryEntry", "DroppedObjectName", "ObjectKind",
    "ObjectName", "Partition", "PartitionChange", "DataFile", "DataFileList", "DataGarbage", "ArrayType", "DataType", "DecimalType", "MapType",
    "StructField", "StructType", "TableProperties", "TableReference", "TableSchema", "TableStorage",
    "RowFilter", "ColumnMask",
    "ViewRecord", "WriteOutcome", "PendingWork",
    "FunctionRecord", "FunctionResource",
]

