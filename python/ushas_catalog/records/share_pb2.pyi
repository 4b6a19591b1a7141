from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ShareObject(_message.Message):
    __slots__ = ("catalog_id", "database_id", "table_id", "added_by", "added_at_micros")
    CATALOG_ID_FIELD_NUMBER: _ClassVar[int]
    DATABASE_ID_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    ADDED_BY_FIELD_NUMBER: _ClassVar[int]
    ADDED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    catalog_id: bytes
    database_id: bytes
    table_id: bytes
    added_by: str
    added_at_micros: int
    def __init__(self, catalog_id: _Optional[bytes] = ..., database_id: _Optional[bytes] = ..., table_id: _Optional[bytes] = ..., added_by: _Optional[str] = ..., added_at_micros: _Optional[int] = ...) -> None: ...

class ShareRecord(_message.Message):
    __slots__ = ("id", "comment", "recipients", "objects", "privileges", "owner", "created_at_micros", "updated_at_micros", "version")
    ID_FIELD_NUMBER: _ClassVar[int]
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    RECIPIENTS_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    PRIVILEGES_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    id: bytes
    comment: str
    recipients: _containers.RepeatedScalarFieldContainer[str]
    objects: _containers.RepeatedCompositeFieldContainer[ShareObject]
    privileges: _containers.RepeatedScalarFieldContainer[str]
    owner: str
    created_at_micros: int
    updated_at_micros: int
    version: int
    def __init__(self, id: _Optional[bytes] = ..., comment: _Optional[str] = ..., recipients: _Optional[_Iterable[str]] = ..., objects: _Optional[_Iterable[_Union[ShareObject, _Mapping]]] = ..., privileges: _Optional[_Iterable[str]] = ..., owner: _Optional[str] = ..., created_at_micros: _Optional[int] = ..., updated_at_micros: _Optional[int] = ..., version: _Optional[int] = ...) -> None: ...
