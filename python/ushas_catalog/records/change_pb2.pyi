from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PartitionDelta(_message.Message):
    __slots__ = ("key", "spec", "location")
    class SpecEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    KEY_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    spec: _containers.ScalarMap[str, str]
    location: str
    def __init__(self, key: _Optional[bytes] = ..., spec: _Optional[_Mapping[str, str]] = ..., location: _Optional[str] = ...) -> None: ...

class ChangeEvent(_message.Message):
    __slots__ = ("change", "kind", "operation", "object_id", "name", "version", "user", "committed_at_micros", "before_json", "after_json", "added", "dropped", "partitions_cleared", "purged", "detail_json")
    class Change(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        CHANGE_UNSPECIFIED: _ClassVar[ChangeEvent.Change]
        CREATED: _ClassVar[ChangeEvent.Change]
        ALTERED: _ClassVar[ChangeEvent.Change]
        RENAMED: _ClassVar[ChangeEvent.Change]
        REPLACED: _ClassVar[ChangeEvent.Change]
        DROPPED: _ClassVar[ChangeEvent.Change]
        UNDROPPED: _ClassVar[ChangeEvent.Change]
        PURGED: _ClassVar[ChangeEvent.Change]
        PARTITIONS_ADDED: _ClassVar[ChangeEvent.Change]
        PARTITIONS_DROPPED: _ClassVar[ChangeEvent.Change]
        PARTITIONS_REPLACED: _ClassVar[ChangeEvent.Change]
        GRANTED: _ClassVar[ChangeEvent.Change]
        REVOKED: _ClassVar[ChangeEvent.Change]
        ROLE_CHANGED: _ClassVar[ChangeEvent.Change]
        ACCESS_DENIED: _ClassVar[ChangeEvent.Change]
    CHANGE_UNSPECIFIED: ChangeEvent.Change
    CREATED: ChangeEvent.Change
    ALTERED: ChangeEvent.Change
    RENAMED: ChangeEvent.Change
    REPLACED: ChangeEvent.Change
    DROPPED: ChangeEvent.Change
    UNDROPPED: ChangeEvent.Change
    PURGED: ChangeEvent.Change
    PARTITIONS_ADDED: ChangeEvent.Change
    PARTITIONS_DROPPED: ChangeEvent.Change
    PARTITIONS_REPLACED: ChangeEvent.Change
    GRANTED: ChangeEvent.Change
    REVOKED: ChangeEvent.Change
    ROLE_CHANGED: ChangeEvent.Change
    ACCESS_DENIED: ChangeEvent.Change
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    OBJECT_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    BEFORE_JSON_FIELD_NUMBER: _ClassVar[int]
    AFTER_JSON_FIELD_NUMBER: _ClassVar[int]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_CLEARED_FIELD_NUMBER: _ClassVar[int]
    PURGED_FIELD_NUMBER: _ClassVar[int]
    DETAIL_JSON_FIELD_NUMBER: _ClassVar[int]
    change: ChangeEvent.Change
    kind: str
    operation: str
    object_id: bytes
    name: str
    version: int
    user: str
    committed_at_micros: int
    before_json: str
    after_json: str
    added: _containers.RepeatedCompositeFieldContainer[PartitionDelta]
    dropped: _containers.RepeatedCompositeFieldContainer[PartitionDelta]
    partitions_cleared: bool
    purged: bool
    detail_json: str
    def __init__(self, change: _Optional[_Union[ChangeEvent.Change, str]] = ..., kind: _Optional[str] = ..., operation: _Optional[str] = ..., object_id: _Optional[bytes] = ..., name: _Optional[str] = ..., version: _Optional[int] = ..., user: _Optional[str] = ..., committed_at_micros: _Optional[int] = ..., before_json: _Optional[str] = ..., after_json: _Optional[str] = ..., added: _Optional[_Iterable[_Union[PartitionDelta, _Mapping]]] = ..., dropped: _Optional[_Iterable[_Union[PartitionDelta, _Mapping]]] = ..., partitions_cleared: _Optional[bool] = ..., purged: _Optional[bool] = ..., detail_json: _Optional[str] = ...) -> None: ...
