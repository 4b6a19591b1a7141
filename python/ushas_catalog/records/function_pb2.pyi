from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FunctionResource(_message.Message):
    __slots__ = ("type", "uri")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    type: str
    uri: str
    def __init__(self, type: _Optional[str] = ..., uri: _Optional[str] = ...) -> None: ...

class FunctionRecord(_message.Message):
    __slots__ = ("kind", "class_name", "resources", "parameters", "return_type", "body", "table_function", "deterministic", "comment", "language", "owner", "created_at_micros", "updated_at_micros", "version", "properties")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[FunctionRecord.Kind]
        CLASS: _ClassVar[FunctionRecord.Kind]
        SQL: _ClassVar[FunctionRecord.Kind]
    KIND_UNSPECIFIED: FunctionRecord.Kind
    CLASS: FunctionRecord.Kind
    SQL: FunctionRecord.Kind
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    KIND_FIELD_NUMBER: _ClassVar[int]
    CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RETURN_TYPE_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    TABLE_FUNCTION_FIELD_NUMBER: _ClassVar[int]
    DETERMINISTIC_FIELD_NUMBER: _ClassVar[int]
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    kind: FunctionRecord.Kind
    class_name: str
    resources: _containers.RepeatedCompositeFieldContainer[FunctionResource]
    parameters: str
    return_type: str
    body: str
    table_function: bool
    deterministic: bool
    comment: str
    language: str
    owner: str
    created_at_micros: int
    updated_at_micros: int
    version: int
    properties: _containers.ScalarMap[str, str]
    def __init__(self, kind: _Optional[_Union[FunctionRecord.Kind, str]] = ..., class_name: _Optional[str] = ..., resources: _Optional[_Iterable[_Union[FunctionResource, _Mapping]]] = ..., parameters: _Optional[str] = ..., return_type: _Optional[str] = ..., body: _Optional[str] = ..., table_function: _Optional[bool] = ..., deterministic: _Optional[bool] = ..., comment: _Optional[str] = ..., language: _Optional[str] = ..., owner: _Optional[str] = ..., created_at_micros: _Optional[int] = ..., updated_at_micros: _Optional[int] = ..., version: _Optional[int] = ..., properties: _Optional[_Mapping[str, str]] = ...) -> None: ...
