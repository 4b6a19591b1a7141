from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WriteOutcome(_message.Message):
    __slots__ = ("state", "table", "time_micros", "reason", "answer_json", "version", "deadline_ms", "user")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATE_UNSPECIFIED: _ClassVar[WriteOutcome.State]
        COMMITTED: _ClassVar[WriteOutcome.State]
        ABORTED: _ClassVar[WriteOutcome.State]
    STATE_UNSPECIFIED: WriteOutcome.State
    COMMITTED: WriteOutcome.State
    ABORTED: WriteOutcome.State
    STATE_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    TIME_MICROS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ANSWER_JSON_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    state: WriteOutcome.State
    table: str
    time_micros: int
    reason: str
    answer_json: str
    version: int
    deadline_ms: int
    user: str
    def __init__(self, state: _Optional[_Union[WriteOutcome.State, str]] = ..., table: _Optional[str] = ..., time_micros: _Optional[int] = ..., reason: _Optional[str] = ..., answer_json: _Optional[str] = ..., version: _Optional[int] = ..., deadline_ms: _Optional[int] = ..., user: _Optional[str] = ...) -> None: ...
