from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DataType(_message.Message):
    __slots__ = ("primitive", "decimal", "array", "map", "struct")
    PRIMITIVE_FIELD_NUMBER: _ClassVar[int]
    DECIMAL_FIELD_NUMBER: _ClassVar[int]
    ARRAY_FIELD_NUMBER: _ClassVar[int]
    MAP_FIELD_NUMBER: _ClassVar[int]
    STRUCT_FIELD_NUMBER: _ClassVar[int]
    primitive: str
    decimal: DecimalType
    array: ArrayType
    map: MapType
    struct: StructType
    def __init__(self, primitive: _Optional[str] = ..., decimal: _Optional[_Union[DecimalType, _Mapping]] = ..., array: _Optional[_Union[ArrayType, _Mapping]] = ..., map: _Optional[_Union[MapType, _Mapping]] = ..., struct: _Optional[_Union[StructType, _Mapping]] = ...) -> None: ...

class DecimalType(_message.Message):
    __slots__ = ("precision", "scale")
    PRECISION_FIELD_NUMBER: _ClassVar[int]
    SCALE_FIELD_NUMBER: _ClassVar[int]
    precision: int
    scale: int
    def __init__(self, precision: _Optional[int] = ..., scale: _Optional[int] = ...) -> None: ...

class ArrayType(_message.Message):
    __slots__ = ("element_type", "contains_null")
    ELEMENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTAINS_NULL_FIELD_NUMBER: _ClassVar[int]
    element_type: DataType
    contains_null: bool
    def __init__(self, element_type: _Optional[_Union[DataType, _Mapping]] = ..., contains_null: _Optional[bool] = ...) -> None: ...

class MapType(_message.Message):
    __slots__ = ("key_type", "value_type", "value_contains_null")
    KEY_TYPE_FIELD_NUMBER: _ClassVar[int]
    VALUE_TYPE_FIELD_NUMBER: _ClassVar[int]
    VALUE_CONTAINS_NULL_FIELD_NUMBER: _ClassVar[int]
    key_type: DataType
    value_type: DataType
    value_contains_null: bool
    def __init__(self, key_type: _Optional[_Union[DataType, _Mapping]] = ..., value_type: _Optional[_Union[DataType, _Mapping]] = ..., value_contains_null: _Optional[bool] = ...) -> None: ...

class StructField(_message.Message):
    __slots__ = ("name", "type", "nullable", "metadata_json")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NULLABLE_FIELD_NUMBER: _ClassVar[int]
    METADATA_JSON_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: DataType
    nullable: bool
    metadata_json: str
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[DataType, _Mapping]] = ..., nullable: _Optional[bool] = ..., metadata_json: _Optional[str] = ...) -> None: ...

class StructType(_message.Message):
    __slots__ = ("fields",)
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedCompositeFieldContainer[StructField]
    def __init__(self, fields: _Optional[_Iterable[_Union[StructField, _Mapping]]] = ...) -> None: ...
