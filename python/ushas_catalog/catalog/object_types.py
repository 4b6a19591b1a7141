"""User-defined subspaces of a versioned object (docs/objects.md, "User-defined subspaces"): the message
type a user registers (a ``.proto`` file, a serialized ``FileDescriptorSet``, or a generated message
class), checking a record against it, and its primary key (tuple-packed: range scans are ordered).

The type is stored as an :class:`~ushas_catalog.records.object_pb2.ObjectType` (the descriptor set and the
message's full name) in the object's ``ObjectType`` subspace; records are the serialized messages in
``ObjectData`` under ``(subspace, primary key...)``. A write is type-checked as a built-in record is
(``records/store.py``): a message of another type, an unknown field, or a missing primary key is refused.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import fdb.tuple as fdbtuple
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message

from ..errors import InvalidArgument
from ..records.object_pb2 import ObjectType

#: the largest record a user-defined subspace takes (one key-value pair, under FoundationDB's 100 kB)
MAX_RECORD_BYTES = 90_000
#: the largest primary key (tuple-packed), under FoundationDB's 10 kB keys with the object's path before it
MAX_KEY_BYTES = 4_000
#: field types a primary key element may have (its values pack as tuple elements)
KEY_TYPES = frozenset({FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES, FieldDescriptor.TYPE_BOOL,
                       FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT32,
                       FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64,
                       FieldDescriptor.TYPE_FIXED32, FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED32,
                       FieldDescriptor.TYPE_SFIXED64, FieldDescriptor.TYPE_ENUM})


@dataclass(frozen=True)
class SubspaceType:
    """A registered subspace: its name, message type and primary key fields."""

    name: str
    message_type: str
    primary_key: tuple[str, ...]
    fields: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "message_type": self.message_type, "primary_key": list(self.primary_key),
                "fields": list(self.fields)}


def compile_proto(path: Path) -> bytes:
    """A ``.proto`` file compiled to a serialized ``FileDescriptorSet`` (with its imports): by
    ``grpcio-tools``' protoc if installed, else a ``protoc`` on PATH."""
    if not path.is_file():
        raise InvalidArgument(f"no such .proto file: {path}")
    with tempfile.TemporaryDirectory(prefix="ushas-proto-") as tmp:
        out = os.path.join(tmp, "set.pb")
        args = [f"-I{path.parent}", f"--descriptor_set_out={out}", "--include_imports", path.name]
        try:
            from grpc_tools import protoc
            import grpc_tools
        except ImportError:
            exe = shutil.which("protoc")
            if exe is None:
                raise InvalidArgument("compiling a .proto needs grpcio-tools (pip install grpcio-tools) or protoc "
                                      "on PATH; or pass a serialized FileDescriptorSet (protoc "
                                      "--include_imports --descriptor_set_out=FILE)") from None
            done = subprocess.run([exe, *args], capture_output=True, text=True, check=False)
            rc, err = done.returncode, done.stderr.strip()
        else:
            well_known = Path(grpc_tools.__file__).parent / "_proto"
            rc, err = protoc.main(["protoc", f"-I{well_known}", *args]), ""
        if rc != 0 or not os.path.exists(out):
            raise InvalidArgument(f"{path}: protoc failed (exit {rc})" + (f": {err}" if err else ""))
        return Path(out).read_bytes()


def descriptor_set(source: Any) -> bytes:
    """A serialized ``FileDescriptorSet`` from what a user gives: a ``.proto`` path, a descriptor set
    (bytes, a message, or a ``.pb`` / ``.desc`` file), or a generated message class."""
    if isinstance(source, descriptor_pb2.FileDescriptorSet):
        return bytes(source.SerializeToString())
    if isinstance(source, (bytes, bytearray)):
        return bytes(source)
    if isinstance(source, type) and issubclass(source, Message):
        source = source.DESCRIPTOR
    if isinstance(source, Descriptor):
        fds = descriptor_pb2.FileDescriptorSet()
        seen: set[str] = set()

        def add(f: Any) -> None:
            if f.name in seen:
                return
            seen.add(f.name)
            for dep in f.dependencies:
                add(dep)
            f.CopyToProto(fds.file.add())

        add(source.file)
        return bytes(fds.SerializeToString())
    if isinstance(source, (str, Path)):
        path = Path(source)
        if path.suffix == ".proto":
            return compile_proto(path)
        if not path.is_file():
            raise InvalidArgument(f"no such descriptor file: {path}")
        return path.read_bytes()
    raise InvalidArgument("a subspace type is a .proto file, a serialized FileDescriptorSet or a message class, "
                          f"not {type(source).__name__}")


def message_name(source: Any) -> str | None:
    """The message type a generated class or descriptor given as the type names (None: other sources)."""
    if isinstance(source, type) and issubclass(source, Message):
        return str(source.DESCRIPTOR.full_name)
    if isinstance(source, Descriptor):
        return str(source.full_name)
    return None


@functools.lru_cache(maxsize=64)
def _message_class(descriptors: bytes, message_type: str) -> type[Message]:
    fds = descriptor_pb2.FileDescriptorSet()
    try:
        fds.ParseFromString(descriptors)
    except DecodeError:
        raise InvalidArgument("the descriptor is not a serialized FileDescriptorSet") from None
    if not fds.file:
        raise InvalidArgument("the descriptor set holds no .proto file")
    pool = descriptor_pool.DescriptorPool()
    try:
        for f in fds.file:
            pool.Add(f)
        d = pool.FindMessageTypeByName(message_type)
    except KeyError:
        known = [f"{f.package + '.' if f.package else ''}{m.name}" for f in fds.file for m in f.message_type]
        raise InvalidArgument(f"message type {message_type!r} is not in the descriptor (it has: "
                              f"{', '.join(known) or 'none'})") from None
    except TypeError as e:  # a file whose imports are missing from the set
        raise InvalidArgument(f"the descriptor set is incomplete (compile it with --include_imports): {e}") from None
    except Exception as e:  # noqa: BLE001 - protobuf refuses a malformed descriptor in several ways
        raise InvalidArgument(f"the descriptor set is not valid: {' '.join(str(e).split())[:200]}") from None
    return message_factory.GetMessageClass(d)


