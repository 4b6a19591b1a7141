from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class Commit(_message.Message):
    __slots__ = ("version", "operation", "user", "committed_at_micros", "detail_json")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_JSON_FIELD_NUMBER: _ClassVar[int]
    version: int
    operation: str
    user: str
    committed_at_micros: int
    detail_json: str
    def __init__(self, version: _Optional[int] = ..., operation: _Optional[str] = ..., user: _Optional[str] = ..., committed_at_micros: _Optional[int] = ..., detail_json: _Optional[str] = ...) -> None: ...

class HistoryEntry(_message.Message):
    __slots__ = ("version", "committed_at_micros", "operation", "schema_id", "changed")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_ID_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    version: int
    committed_at_micros: int
    operation: str
    schema_id: int
    changed: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, version: _Optional[int] = ..., committed_at_micros: _Optional[int] = ..., operation: _Optional[str] = ..., schema_id: _Optional[int] = ..., changed: _Optional[_Iterable[str]] = ...) -> None: ...
