from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PendingWork(_message.Message):
    __slots__ = ("kind", "state", "object", "object_key", "version", "cursor", "done", "total", "owner", "heartbeat_micros", "started_micros", "detail_json")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATE_UNSPECIFIED: _ClassVar[PendingWork.State]
        STAGING: _ClassVar[PendingWork.State]
        PUBLISHED: _ClassVar[PendingWork.State]
        ROLLING_BACK: _ClassVar[PendingWork.State]
    STATE_UNSPECIFIED: PendingWork.State
    STAGING: PendingWork.State
    PUBLISHED: PendingWork.State
    ROLLING_BACK: PendingWork.State
    KIND_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    OBJECT_KEY_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_MICROS_FIELD_NUMBER: _ClassVar[int]
    STARTED_MICROS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_JSON_FIELD_NUMBER: _ClassVar[int]
    kind: str
    state: PendingWork.State
    object: str
    object_key: bytes
    version: int
    cursor: bytes
    done: int
    total: int
    owner: str
    heartbeat_micros: int
    started_micros: int
    detail_json: str
    def __init__(self, kind: _Optional[str] = ..., state: _Optional[_Union[PendingWork.State, str]] = ..., object: _Optional[str] = ..., object_key: _Optional[bytes] = ..., version: _Optional[int] = ..., cursor: _Optional[bytes] = ..., done: _Optional[int] = ..., total: _Optional[int] = ..., owner: _Optional[str] = ..., heartbeat_micros: _Optional[int] = ..., started_micros: _Optional[int] = ..., detail_json: _Optional[str] = ...) -> None: ...
