"""The operation names of the Java <-> Python bridge exist once: every op the shim sends is one Python
serves (``spark_ops.OPS``, or the bridge's own ``ping`` / ``lineage.event``), and every op Python serves is
sent by the shim (no dead half of the contract). Parses the Java sources: fails on drift."""
from __future__ import annotations

import re
from pathlib import Path

from ushas_catalog.spark.jar import source_dir
from ushas_catalog.spark.statements import STATEMENTS

#: ops the bridge module answers itself (ushas_catalog.bridge.handle / _answer), with the statements it answers
#: as several ops (ushas_catalog.spark.statements)
BRIDGE_OPS = {"ping", "lineage.event", *STATEMENTS}
#: calls that name an op: Bridge.call / catalog.call / b.call / load(op, ...)
CALL = re.compile(r"\b(?:call|load)\(\s*\"([a-z_.]+)\"")
#: ops Python serves that the shim does not send (yet), each with its reason
NOT_SENT = {"write_outcome": "what became of a write: for operators and tests; the shim's commit retries ask "
                             "commit_write itself (write_fence makes a retried commit apply once)"}
READS = re.compile(r"READS\s*=\s*java\.util\.Set\.of\(([^)]*)\)", re.S)


def _java() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((source_dir() / "src" / "main" / "java").rglob("*.java")))


def _served() -> set[str]:
    from ushas_catalog.spark.ops import OPS

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


# ---- fields: every request field the shim sends is read by Python, every answer field it reads is answered --
#: the shim's Java sources that build bridge requests and read answers (the listener, the plan writer and the
#: JSON helpers speak other formats: lineage.actions, lineage.plan)
SHIM_FILES = ("UshasCatalog", "UshasTable", "UshasBatchWrite", "UshasCommitProtocol", "UshasFileIndex",
              "PartitionRepair", "RepairTableExec", "TableChanges", "UshasWrite", "UshasScanRule", "Bridge",
              "PartitionFilters", "Rows", "RelationCache", "UshasSource", "Staging", "UshasExtensions",
              "UshasProcedures",
              "ViewSchemaSync", "UshasFunctions", "UshasFunctionCommand", "FunctionStatements",
              "DescribeStrategy", "UshasStreamSource")
#: the Python modules that read requests and build answers of the bridge ops
PY_MODULES = ("spark/bridge", "spark/ops", "spark/one_transaction", "spark/reads", "spark/writes", "spark/tables",
              "spark/options", "spark/repair", "spark/cache", "data/repair", "model/table_changes", "data/pruning",
              "model/data_files", "data/write_fence", "errors", "model/partitions", "model/schema",
              "spark/procedures", "procedures/registry", "procedures/tables", "procedures/stats",
              "spark/view_sync", "spark/functions",
              "spark/describe",
              "spark/shares", "spark/time_travel", "changes/streams", "spark/stream_source",
              "spark/remote", "spark/statements")
#: fields the shim writes into JSON that is not a bridge request, each with where it goes
NOT_REQUEST_FIELDS = {
    "entries": "RelationCache.stats(): the cache's own counters, shown by the shim",
    "loaded": "RelationCache.stats()", "unchanged": "RelationCache.stats()", "unchecked": "RelationCache.stats()",
    "ttl_ms": "RelationCache.stats() (Python answers it in open's cache settings)",
    "errorClass": "UshasFunctions.sparkError: Spark's error class, thrown in the JVM",
    "user": "UshasFunctionCommand: SHOW FUNCTIONS' scopes, applied by the command itself",
    "system": "UshasFunctionCommand: SHOW FUNCTIONS' scopes (system functions are Spark's)",
    "refuse": "UshasCatalog.policyOf: the shim's own mark of a table answer without its reader's policy",
}
#: keys the shim reads from something that is not a bridge answer, each with what it is
NOT_ANSWER_FIELDS = {
    "boot": "Staging: the _owner file of a staging directory", "host": "Staging: the _owner file",
    "uri": "UshasCatalog: the catalog's Spark options", "warehouse": "UshasCatalog: the catalog's Spark options",
    "refuse": "UshasCatalog.policyOf: the shim's own mark of a table answer without its reader's policy",
    "numListedDirectories": "RepairTableExec: Spark SQL metrics", "numAddedPartitions": "RepairTableExec: metrics",
    "numDroppedPartitions": "RepairTableExec: metrics", "numInvalidDirectories": "RepairTableExec: metrics",
    "definition": "UshasFunctionCommand: the statement it runs (FunctionStatements)",
    "pattern": "UshasFunctionCommand: the statement's LIKE pattern", "user": "UshasFunctionCommand: the statement",
    "remote": "UshasCatalog.checked: the context RemoteOptions built from the catalog's own options",
}


def _shim() -> str:
    root = source_dir() / "src" / "main" / "java" / "io" / "ushas" / "spark"
    return "\n".join((root / f"{name}.java").read_text(encoding="utf-8") for name in SHIM_FILES)


def _python() -> str:
    import ushas_catalog

    root = Path(ushas_catalog.__file__).parent
    return "\n".join((root / f"{name}.py").read_text(encoding="utf-8") for name in PY_MODULES)


def test_every_request_field_the_shim_sends_is_read_by_python() -> None:
    sent = set(re.findall(r"\.(?:put|set|putArray|putObject|putNull)\(\"([A-Za-z_]+)\"", _shim()))
    python = _python()
    read = set(re.findall(r"[\[(]\s*[\"']([A-Za-z_]+)[\"']\s*[\]),]", python))
    read |= set(re.findall(r"[\"']([A-Za-z_]+)[\"'] (?:not )?in \w", python))
    assert sent, "no request field found in the Java sources: the pattern is stale"
    assert sorted(sent - read - set(NOT_REQUEST_FIELDS)) == []


def test_every_answer_field_the_shim_reads_is_answered_by_python() -> None:
    shim = _shim()
    wanted = set(re.findall(r"\.(?:get|path|has|hasNonNull)\(\"([A-Za-z_]+)\"\)", shim))
    wanted |= set(re.findall(r"Json\.text\(\w+, \"([A-Za-z_]+)\"\)", shim))
    python = _python()
    answered = set(re.findall(r"[\"']([A-Za-z_]+)[\"']\s*:", python)) | set(re.findall(r"\[\"([A-Za-z_]+)\"\] =", python))
    answered |= set(re.findall(r"\b([a-z_]+)=", python))  # dataclass / keyword fields serialized by name
    assert wanted, "no answer field found in the Java sources: the pattern is stale"
    assert sorted(wanted - answered - set(NOT_ANSWER_FIELDS)) == []
