"""``CALL <catalog>.system.compact(table => 'db.t', where => "dt = '2026-11-29'", target_file_size => …)``:
rewrite the small files of a table's partitions (streaming writes make many) as fewer files, in one
fenced commit.

1. The partitions: every partition, or those ``where`` selects — a predicate over the partition columns,
   which Spark evaluates over the catalog's partition values (no data is read to choose them).
2. In each, the recorded files smaller than ``target_file_size`` (default 128 MiB); a partition with two or
   more is rewritten: Spark reads exactly those files and writes their rows, in the table's format, into a
   new directory of the partition (``compact-<id>``), about ``target_file_size`` each; Spark then lists the
   files it wrote (``_metadata``). Nothing is registered yet: readers see the old files.
3. One commit (operation ``COMPACT``) replaces, in each rewritten partition, the replaced files by the new
   ones — *on the partition's file list as it is at commit time*: files appended meanwhile (a running
   stream's batches) stay. A concurrent commit makes the commit conflict and retry (the rewrite is not
   redone); a partition whose replaced files are gone meanwhile (an overwrite, a delete) is left as it is
   and its new files go to the garbage. The replaced files go to the garbage ``purge`` removes (after the
   table's retention: older versions stay readable until then).

Privilege: MODIFY on the table; refused to a user whose reads go through the table's row filter (as an
overwrite: it rewrites rows the user cannot see). Formats: parquet and orc (self-describing files).
Streaming reads skip compaction commits (:mod:`ushas_catalog.spark.stream_source`).
"""
from __future__ import annotations

import json
import math
import uuid
from typing import Any

from ..catalog.row_policies import refuse_row_removal
from ..catalog.stream_source import COMPACT
from ..data.garbage import Garbage
from ..errors import Conflict, InvalidArgument
from ..model.data_files import DataFile
from ..model.names import TableName
from ..model.partitions import Partition
from .registry import TABLE, Call, Column, Outcome, Param, procedure

#: the target size of a compacted file (and the size under which a file counts as small)
TARGET_FILE_SIZE = 128 << 20
#: files one partition's rewrite reads at most (the rest wait for the next compaction)
MAX_FILES = 1000
FORMATS = ("parquet", "orc")
_ATTEMPTS = 5


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _path(path: str) -> str:
    if "`" in path:
        raise InvalidArgument(f"cannot compact file {path!r}: its path has a backtick")
    return path


def _type_sql(data_type: Any) -> str:
    return data_type if isinstance(data_type, str) else json.dumps(data_type)


@procedure("compact", "Rewrite the small files of a table's partitions (all, or those `where` selects: a "
                      "predicate on the partition columns) as files of about target_file_size, in one commit "
                      "readers see whole or not at all; the replaced files go to the garbage purge removes",
           [TABLE, Param("where", "STRING", "a predicate on the partition columns (default: every partition)",
                         "NULL"),
            Param("target_file_size", "BIGINT", "bytes of a compacted file; smaller files are compacted",
                  str(TARGET_FILE_SIZE))],
           [Column("table", "STRING"), Column("partitions", "BIGINT", "partitions rewritten"),
            Column("files_removed", "BIGINT", "small files replaced"),
            Column("files_added", "BIGINT", "files written"),
            Column("version", "BIGINT", "the table version made (NULL: nothing to compact)")],
           one_transaction=False)
def compact(call: Call) -> Outcome:
    name = call.table()
    full = ".".join(name)
    target = int(call.args.get("target_file_size") or TARGET_FILE_SIZE)
    if target <= 0:
        raise InvalidArgument(f"target_file_size must be a positive number of bytes, not {target}")
    state = call.state or {}
    info = call.ms.get_table(name)
    if state.get("step") == "rewrite":
        return _commit(call, name, state, call.jvm_result)
    if info.format.lower() not in FORMATS:
        raise InvalidArgument(f"cannot compact {full}: its format is {info.format}; compaction rewrites "
                              f"{' and '.join(FORMATS)} files", table=full)
    tn = TableName.parse(name)
    call.ms.run(lambda tr: refuse_row_removal(tr, call.ms, call.ms.resolver.table(tr, tn), tn, "COMPACT"))
    partitions = _partitions(call, name, info)
    where = call.args.get("where")
    if where is not None and state.get("step") != "where":
        if not info.partition_columns:
            raise InvalidArgument(f"{full} is not partitioned: compact it without `where`", table=full)
        return Outcome.ask_jvm("sql", {"step": "where"}, queries=[_where_query(info, partitions, str(where))])
    if where is not None:
        chosen = {int(r["__i"]) for r in call.jvm_result[0]}
        partitions = [p for i, p in enumerate(partitions) if i in chosen]
    groups = _groups(info, partitions, target)
    if not groups:
        return Outcome(rows=[[full, 0, 0, 0, None]])
    queries: list[str] = []
    for g in groups:
        queries += _rewrite_queries(info, g, target)
    return Outcome.ask_jvm("sql", {"step": "rewrite", "groups": groups}, queries=queries)


def _partitions(call: Call, name: tuple[str, str, str], info: Any) -> list[dict[str, Any]]:
    """Each partition (an unpartitioned table: one) as ``{"spec", "location", "files"}``."""
    if not info.partition_columns:
        files = call.ms.table_data_files(name)
        return [{"spec": {}, "location": info.location,
                 "files": None if files is None else [f.to_json() for f in files]}]
    return [{"spec": p.spec, "location": p.location, "rows": p.rows, "properties": p.properties,
             "files": None if p.data_files is None else [f.to_json() for f in p.data_files]}
            for p in call.ms.list_partitions(name)]


