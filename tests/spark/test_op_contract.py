"""The operation names of the Java <-> Python bridge exist once: every op the shim sends is one Python
serves (``spark_ops.OPS``, or the bridge's own ``ping`` / ``lineage.event``), and every op Python serves is
sent by the shim (no dead half of the contract). Parses the Java sources: fails on drift."""
from __future__ import annotations

import re

from ushas_catalog.jar import source_dir

#: ops the bridge module answers itself (ushas_catalog.bridge.handle / _answer)
BRIDGE_OPS = {"ping", "lineage.event"}
#: calls that name an op: Bridge.call / catalog.call / b.call / load(op, ...)
CALL = re.compile(r"\b(?:call|load)\(\s*\"([a-z_.]+)\"")
#: ops Python serves that the shim does not send (yet), each with its reason
NOT_SENT = {"write_outcome": "what became of a write: for operators and tests; the shim's commit retries ask "
                             "commit_write itself (write_fence makes a retried commit apply once)"}
READS = re.compile(r"READS\s*=\s*java\.util\.Set\.of\(([^)]*)\)", re.S)


def _java() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((source_dir() / "src" / "main" / "java").rglob("*.java")))


def _served() -> set[str]:
    from ushas_catalog.spark_ops import OPS

    return set(OPS) | BRIDGE_OPS


def test_every_op_the_shim_sends_is_served() -> None:
    sent = set(CALL.findall(_java()))
    assert sent, "no bridge call found in the Java sources: the pattern is stale"
    assert sorted(sent - _served()) == []


def test_every_served_op_is_sent_by_the_shim() -> None:
    java = _java()
    assert sorted(op for op in _served() if f'"{op}"' not in java) == sorted(NOT_SENT)


def test_the_shims_read_ops_are_ops() -> None:
    (reads,) = READS.findall(_java())
    names = set(re.findall(r"\"([a-z_.]+)\"", reads))
    assert names and sorted(names - _served()) == []
