from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class ObjectRecord(_message.Message):
    __slots__ = ("kind", "location", "properties", "comment", "owner", "current_version", "created_at_micros", "updated_at_micros", "version")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    KIND_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    CURRENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    kind: str
    location: str
    properties: _containers.ScalarMap[str, str]
    comment: str
    owner: str
    current_version: int
    created_at_micros: int
    updated_at_micros: int
    version: int
    def __init__(self, kind: _Optional[str] = ..., location: _Optional[str] = ..., properties: _Optional[_Mapping[str, str]] = ..., comment: _Optional[str] = ..., owner: _Optional[str] = ..., current_version: _Optional[int] = ..., created_at_micros: _Optional[int] = ..., updated_at_micros: _Optional[int] = ..., version: _Optional[int] = ...) -> None: ...

class ObjectVersion(_message.Message):
    __slots__ = ("version", "location", "properties", "comment", "created_by", "created_at_micros", "rolled_back_from")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    VERSION_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    ROLLED_BACK_FROM_FIELD_NUMBER: _ClassVar[int]
    version: int
    location: str
    properties: _containers.ScalarMap[str, str]
    comment: str
    created_by: str
    created_at_micros: int
    rolled_back_from: int
    def __init__(self, version: _Optional[int] = ..., location: _Optional[str] = ..., properties: _Optional[_Mapping[str, str]] = ..., comment: _Optional[str] = ..., created_by: _Optional[str] = ..., created_at_micros: _Optional[int] = ..., rolled_back_from: _Optional[int] = ...) -> None: ...

class ObjectType(_message.Message):
    __slots__ = ("message_type", "descriptor_set", "primary_key", "created_at_micros", "created_by")
    MESSAGE_TYPE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTOR_SET_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_KEY_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    message_type: str
    descriptor_set: bytes
    primary_key: _containers.RepeatedScalarFieldContainer[str]
    created_at_micros: int
    created_by: str
    def __init__(self, message_type: _Optional[str] = ..., descriptor_set: _Optional[bytes] = ..., primary_key: _Optional[_Iterable[str]] = ..., created_at_micros: _Optional[int] = ..., created_by: _Optional[str] = ...) -> None: ...
