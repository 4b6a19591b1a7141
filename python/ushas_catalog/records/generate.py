"""Regenerate the checked-in ``*_pb2.py`` / ``*_pb2.pyi`` from the ``.proto`` files.

Run ``python -m ushas_catalog.records.generate`` (needs ``grpcio-tools``, in the ``dev``
extra). The generated code records the protoc version it came from; the protobuf
runtime pin in pyproject.toml must allow that version and newer within the major.
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: the include root: proto imports are "ushas_catalog/records/x.proto", so generated
#: modules import each other as ``ushas_catalog.records.x_pb2``
INCLUDE_ROOT = HERE.parent.parent


def proto_files() -> list[Path]:
    return sorted(HERE.glob("*.proto"))


def generate() -> list[Path]:
    try:
        from grpc_tools import protoc
        import grpc_tools
    except ImportError:  # pragma: no cover - depends on the environment
        raise SystemExit("grpcio-tools is needed: pip install -e '.[dev]'") from None
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    rel = [str(p.relative_to(INCLUDE_ROOT)) for p in proto_files()]
    args = ["protoc", f"-I{INCLUDE_ROOT}", f"-I{well_known}",
            f"--python_out={INCLUDE_ROOT}", f"--pyi_out={INCLUDE_ROOT}", *rel]
    rc = protoc.main(args)
    if rc != 0:
        raise SystemExit(f"protoc failed with exit code {rc}")
    return [HERE / (p.stem + "_pb2.py") for p in proto_files()]


def main() -> int:
    for path in generate():
        print(path.relative_to(INCLUDE_ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
