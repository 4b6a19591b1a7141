from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class CatalogRecord(_message.Message):
    __slots__ = ("comment", "properties", "owner", "created_at_micros", "updated_at_micros", "version")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    comment: str
    properties: _containers.ScalarMap[str, str]
    owner: str
    created_at_micros: int
    updated_at_micros: int
    version: int
    def __init__(self, comment: _Optional[str] = ..., properties: _Optional[_Mapping[str, str]] = ..., owner: _Optional[str] = ..., created_at_micros: _Optional[int] = ..., updated_at_micros: _Optional[int] = ..., version: _Optional[int] = ...) -> None: ...

class DatabaseRecord(_message.Message):
    __slots__ = ("comment", "location", "properties", "owner", "created_at_micros", "updated_at_micros", "version")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    comment: str
    location: str
    properties: _containers.ScalarMap[str, str]
    owner: str
    created_at_micros: int
    updated_at_micros: int
    version: int
    def __init__(self, comment: _Optional[str] = ..., location: _Optional[str] = ..., properties: _Optional[_Mapping[str, str]] = ..., owner: _Optional[str] = ..., created_at_micros: _Optional[int] = ..., updated_at_micros: _Optional[int] = ..., version: _Optional[int] = ...) -> None: ...
