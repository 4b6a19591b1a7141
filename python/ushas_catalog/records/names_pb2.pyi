from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ObjectKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OBJECT_KIND_UNSPECIFIED: _ClassVar[ObjectKind]
    CATALOG: _ClassVar[ObjectKind]
    DATABASE: _ClassVar[ObjectKind]
    TABLE: _ClassVar[ObjectKind]
    VIEW: _ClassVar[ObjectKind]
    FUNCTION: _ClassVar[ObjectKind]
    SHARE: _ClassVar[ObjectKind]
    OBJECT: _ClassVar[ObjectKind]
OBJECT_KIND_UNSPECIFIED: ObjectKind
CATALOG: ObjectKind
DATABASE: ObjectKind
TABLE: ObjectKind
VIEW: ObjectKind
FUNCTION: ObjectKind
SHARE: ObjectKind
OBJECT: ObjectKind

class ObjectName(_message.Message):
    __slots__ = ("id", "kind", "created_at_micros")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    id: bytes
    kind: ObjectKind
    created_at_micros: int
    def __init__(self, id: _Optional[bytes] = ..., kind: _Optional[_Union[ObjectKind, str]] = ..., created_at_micros: _Optional[int] = ...) -> None: ...

class DroppedObjectName(_message.Message):
    __slots__ = ("id", "kind", "dropped_at_micros", "dropped_by", "created_at_micros")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    DROPPED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    DROPPED_BY_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    id: bytes
    kind: ObjectKind
    dropped_at_micros: int
    dropped_by: str
    created_at_micros: int
    def __init__(self, id: _Optional[bytes] = ..., kind: _Optional[_Union[ObjectKind, str]] = ..., dropped_at_micros: _Optional[int] = ..., dropped_by: _Optional[str] = ..., created_at_micros: _Optional[int] = ...) -> None: ...