def _where_query(info: Any, partitions: list[dict[str, Any]], where: str) -> str:
    fields = {f["name"]: f["type"] for f in json.loads(info.schema.json())["fields"]}
    cols = list(info.partition_columns)
    if not partitions:
        return "SELECT 0 AS __i WHERE false"
    values = ", ".join("(" + ", ".join([str(i)] + [
        "NULL" if p["spec"].get(c) is None else f"CAST({_literal(p['spec'][c])} AS {_type_sql(fields[c])})"
        for c in cols]) + ")" for i, p in enumerate(partitions))
    names = ", ".join(["__i"] + [_quote(c) for c in cols])
    return f"SELECT __i FROM VALUES {values} AS t({names}) WHERE {where}"


def _groups(info: Any, partitions: list[dict[str, Any]], target: int) -> list[dict[str, Any]]:
    out = []
    for p in partitions:
        if p["files"] is None:
            continue  # files not recorded (added with a LOCATION, imported): nothing the catalog can replace
        small = [f for f in p["files"] if int(f["size"]) < target][:MAX_FILES]
        if len(small) < 2 or not p["location"]:
            continue
        out.append({"spec": p["spec"], "replaced": small,
                    "dir": p["location"].rstrip("/") + f"/compact-{uuid.uuid4().hex[:12]}"})
    return out


def _rewrite_queries(info: Any, group: dict[str, Any], target: int) -> list[str]:
    fmt = info.format.lower()
    data = [f["name"] for f in json.loads(info.schema.json())["fields"] if f["name"] not in info.partition_columns]
    cols = ", ".join(_quote(c) for c in data)
    total = sum(int(f["size"]) for f in group["replaced"])
    n = max(1, math.ceil(total / target))
    union = " UNION ALL ".join(f"SELECT {cols} FROM {fmt}.{_quote(_path(f['path']))}" for f in group["replaced"])
    directory = _path(group["dir"])
    return [f"INSERT OVERWRITE DIRECTORY {_literal(directory)} USING {fmt} SELECT /*+ REPARTITION({n}) */ * "
            f"FROM ({union}) s",
            f"SELECT DISTINCT _metadata.file_path AS path, _metadata.file_size AS size, "
            f"CAST(unix_millis(_metadata.file_modification_time) AS BIGINT) AS mtime FROM {fmt}.{_quote(directory)}"]


def _new_files(rows: list[dict[str, Any]]) -> list[DataFile]:
    return [DataFile(str(r["path"]), int(r["size"]), int(r["mtime"])) for r in rows]


def _commit(call: Call, name: tuple[str, str, str], state: dict[str, Any], results: list[Any]) -> Outcome:
    full = ".".join(name)
    groups = state["groups"]
    written = [_new_files(results[2 * i + 1]) for i in range(len(groups))]
    for attempt in range(_ATTEMPTS):
        info = call.ms.get_table(name)
        garbage, puts, removed, added = Garbage(), [], 0, 0
        current = _partitions(call, name, info)
        by_spec = {json.dumps(p["spec"], sort_keys=True): p for p in current}
        new_files: list[DataFile] = []
        for g, files in zip(groups, written):
            p = by_spec.get(json.dumps(g["spec"], sort_keys=True))
            have = {f["path"] for f in (p or {}).get("files") or []}
            replaced = {f["path"] for f in g["replaced"]}
            if p is None or p["files"] is None or not replaced <= have:
                garbage.directories.append(g["dir"])  # changed meanwhile: its rewrite is let go
                continue
            kept = [DataFile.from_json(f) for f in p["files"] if f["path"] not in replaced]
            garbage.files.extend(DataFile.from_json(f) for f in g["replaced"])
            garbage.directories.append(g["dir"])  # anything written there and not listed (an empty file)
            removed, added = removed + len(replaced), added + len(files)
            new_files = kept + files
            puts.append((p, new_files))
        detail = {"partitions": len(puts), "files_removed": removed, "files_added": added}
        try:
            if not puts:
                version = None
            elif info.partition_columns:
                parts = [_partition(info, p, files) for p, files in puts]
                version = call.ms.replace_partitions(name, [], parts, expected_version=info.version,
                                                     garbage=garbage, operation=COMPACT, detail=detail).version
            else:
                version = call.ms.write_table_files(name, new_files, COMPACT, garbage=garbage,
                                                    expected_version=info.version, detail=detail)
        except Conflict:
            if attempt == _ATTEMPTS - 1:
                raise
            continue
        refresh = [[name[1], name[2]]] if version is not None else []
        let_go = [g["dir"] for g in groups] if version is None else []  # nothing registered: their files go now
        return Outcome(rows=[[full, len(puts), removed, added, version]], refresh=refresh, delete_paths=let_go)
    raise AssertionError("unreachable")


def _partition(info: Any, p: dict[str, Any], files: list[DataFile]) -> Partition:
    return Partition(values=dict(p["spec"]), location=p["location"], files=len(files),
                     bytes=sum(f.size for f in files), rows=p.get("rows"), properties=dict(p.get("properties") or {}),
                     data_files=files)

