from ushas_catalog.records import schema_pb2 as _schema_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ViewRecord(_message.Message):
    __slots__ = ("sql", "schema", "comment", "properties", "current_catalog", "current_namespace", "query_column_names", "owner", "created_at_micros", "updated_at_micros", "version")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SQL_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    CURRENT_CATALOG_FIELD_NUMBER: _ClassVar[int]
    CURRENT_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUERY_COLUMN_NAMES_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    sql: str
    schema: _schema_pb2.StructType
    comment: str
    properties: _containers.ScalarMap[str, str]
    current_catalog: str
    current_namespace: _containers.RepeatedScalarFieldContainer[str]
    query_column_names: _containers.RepeatedScalarFieldContainer[str]
    owner: str
    created_at_micros: int
    updated_at_micros: int
    version: int
    def __init__(self, sql: _Optional[str] = ..., schema: _Optional[_Union[_schema_pb2.StructType, _Mapping]] = ..., comment: _Optional[str] = ..., properties: _Optional[_Mapping[str, str]] = ..., current_catalog: _Optional[str] = ..., current_namespace: _Optional[_Iterable[str]] = ..., query_column_names: _Optional[_Iterable[str]] = ..., owner: _Optional[str] = ..., created_at_micros: _Optional[int] = ..., updated_at_micros: _Optional[int] = ..., version: _Optional[int] = ...) -> None: ...
