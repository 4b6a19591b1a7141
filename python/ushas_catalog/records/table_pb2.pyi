from ushas_catalog.records import schema_pb2 as _schema_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TableReference(_message.Message):
    __slots__ = ("version", "schema_id", "created_at_micros", "updated_at_micros", "pending_operations")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    PENDING_OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    version: int
    schema_id: int
    created_at_micros: int
    updated_at_micros: int
    pending_operations: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, version: _Optional[int] = ..., schema_id: _Optional[int] = ..., created_at_micros: _Optional[int] = ..., updated_at_micros: _Optional[int] = ..., pending_operations: _Optional[_Iterable[bytes]] = ...) -> None: ...

class TableSchema(_message.Message):
    __slots__ = ("schema_id", "schema", "partition_columns", "created_at_micros", "num_buckets", "bucket_columns", "sort_columns")
    SCHEMA_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    PARTITION_COLUMNS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    NUM_BUCKETS_FIELD_NUMBER: _ClassVar[int]
    BUCKET_COLUMNS_FIELD_NUMBER: _ClassVar[int]
    SORT_COLUMNS_FIELD_NUMBER: _ClassVar[int]
    schema_id: int
    schema: _schema_pb2.StructType
    partition_columns: _containers.RepeatedScalarFieldContainer[str]
    created_at_micros: int
    num_buckets: int
    bucket_columns: _containers.RepeatedScalarFieldContainer[str]
    sort_columns: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, schema_id: _Optional[int] = ..., schema: _Optional[_Union[_schema_pb2.StructType, _Mapping]] = ..., partition_columns: _Optional[_Iterable[str]] = ..., created_at_micros: _Optional[int] = ..., num_buckets: _Optional[int] = ..., bucket_columns: _Optional[_Iterable[str]] = ..., sort_columns: _Optional[_Iterable[str]] = ...) -> None: ...

class TableStorage(_message.Message):
    __slots__ = ("format", "location", "external")
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_FIELD_NUMBER: _ClassVar[int]
    format: str
    location: str
    external: bool
    def __init__(self, format: _Optional[str] = ..., location: _Optional[str] = ..., external: _Optional[bool] = ...) -> None: ...

class TableProperties(_message.Message):
    __slots__ = ("properties", "comment", "owner", "row_filter", "column_masks")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    ROW_FILTER_FIELD_NUMBER: _ClassVar[int]
    COLUMN_MASKS_FIELD_NUMBER: _ClassVar[int]
    properties: _containers.ScalarMap[str, str]
    comment: str
    owner: str
    row_filter: RowFilter
    column_masks: _containers.RepeatedCompositeFieldContainer[ColumnMask]
    def __init__(self, properties: _Optional[_Mapping[str, str]] = ..., comment: _Optional[str] = ..., owner: _Optional[str] = ..., row_filter: _Optional[_Union[RowFilter, _Mapping]] = ..., column_masks: _Optional[_Iterable[_Union[ColumnMask, _Mapping]]] = ...) -> None: ...

class RowFilter(_message.Message):
    __slots__ = ("expression", "exempt")
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    EXEMPT_FIELD_NUMBER: _ClassVar[int]
    expression: str
    exempt: str
    def __init__(self, expression: _Optional[str] = ..., exempt: _Optional[str] = ...) -> None: ...

class ColumnMask(_message.Message):
    __slots__ = ("column", "expression", "exempt")
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    EXEMPT_FIELD_NUMBER: _ClassVar[int]
    column: str
    expression: str
    exempt: str
    def __init__(self, column: _Optional[str] = ..., expression: _Optional[str] = ..., exempt: _Optional[str] = ...) -> None: ...
