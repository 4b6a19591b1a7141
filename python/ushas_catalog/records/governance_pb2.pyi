from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class RoleRecord(_message.Message):
    __slots__ = ("comment", "created_by", "created_micros")
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    CREATED_MICROS_FIELD_NUMBER: _ClassVar[int]
    comment: str
    created_by: str
    created_micros: int
    def __init__(self, comment: _Optional[str] = ..., created_by: _Optional[str] = ..., created_micros: _Optional[int] = ...) -> None: ...

class MemberRecord(_message.Message):
    __slots__ = ("added_by", "added_micros")
    ADDED_BY_FIELD_NUMBER: _ClassVar[int]
    ADDED_MICROS_FIELD_NUMBER: _ClassVar[int]
    added_by: str
    added_micros: int
    def __init__(self, added_by: _Optional[str] = ..., added_micros: _Optional[int] = ...) -> None: ...

class GrantRecord(_message.Message):
    __slots__ = ("object_kind", "object_name", "granted_by", "granted_micros", "ancestor_ids")
    OBJECT_KIND_FIELD_NUMBER: _ClassVar[int]
    OBJECT_NAME_FIELD_NUMBER: _ClassVar[int]
    GRANTED_BY_FIELD_NUMBER: _ClassVar[int]
    GRANTED_MICROS_FIELD_NUMBER: _ClassVar[int]
    ANCESTOR_IDS_FIELD_NUMBER: _ClassVar[int]
    object_kind: str
    object_name: str
    granted_by: str
    granted_micros: int
    ancestor_ids: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, object_kind: _Optional[str] = ..., object_name: _Optional[str] = ..., granted_by: _Optional[str] = ..., granted_micros: _Optional[int] = ..., ancestor_ids: _Optional[_Iterable[bytes]] = ...) -> None: ...

class AccessState(_message.Message):
    __slots__ = ("token", "changes")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    token: bytes
    changes: int
    def __init__(self, token: _Optional[bytes] = ..., changes: _Optional[int] = ...) -> None: ...

class LocationRecord(_message.Message):
    __slots__ = ("id", "url", "comment", "created_by", "created_micros")
    ID_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    CREATED_MICROS_FIELD_NUMBER: _ClassVar[int]
    id: bytes
    url: str
    comment: str
    created_by: str
    created_micros: int
    def __init__(self, id: _Optional[bytes] = ..., url: _Optional[str] = ..., comment: _Optional[str] = ..., created_by: _Optional[str] = ..., created_micros: _Optional[int] = ...) -> None: ...
