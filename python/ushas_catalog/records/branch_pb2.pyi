from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class BranchState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BRANCH_ACTIVE: _ClassVar[BranchState]
    BRANCH_DROPPED: _ClassVar[BranchState]
BRANCH_ACTIVE: BranchState
BRANCH_DROPPED: BranchState

class SubBranchRecord(_message.Message):
    __slots__ = ("id", "parent", "branch_point", "created_by", "created_at_micros", "state", "merged_at_micros", "merges")
    ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    BRANCH_POINT_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    MERGED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    MERGES_FIELD_NUMBER: _ClassVar[int]
    id: bytes
    parent: str
    branch_point: int
    created_by: str
    created_at_micros: int
    state: BranchState
    merged_at_micros: int
    merges: int
    def __init__(self, id: _Optional[bytes] = ..., parent: _Optional[str] = ..., branch_point: _Optional[int] = ..., created_by: _Optional[str] = ..., created_at_micros: _Optional[int] = ..., state: _Optional[_Union[BranchState, str]] = ..., merged_at_micros: _Optional[int] = ..., merges: _Optional[int] = ...) -> None: ...

class BranchPoints(_message.Message):
    __slots__ = ("current", "live")
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    LIVE_FIELD_NUMBER: _ClassVar[int]
    current: int
    live: int
    def __init__(self, current: _Optional[int] = ..., live: _Optional[int] = ...) -> None: ...