def new_type(descriptors: bytes, message_type: str | None, primary_key: Sequence[str] | str) -> ObjectType:
    """The type record of a new subspace, checked: the message exists, the key fields are scalars of it."""
    if message_type is None:
        fds = descriptor_pb2.FileDescriptorSet()
        try:
            fds.ParseFromString(descriptors)
        except DecodeError:
            raise InvalidArgument("the descriptor is not a serialized FileDescriptorSet") from None
        last = fds.file[-1] if fds.file else None
        names = [m.name for m in last.message_type] if last is not None else []
        if len(names) != 1:
            raise InvalidArgument(f"name the message type (the file declares {len(names)}: {', '.join(names)})")
        message_type = (f"{last.package}." if last is not None and last.package else "") + names[0]
    cls = _message_class(descriptors, message_type)
    key = [primary_key] if isinstance(primary_key, str) else list(primary_key)
    if not key:
        raise InvalidArgument("a subspace needs its primary key: one or more fields of the message")
    fields = cls.DESCRIPTOR.fields_by_name
    for k in key:
        f = fields.get(k)
        if f is None:
            raise InvalidArgument(f"primary key field {k!r} is not a field of {message_type} "
                                  f"(fields: {', '.join(fields)})")
        if f.type not in KEY_TYPES or _repeated(f):
            raise InvalidArgument(f"primary key field {k!r} must be a single scalar (string, bytes, bool, integer, "
                                  "enum)")
    if len(set(key)) != len(key):
        raise InvalidArgument(f"primary key {key} names a field twice")
    return ObjectType(message_type=message_type, descriptor_set=descriptors, primary_key=key)


def _repeated(f: FieldDescriptor) -> bool:
    return bool(f.is_repeated)


def describe(name: str, t: ObjectType) -> SubspaceType:
    cls = _message_class(bytes(t.descriptor_set), t.message_type)
    return SubspaceType(name, t.message_type, tuple(t.primary_key), tuple(cls.DESCRIPTOR.fields_by_name))


def checked_record(t: ObjectType, record: Any) -> tuple[tuple[Any, ...], bytes]:
    """(primary key, serialized message) of ``record`` (a message of the subspace's type, or a dict of its
    fields), type-checked: a message of another type or an unknown field is refused."""
    cls = _message_class(bytes(t.descriptor_set), t.message_type)
    if isinstance(record, Message):
        got = record.DESCRIPTOR.full_name
        if got != t.message_type:
            raise InvalidArgument(f"the subspace holds {t.message_type} records, not {got}")
        msg = cls()
        try:
            msg.ParseFromString(record.SerializeToString())
        except DecodeError:
            raise InvalidArgument(f"the record does not parse as {t.message_type}") from None
        clean = cls()
        clean.CopyFrom(msg)
        clean.DiscardUnknownFields()
        if clean.SerializeToString(deterministic=True) != msg.SerializeToString(deterministic=True):
            raise InvalidArgument(f"the record has fields {t.message_type} does not declare (or of other types): "
                                  "is it another version of the type?")
    elif isinstance(record, Mapping):
        msg = cls()
        try:
            json_format.ParseDict(dict(record), msg)
        except json_format.ParseError as e:
            raise InvalidArgument(f"not a {t.message_type} record: " + " ".join(str(e).split())) from None
    else:
        raise InvalidArgument(f"a record is a {t.message_type} message or a dict of its fields, "
                              f"not {type(record).__name__}")
    data = msg.SerializeToString(deterministic=True)
    if len(data) > MAX_RECORD_BYTES:
        raise InvalidArgument(f"a record of a user-defined subspace is at most {MAX_RECORD_BYTES} bytes, "
                              f"this one is {len(data)}")
    key = tuple(getattr(msg, k) for k in t.primary_key)
    size = len(fdbtuple.pack(key))
    if size > MAX_KEY_BYTES:
        raise InvalidArgument(f"a primary key of a user-defined subspace is at most {MAX_KEY_BYTES} bytes packed, "
                              f"this one is {size}")
    return key, data


def key_of(t: ObjectType, key: Any, *, prefix: bool = False) -> tuple[Any, ...]:
    """A primary key given by a caller (a value for a one-field key, else a tuple / list of them); with
    ``prefix`` its leading fields only (a range bound)."""
    values = tuple(key) if isinstance(key, (tuple, list)) else (key,)
    n = len(t.primary_key)
    if len(values) > n or (not prefix and len(values) != n):
        raise InvalidArgument(f"the primary key is ({', '.join(t.primary_key)}): {n} value(s), not {len(values)}")
    for v in values:
        if not isinstance(v, (str, bytes, int, bool)):
            raise InvalidArgument(f"primary key values are strings, bytes, integers or booleans, not {v!r}")
    return values


def as_dict(t: ObjectType, data: bytes) -> dict[str, Any]:
    """A stored record as a dict of its fields (proto field names, every field)."""
    cls = _message_class(bytes(t.descriptor_set), t.message_type)
    msg = cls()
    msg.ParseFromString(data)
    return json_format.MessageToDict(msg, preserving_proto_field_name=True,
                                     always_print_fields_with_no_presence=True)
