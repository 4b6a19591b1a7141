from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class HookDefinition(_message.Message):
    __slots__ = ("id", "url", "python", "on", "table_pattern", "max_attempts", "backoff_s", "max_backoff_s", "timeout_s", "created_micros", "created_by", "paused")
    ID_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    PYTHON_FIELD_NUMBER: _ClassVar[int]
    ON_FIELD_NUMBER: _ClassVar[int]
    TABLE_PATTERN_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_S_FIELD_NUMBER: _ClassVar[int]
    MAX_BACKOFF_S_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    CREATED_MICROS_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    id: bytes
    url: str
    python: str
    on: _containers.RepeatedScalarFieldContainer[str]
    table_pattern: str
    max_attempts: int
    backoff_s: float
    max_backoff_s: float
    timeout_s: float
    created_micros: int
    created_by: str
    paused: bool
    def __init__(self, id: _Optional[bytes] = ..., url: _Optional[str] = ..., python: _Optional[str] = ..., on: _Optional[_Iterable[str]] = ..., table_pattern: _Optional[str] = ..., max_attempts: _Optional[int] = ..., backoff_s: _Optional[float] = ..., max_backoff_s: _Optional[float] = ..., timeout_s: _Optional[float] = ..., created_micros: _Optional[int] = ..., created_by: _Optional[str] = ..., paused: _Optional[bool] = ...) -> None: ...

class HookState(_message.Message):
    __slots__ = ("cursor", "attempts", "unavailable", "next_attempt_micros", "last_error", "failing_since_micros", "delivered", "dead", "last_delivered_micros", "lease_owner", "lease_until_micros", "expired_at", "skipped", "last_attempt_micros", "pruned", "last_unavailable")
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_MICROS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    FAILING_SINCE_MICROS_FIELD_NUMBER: _ClassVar[int]
    DELIVERED_FIELD_NUMBER: _ClassVar[int]
    DEAD_FIELD_NUMBER: _ClassVar[int]
    LAST_DELIVERED_MICROS_FIELD_NUMBER: _ClassVar[int]
    LEASE_OWNER_FIELD_NUMBER: _ClassVar[int]
    LEASE_UNTIL_MICROS_FIELD_NUMBER: _ClassVar[int]
    EXPIRED_AT_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    LAST_ATTEMPT_MICROS_FIELD_NUMBER: _ClassVar[int]
    PRUNED_FIELD_NUMBER: _ClassVar[int]
    LAST_UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    cursor: bytes
    attempts: int
    unavailable: int
    next_attempt_micros: int
    last_error: str
    failing_since_micros: int
    delivered: int
    dead: int
    last_delivered_micros: int
    lease_owner: str
    lease_until_micros: int
    expired_at: bytes
    skipped: int
    last_attempt_micros: int
    pruned: bytes
    last_unavailable: bool
    def __init__(self, cursor: _Optional[bytes] = ..., attempts: _Optional[int] = ..., unavailable: _Optional[int] = ..., next_attempt_micros: _Optional[int] = ..., last_error: _Optional[str] = ..., failing_since_micros: _Optional[int] = ..., delivered: _Optional[int] = ..., dead: _Optional[int] = ..., last_delivered_micros: _Optional[int] = ..., lease_owner: _Optional[str] = ..., lease_until_micros: _Optional[int] = ..., expired_at: _Optional[bytes] = ..., skipped: _Optional[int] = ..., last_attempt_micros: _Optional[int] = ..., pruned: _Optional[bytes] = ..., last_unavailable: _Optional[bool] = ...) -> None: ...

class HookDelivery(_message.Message):
    __slots__ = ("delivery_id", "status", "attempts", "at_micros", "type", "object", "worker")
    class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATUS_UNSPECIFIED: _ClassVar[HookDelivery.Status]
        DELIVERED: _ClassVar[HookDelivery.Status]
        DEAD_LETTERED: _ClassVar[HookDelivery.Status]
        REDELIVERED: _ClassVar[HookDelivery.Status]
        SKIPPED: _ClassVar[HookDelivery.Status]
    STATUS_UNSPECIFIED: HookDelivery.Status
    DELIVERED: HookDelivery.Status
    DEAD_LETTERED: HookDelivery.Status
    REDELIVERED: HookDelivery.Status
    SKIPPED: HookDelivery.Status
    DELIVERY_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    AT_MICROS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    delivery_id: str
    status: HookDelivery.Status
    attempts: int
    at_micros: int
    type: str
    object: str
    worker: str
    def __init__(self, delivery_id: _Optional[str] = ..., status: _Optional[_Union[HookDelivery.Status, str]] = ..., attempts: _Optional[int] = ..., at_micros: _Optional[int] = ..., type: _Optional[str] = ..., object: _Optional[str] = ..., worker: _Optional[str] = ...) -> None: ...

class HookDeadLetter(_message.Message):
    __slots__ = ("payload_json", "attempts", "last_error", "dead_micros", "retry", "retry_attempts", "next_attempt_micros")
    PAYLOAD_JSON_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    DEAD_MICROS_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    RETRY_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_MICROS_FIELD_NUMBER: _ClassVar[int]
    payload_json: str
    attempts: int
    last_error: str
    dead_micros: int
    retry: bool
    retry_attempts: int
    next_attempt_micros: int
    def __init__(self, payload_json: _Optional[str] = ..., attempts: _Optional[int] = ..., last_error: _Optional[str] = ..., dead_micros: _Optional[int] = ..., retry: _Optional[bool] = ..., retry_attempts: _Optional[int] = ..., next_attempt_micros: _Optional[int] = ...) -> None: ...
