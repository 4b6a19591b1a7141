from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Partition(_message.Message):
    __slots__ = ("location", "files", "bytes", "rows", "properties", "created_at_micros", "files_recorded", "data_files", "added_version", "dropped_version", "tags", "replaced")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class TagsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    FILES_RECORDED_FIELD_NUMBER: _ClassVar[int]
    DATA_FILES_FIELD_NUMBER: _ClassVar[int]
    ADDED_VERSION_FIELD_NUMBER: _ClassVar[int]
    DROPPED_VERSION_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    REPLACED_FIELD_NUMBER: _ClassVar[int]
    location: str
    files: int
    bytes: int
    rows: int
    properties: _containers.ScalarMap[str, str]
    created_at_micros: int
    files_recorded: bool
    data_files: _containers.RepeatedCompositeFieldContainer[DataFile]
    added_version: int
    dropped_version: int
    tags: _containers.ScalarMap[str, str]
    replaced: Partition
    def __init__(self, location: _Optional[str] = ..., files: _Optional[int] = ..., bytes: _Optional[int] = ..., rows: _Optional[int] = ..., properties: _Optional[_Mapping[str, str]] = ..., created_at_micros: _Optional[int] = ..., files_recorded: _Optional[bool] = ..., data_files: _Optional[_Iterable[_Union[DataFile, _Mapping]]] = ..., added_version: _Optional[int] = ..., dropped_version: _Optional[int] = ..., tags: _Optional[_Mapping[str, str]] = ..., replaced: _Optional[_Union[Partition, _Mapping]] = ...) -> None: ...

class DataFile(_message.Message):
    __slots__ = ("path", "size", "mtime")
    PATH_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    MTIME_FIELD_NUMBER: _ClassVar[int]
    path: str
    size: int
    mtime: int
    def __init__(self, path: _Optional[str] = ..., size: _Optional[int] = ..., mtime: _Optional[int] = ...) -> None: ...

class DataFileList(_message.Message):
    __slots__ = ("files", "version")
    FILES_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[DataFile]
    version: int
    def __init__(self, files: _Optional[_Iterable[_Union[DataFile, _Mapping]]] = ..., version: _Optional[int] = ...) -> None: ...

class DataGarbage(_message.Message):
    __slots__ = ("table", "operation", "files", "directories", "time_micros")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    DIRECTORIES_FIELD_NUMBER: _ClassVar[int]
    TIME_MICROS_FIELD_NUMBER: _ClassVar[int]
    table: str
    operation: str
    files: _containers.RepeatedCompositeFieldContainer[DataFile]
    directories: _containers.RepeatedScalarFieldContainer[str]
    time_micros: int
    def __init__(self, table: _Optional[str] = ..., operation: _Optional[str] = ..., files: _Optional[_Iterable[_Union[DataFile, _Mapping]]] = ..., directories: _Optional[_Iterable[str]] = ..., time_micros: _Optional[int] = ...) -> None: ...

class PartitionChange(_message.Message):
    __slots__ = ("action", "previous", "appended")
    class Action(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        ACTION_UNSPECIFIED: _ClassVar[PartitionChange.Action]
        ADDED: _ClassVar[PartitionChange.Action]
        DROPPED: _ClassVar[PartitionChange.Action]
        REPLACED: _ClassVar[PartitionChange.Action]
        APPENDED: _ClassVar[PartitionChange.Action]
    ACTION_UNSPECIFIED: PartitionChange.Action
    ADDED: PartitionChange.Action
    DROPPED: PartitionChange.Action
    REPLACED: PartitionChange.Action
    APPENDED: PartitionChange.Action
    ACTION_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_FIELD_NUMBER: _ClassVar[int]
    APPENDED_FIELD_NUMBER: _ClassVar[int]
    action: PartitionChange.Action
    previous: Partition
    appended: _containers.RepeatedCompositeFieldContainer[DataFile]
    def __init__(self, action: _Optional[_Union[PartitionChange.Action, str]] = ..., previous: _Optional[_Union[Partition, _Mapping]] = ..., appended: _Optional[_Iterable[_Union[DataFile, _Mapping]]] = ...) -> None: ...

class PartitionTagEntry(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
