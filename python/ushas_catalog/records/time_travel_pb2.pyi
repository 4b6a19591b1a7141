from ushas_catalog.records import partition_pb2 as _partition_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DataFileListChange(_message.Message):
    __slots__ = ("previous", "appended")
    PREVIOUS_FIELD_NUMBER: _ClassVar[int]
    APPENDED_FIELD_NUMBER: _ClassVar[int]
    previous: _partition_pb2.DataFileList
    appended: _containers.RepeatedCompositeFieldContainer[_partition_pb2.DataFile]
    def __init__(self, previous: _Optional[_Union[_partition_pb2.DataFileList, _Mapping]] = ..., appended: _Optional[_Iterable[_Union[_partition_pb2.DataFile, _Mapping]]] = ...) -> None: ...

class VersionTag(_message.Message):
    __slots__ = ("version", "created_at_micros", "user")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    version: int
    created_at_micros: int
    user: str
    def __init__(self, version: _Optional[int] = ..., created_at_micros: _Optional[int] = ..., user: _Optional[str] = ...) -> None: ...

class PurgeMark(_message.Message):
    __slots__ = ("purged_at_micros", "through_micros", "user")
    PURGED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    THROUGH_MICROS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    purged_at_micros: int
    through_micros: int
    user: str
    def __init__(self, purged_at_micros: _Optional[int] = ..., through_micros: _Optional[int] = ..., user: _Optional[str] = ...) -> None: ...
