"""DELETE, UPDATE and MERGE INTO through Spark (docs/row-level.md): every statement form against a
reference computed with plain DataFrames from the same rows, partitioned or not, per format; the
history names the statement; old versions stay readable; refusals carry Spark's / the catalog's error."""
from __future__ import annotations

import re
from typing import Any

import pytest

TARGET = [(i, f"v{i}", ["x", "y", "z"][i % 3]) for i in range(1, 31)]
SOURCE = [(2, "S2", "y"), (3, "del", "x"), (7, "S7", "y"), (9, "S9", "x"), (101, "N101", "y"), (102, "N102", "w"),
          (55, "N55", "z")]
COLS = "id INT, v STRING, dt STRING"

#: statement (on {t}, source view src) -> the reference: a function of (target df, source df) -> df
STATEMENTS: list[tuple[str, str]] = [
    ("delete_partition", "DELETE FROM {t} WHERE dt = 'z'"),
    ("delete_rows", "DELETE FROM {t} WHERE id % 4 = 0"),
    ("delete_mixed", "DELETE FROM {t} WHERE dt = 'x' AND id > 10"),
    ("delete_null_condition", "DELETE FROM {t} WHERE CASE WHEN id < 5 THEN NULL ELSE id > 25 END"),
    ("update", "UPDATE {t} SET v = upper(v) WHERE id BETWEEN 5 AND 12"),
    ("update_partition_column", "UPDATE {t} SET dt = 'w', v = concat(v, '!') WHERE id IN (1, 2)"),
    ("merge_upsert", "MERGE INTO {t} t USING src s ON t.id = s.id "
                     "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"),
    ("merge_all_clauses", "MERGE INTO {t} t USING src s ON t.id = s.id "
                          "WHEN MATCHED AND s.v = 'del' THEN DELETE "
                          "WHEN MATCHED THEN UPDATE SET * "
                          "WHEN NOT MATCHED AND s.id > 100 THEN INSERT (id, v, dt) VALUES (s.id, s.v, s.dt) "
                          "WHEN NOT MATCHED BY SOURCE AND t.dt = 'x' THEN DELETE"),
    ("merge_by_source_update", "MERGE INTO {t} t USING src s ON t.id = s.id "
                               "WHEN NOT MATCHED BY SOURCE AND t.id > 20 THEN UPDATE SET v = 'orphan'"),
    ("merge_insert_only", "MERGE INTO {t} t USING src s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *"),
]


def reference(spark: Any, name: str) -> set[tuple[Any, ...]]:
    """What the statement must leave, computed with DataFrame operations on the same rows."""
    t = spark.createDataFrame(TARGET, COLS)
    s = spark.createDataFrame(SOURCE, COLS)
    if name.startswith("delete"):
        cond = {"delete_partition": "dt = 'z'", "delete_rows": "id % 4 = 0", "delete_mixed": "dt = 'x' AND id > 10",
                "delete_null_condition": "CASE WHEN id < 5 THEN NULL ELSE id > 25 END"}[name]
        out = t.where(f"NOT coalesce({cond}, false)")
    elif name == "update":
        out = t.selectExpr("id", "CASE WHEN id BETWEEN 5 AND 12 THEN upper(v) ELSE v END", "dt")
    elif name == "update_partition_column":
        out = t.selectExpr("id", "CASE WHEN id IN (1, 2) THEN concat(v, '!') ELSE v END",
                           "CASE WHEN id IN (1, 2) THEN 'w' ELSE dt END")
    else:
        on = t["id"] == s["id"]
        if name == "merge_upsert_partitions":
            on = on & t["dt"].isin("x", "y")
        j = t.alias("t").join(s.alias("s"), on=on, how="full_outer")
        matched, only_s, only_t = "t.id IS NOT NULL AND s.id IS NOT NULL", "t.id IS NULL", "s.id IS NULL"
        keep_t, keep_s = ("t.id", "t.v", "t.dt"), ("s.id", "s.v", "s.dt")
        if name in ("merge_upsert", "merge_upsert_partitions"):
            rules = [(matched, ("t.id", "s.v", "t.dt")), (only_s, keep_s), (only_t, keep_t)]
        elif name == "merge_delete_insert":
            rules = [(matched, None), (only_s, keep_s), (only_t, keep_t)]
        elif name == "merge_all_clauses":
            rules = [(f"{matched} AND s.v = 'del'", None), (matched, keep_s), (f"{only_s} AND s.id > 100", keep_s),
                     (only_s, None), (f"{only_t} AND t.dt = 'x'", None), (only_t, keep_t)]
        elif name == "merge_by_source_update":
            rules = [(f"{only_t} AND t.id > 20", ("t.id", "'orphan'", "t.dt")), (only_s, None), ("true", keep_t)]
        else:  # merge_insert_only
            rules = [(only_s, keep_s), ("true", keep_t)]
        # the first rule that holds decides each row (as MERGE's clauses do): kept with its values, or dropped
        exprs = []
        for i in range(3):
            case = " ".join(f"WHEN {c} THEN {cols[i]}" for (c, cols) in rules if cols is not None)
            exprs.append(f"CASE {case} END AS c{i}")
        guard = " ".join(f"WHEN {c} THEN {'false' if cols is None else 'true'}" for (c, cols) in rules)
        out = j.selectExpr(*exprs, f"CASE {guard} ELSE true END AS keep").where("keep").drop("keep")
    return {tuple(r) for r in out.collect()}


def make(spark: Any, t: str, fmt: str, partitioned: bool) -> None:
    spark.sql(f"CREATE TABLE {t} ({COLS}) USING {fmt}" + (" PARTITIONED BY (dt)" if partitioned else ""))
    spark.createDataFrame(TARGET, COLS).writeTo(t).append()


@pytest.fixture
def src(spark: Any) -> Any:
    spark.createDataFrame(SOURCE, COLS).createOrReplaceTempView("src")
    yield "src"
    spark.catalog.dropTempView("src")


@pytest.mark.parametrize("name,sql", STATEMENTS, ids=[n for n, _ in STATEMENTS])
def test_each_statement_matches_the_dataframe_reference_partitioned(spark: Any, db: str, src: str, name: str,
                                                                     sql: str) -> None:
    t = f"ushas.{db}.t"
    make(spark, t, "parquet", True)
    spark.sql(sql.format(t=t))
    assert {tuple(r) for r in spark.sql(f"SELECT id, v, dt FROM {t}").collect()} == reference(spark, name)
    last = spark.sql(f"SELECT operation FROM {t}.history ORDER BY version DESC LIMIT 1").first().operation
    # an insert-only MERGE is an append (Spark rewrites it into AppendData, no row is replaced)
    assert last == ("APPEND" if name == "merge_insert_only" else name.split("_")[0].upper())
    # the version before the statement still reads every original row
    assert {tuple(r) for r in spark.sql(f"SELECT id, v, dt FROM {t} VERSION AS OF 2").collect()} == set(TARGET)


#: (format, partitioned, statements): the other formats and unpartitioned tables, fewer statements each
FORMATS = [("orc", True, ["delete_rows", "merge_all_clauses"]), ("json", False, ["update", "merge_upsert"]),
           ("csv", True, ["delete_mixed", "update"]), ("parquet", False, ["delete_rows", "merge_all_clauses"]),
           ("orc", False, ["delete_null_condition"])]


@pytest.mark.parametrize("fmt,partitioned,names", FORMATS, ids=[f"{f}-{'part' if p else 'flat'}" for f, p, _ in FORMATS])
def test_formats_and_unpartitioned_tables(spark: Any, db: str, src: str, fmt: str, partitioned: bool,
                                          names: list[str]) -> None:
    sqls = dict(STATEMENTS)
    for name in names:
        t = f"ushas.{db}.t_{name}"
        make(spark, t, fmt, partitioned)
        spark.sql(sqls[name].format(t=t))
        assert {tuple(r) for r in spark.sql(f"SELECT id, v, dt FROM {t}").collect()} == reference(spark, name), name


def partition_files(spark: Any, t: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in spark.sql(f"SELECT dt, path FROM {t}.files").collect():
        out.setdefault(r.dt, set()).add(r.path)
    return out


def test_only_the_partitions_the_condition_selects_are_rewritten_and_whole_partitions_are_dropped(
        spark: Any, db: str) -> None:
    t = f"ushas.{db}.t"
    make(spark, t, "parquet", True)
    before = partition_files(spark, t)
    spark.sql(f"DELETE FROM {t} WHERE dt = 'x' AND id > 10")
    after = partition_files(spark, t)
    assert after["y"] == before["y"] and after["z"] == before["z"] and after["x"] != before["x"]
    spark.sql(f"DELETE FROM {t} WHERE dt IN ('y', 'z')")  # metadata-only: no file read or written
    detail = spark.sql(f"SELECT detail FROM {t}.history ORDER BY version DESC LIMIT 1").first().detail
    assert '"metadata_only":true' in detail and set(partition_files(spark, t)) == {"x"}
    spark.sql(f"DELETE FROM {t}")
    assert spark.sql(f"SELECT count(*) AS n FROM {t}").first().n == 0
    # the replaced files are purge's: every older version still reads
    assert spark.sql(f"SELECT count(*) AS n FROM {t} VERSION AS OF 2").first().n == len(TARGET)


def test_only_the_files_holding_matching_rows_are_rewritten(spark: Any, db: str, src: str) -> None:
    """Three appends of ten rows each: every partition has three files, each holding rows of one append.
    A statement that touches rows of one append rewrites that append's file of the partitions involved,
    and keeps every other file (Spark's runtime group filter over the scan's file column)."""
    for partitioned in (True, False):
        t = f"ushas.{db}.files_{'part' if partitioned else 'flat'}"
        spark.sql(f"CREATE TABLE {t} ({COLS}) USING parquet" + (" PARTITIONED BY (dt)" if partitioned else ""))
        for k in range(3):
            spark.createDataFrame(TARGET[10 * k:10 * k + 10], COLS).coalesce(1).writeTo(t).append()

        def files() -> set[str]:
            return {r.path for r in spark.sql(f"SELECT path FROM {t}.files").collect()}

        # id 3 (dt x, first append), id 14 (dt z, second), id 7 (dt y, first): the file of each, read once
        # (no statement below rewrites the file of an id a later statement changes); its directory and name
        # (files of one append have one name in every partition)
        file_of = {r.id: "/".join(r.p.rsplit("/", 2)[-2:]) for r in spark.sql(
            f"SELECT id, _metadata.file_path AS p FROM {t} WHERE id IN (3, 14, 7)").collect()}
        statements = [(f"DELETE FROM {t} WHERE id = 3", 3),
                      (f"UPDATE {t} SET v = 'u' WHERE id = 14", 14),
                      (f"MERGE INTO {t} t USING (SELECT * FROM src WHERE id = 7) s ON t.id = s.id "
                       f"WHEN MATCHED THEN UPDATE SET v = s.v", 7)]
        before = files()
        for sql, i in statements if partitioned else statements[:1]:  # unpartitioned: the same code, once
            touched = {p for p in before if p.endswith(file_of[i])}
            spark.sql(sql)
            after = files()
            assert len(touched) == 1 and before - after == touched, sql
            assert len(after - before) <= 1, sql  # the rewritten file (none if nothing of it is left)
            before = after
        rows = {tuple(r) for r in spark.sql(f"SELECT id, v, dt FROM {t}").collect()}
        expected = {(i, "u" if i == 14 and partitioned else "S7" if i == 7 and partitioned else v, dt)
                    for i, v, dt in TARGET if i != 3}
        assert rows == expected, partitioned
        if partitioned:  # the files a statement rewrites are packed into tasks as a file scan's splits: the
            # small files of a partition are read by one task (one split: minPartitionNum 1), which writes
            # one file for them
            xs = {p for p in files() if "/dt=x/" in p}
            spark.conf.set("spark.sql.files.minPartitionNum", "1")
            try:
                spark.sql(f"UPDATE {t} SET v = concat(v, '!') WHERE id % 3 = 0")
            finally:
                spark.conf.unset("spark.sql.files.minPartitionNum")
            after_x = {p for p in files() if "/dt=x/" in p}
            assert len(xs) >= 2 and len(after_x) == 1 and not xs & after_x, (xs, after_x)
            assert spark.sql(f"SELECT count(*) FROM {t} WHERE dt = 'x' AND v LIKE '%!'").first()[0] == 9
            # each task's rows come in partition order: the write's sort by dt is dropped, unless the statement
            # sets dt (then Spark sorts again)
            plans = {sql: spark.sql(f"EXPLAIN {sql}").first()[0] for sql in (
                f"DELETE FROM {t} WHERE id = 5", f"UPDATE {t} SET v = 'w' WHERE id = 5",
                f"UPDATE {t} SET dt = 'w' WHERE id = 5")}
            assert [("Sort [dt" in plan) for plan in plans.values()] == [False, False, True], plans
            # the file column is a BIGINT id of the file, not its path: it travels with every row the
            # statement reads, through a MERGE's join shuffle (the L suffix: a BIGINT attribute)
            merge = spark.sql(f"EXPLAIN MERGE INTO {t} t USING src s ON t.id = s.id "
                              f"WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *").first()[0]
            assert re.search(r"Exchange hashpartitioning.*__ushas_file#\d+L", merge, re.S), merge


def test_a_row_level_statement_on_a_missing_table_or_column_gets_sparks_error(spark: Any, db: str) -> None:
    t = f"ushas.{db}.t"
    make(spark, t, "parquet", True)
    cases = [(f"DELETE FROM ushas.{db}.missing WHERE id = 1", "TABLE_OR_VIEW_NOT_FOUND"),
             (f"UPDATE {t} SET nope = 1", "UNRESOLVED_COLUMN.WITH_SUGGESTION"),
             (f"DELETE FROM {t} WHERE nope = 1", "UNRESOLVED_COLUMN.WITH_SUGGESTION")]
    for sql, expected in cases:
        with pytest.raises(Exception) as caught:
            spark.sql(sql).collect()
        assert str(getattr(caught.value, "getCondition", lambda: "")()) == expected, sql
    assert spark.sql(f"SELECT count(*) AS n FROM {t}").first().n == len(TARGET)



def test_a_merge_refuses_rows_appended_since_its_scan_unless_isolation_is_snapshot(
        spark: Any, db: str, src: str, ms: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """Another writer appends id 101 to partition dt=y while a MERGE that inserts id 101 there commits
    (injected deterministically at the MERGE's commit, through the metastore API): serializable (the
    default) refuses the MERGE naming the partition, so no key is duplicated; rerun, it updates the row;
    an append to another partition the MERGE read (dt=x: it reads every partition) is refused as well;
    under ``ushas.row-level.isolation=snapshot`` the MERGE commits without seeing the appended row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ushas_catalog.model.data_files import DataFile, merge
    from ushas_catalog.model.partitions import Partition
    from ushas_catalog.spark import ops

    t = f"ushas.{db}.iso"
    make(spark, t, "parquet", True)
    pending: list[tuple[str, int, str]] = []  # (partition, id, value) another writer appends meanwhile
    real = ops.plan_file_replacement

    def append_meanwhile(*args: Any, **kwargs: Any) -> Any:
        while pending:  # another writer's append, committed after the MERGE's scan
            dt, i, v = pending.pop()
            p = next(p for p in ms.list_partitions(t) if p.values["dt"] == dt)
            path = tmp_path / f"other-{v}.parquet"
            pq.write_table(pa.table({"id": pa.array([i], pa.int32()), "v": [v]}), path)
            new = DataFile(f"file:{path}", path.stat().st_size, int(path.stat().st_mtime * 1000))
            files = merge(p.data_files or [], [new])
            ms.replace_partitions(t, [], [Partition(values=dict(p.values), location=p.location, files=len(files),
                                                    properties=dict(p.properties), data_files=files)],
                                  operation="APPEND")
        return real(*args, **kwargs)

    monkeypatch.setattr(ops, "plan_file_replacement", append_meanwhile)
    merge_sql = (f"MERGE INTO {t} t USING (SELECT * FROM src WHERE id = 101) s ON t.id = s.id "
                 f"WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")

    def ids_101() -> list[str]:
        spark.sql(f"REFRESH TABLE {t}")
        return sorted(r.v for r in spark.sql(f"SELECT v FROM {t} WHERE id = 101").collect())

    pending.append(("y", 101, "other"))
    with pytest.raises(Exception, match=r"USHAS_WriteConflict.*partition dt=y had 1 file\(s\) added"):
        spark.sql(merge_sql)
    assert ids_101() == ["other"]  # the append only: the MERGE committed nothing
    assert spark.table(t).count() == len(TARGET) + 1
    spark.sql(merge_sql)  # rerun, it sees the appended row: updated, not duplicated
    assert ids_101() == ["N101"]
    pending.append(("x", 999, "other"))  # a partition the MERGE read (its condition selects no partition)
    with pytest.raises(Exception, match=r"USHAS_WriteConflict.*partition dt=x had 1 file\(s\) added"):
        spark.sql(merge_sql.replace("= s.v", "= 'again'"))
    assert ids_101() == ["N101"]

    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('ushas.row-level.isolation' = 'bogus')")
    with pytest.raises(Exception, match=r"ushas.row-level.isolation='bogus' is not one of serializable, snapshot"):
        spark.sql(merge_sql)
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('ushas.row-level.isolation' = 'snapshot')")
    pending.append(("y", 101, "other2"))
    spark.sql(merge_sql)  # snapshot: commits; the row appended meanwhile was not seen by it
    assert ids_101() == ["N101", "other2"]


def test_a_merge_whose_source_hits_every_file_skips_the_group_filter(spark: Any, db: str, src: str) -> None:
    """A MERGE whose source has at least 4 rows per file of the (small) group it reads runs no runtime group
    filter: its job would select every file (MergeGroupFilter). A small source keeps it, as UPDATE / DELETE
    do; the table property ``ushas.row-level.group-filter`` forces it (``always``) or drops it (``never``);
    the result is the same either way; another value is refused naming the property."""
    t = f"ushas.{db}.gf"
    make(spark, t, "parquet", True)
    spark.range(1, 101).selectExpr("CAST(id AS INT) AS id", "concat('B', id) AS v",
                                   "element_at(array('x', 'y', 'z'), CAST(id % 3 + 1 AS INT)) AS dt") \
        .createOrReplaceTempView("big")  # a source whose size Spark knows (a local list's it does not)
    upsert = f"MERGE INTO {t} t USING {{s}} s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v " \
             f"WHEN NOT MATCHED THEN INSERT *"

    def filtered(sql: str) -> bool:  # whether the statement's scan gets Spark's runtime group filter
        return "dynamicpruning" in spark.sql(f"EXPLAIN {sql}").first()[0].lower()

    try:
        assert len({r.path for r in spark.sql(f"SELECT path FROM {t}.files").collect()}) * 4 <= 100
        assert not filtered(upsert.format(s="big"))
        assert filtered(upsert.format(s="src"))  # 7 rows: fewer than 4 per file
        assert filtered(f"DELETE FROM {t} WHERE id = 3")
        spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('ushas.row-level.group-filter' = 'always')")
        assert filtered(upsert.format(s="big"))
        spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('ushas.row-level.group-filter' = 'never')")
        assert not filtered(f"DELETE FROM {t} WHERE id = 3")
        spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('ushas.row-level.group-filter' = 'auto')")
        spark.sql(upsert.format(s="big"))
        assert {tuple(r) for r in spark.sql(f"SELECT id, v, dt FROM {t}").collect()} == \
            {(i, f"B{i}", ["x", "y", "z"][i % 3]) for i in range(1, 101)}
        spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('ushas.row-level.group-filter' = 'sometimes')")
        with pytest.raises(Exception, match="ushas.row-level.group-filter is 'sometimes'; it takes auto"):
            spark.sql(upsert.format(s="big"))
        assert spark.sql(f"SELECT count(*) AS n FROM {t}").first().n == 100
    finally:
        spark.catalog.dropTempView("big")


#: MERGEs with a source Spark can size (a VALUES view): the catalog's rule broadcasts it (MergeBroadcastJoin),
#: the two forms it does not rewrite (no NOT MATCHED clause: Spark's join is already a left outer one; insert
#: only: an append) checked for their results too
BROADCAST_MERGES = [(n, q) for n, q in STATEMENTS if n.startswith("merge")] + [
    ("merge_delete_insert", "MERGE INTO {t} t USING src s ON t.id = s.id "
                            "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *"),
    ("merge_upsert_partitions", "MERGE INTO {t} t USING src s ON t.id = s.id AND t.dt IN ('x', 'y') "
                                "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"),
]


def values_view(spark: Any, name: str, rows: list[tuple[int, str, str]]) -> None:
    """A temporary view of ``rows`` whose size Spark knows (a local relation; a local list's it does not)."""
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name} AS SELECT * FROM VALUES "
              + ", ".join(f"({i}, '{v}', '{dt}')" for i, v, dt in rows) + " AS s(id, v, dt)")


def target_shuffled(plan: str) -> bool:
    """Whether the physical plan shuffles the MERGE's target rows (an exchange right above the projection
    that adds ``__row_from_target``)."""
    lines = plan.splitlines()
    return any("Exchange" in line and "__row_from_target" in nxt for line, nxt in zip(lines, lines[1:]))


def subtree(plan: str, node: str) -> list[str]:
    """The lines of the physical plan's first node whose line contains ``node``, and of the nodes under it."""
    lines = plan.splitlines()
    at = next(i for i, line in enumerate(lines) if node in line)

    def column(line: str) -> int:
        return len(line) - len(re.sub(r"^[\s:|+-]*", "", line))

    out = [lines[at]]
    for line in lines[at + 1:]:
        if not line.strip() or column(line) <= column(lines[at]):
            break
        out.append(line)
    return out


@pytest.fixture
def sized_src(spark: Any) -> Any:
    values_view(spark, "src", SOURCE)
    yield "src"
    spark.catalog.dropTempView("src")


@pytest.mark.parametrize("name,sql", BROADCAST_MERGES, ids=[n for n, _ in BROADCAST_MERGES])
def test_a_merge_with_a_small_source_broadcasts_it_and_matches_the_reference(
        spark: Any, db: str, sized_src: str, name: str, sql: str) -> None:
    """A MERGE with a WHEN NOT MATCHED clause is Spark's full outer join of the target with the source (both
    shuffled); with a source small enough to broadcast the catalog's rule makes it one pass over the target
    (``MergeProbe``: no join, no exchange, no ``MergeRows``; the unmatched source rows written after it), or, with
    ``spark.ushas.merge.unmatchedSource=scan``, a left outer join with the source broadcast plus the source rows no
    target row matches: no full outer join, the target not shuffled, the same rows as the DataFrame reference
    either way. ``spark.ushas.merge.broadcastSource=false`` keeps Spark's plan."""
    t = f"ushas.{db}.t"
    make(spark, t, "parquet", True)
    statement = sql.format(t=t)
    plan = spark.sql(f"EXPLAIN {statement}").first()[0]
    # with a NOT MATCHED clause and another one (insert only is an append)
    rewritten = name not in ("merge_by_source_update", "merge_insert_only")
    assert "FullOuter" not in plan and not target_shuffled(plan), plan
    if rewritten:
        # one pass over the target's rows (MergeProbe): no join (the group filter's subquery aside), no exchange,
        # no MergeRows
        assert "MergeProbe" in plan and "LeftOuter" not in plan and "MergeRowsExec" not in plan, plan
        lines = plan.splitlines()  # nor the source shuffled or broadcast: the node collects it
        assert not any("Exchange" in a and "__row_from_source" in b for a, b in zip(lines, lines[1:])), plan
        spark.conf.set("spark.ushas.merge.unmatchedSource", "scan")
        try:  # the unmatched source rows by one scan of the target's keys (MergeUnmatchedSource): no exchange
            scan = spark.sql(f"EXPLAIN {statement}").first()[0]
        finally:
            spark.conf.unset("spark.ushas.merge.unmatchedSource")
        assert re.search(r"BroadcastHashJoin .*LeftOuter, BuildRight", scan) and "LeftAnti" not in scan, scan
        assert not [line for line in subtree(scan, "MergeUnmatchedSource") if "Exchange" in line], scan
        spark.conf.set("spark.ushas.merge.broadcastSource", "false")
        try:
            spark_plan = spark.sql(f"EXPLAIN {statement}").first()[0]
        finally:
            spark.conf.unset("spark.ushas.merge.broadcastSource")
        assert "FullOuter" in spark_plan and target_shuffled(spark_plan), spark_plan
    spark.sql(statement)
    assert {tuple(r) for r in spark.sql(f"SELECT id, v, dt FROM {t}").collect()} == reference(spark, name)


def test_a_broadcast_merge_keeps_the_cardinality_check_and_spark_keeps_its_plan_otherwise(
        spark: Any, db: str, sized_src: str) -> None:
    """Two source rows matching one target row still fail with MERGE_CARDINALITY_VIOLATION (the target is
    streamed, never replicated) and nothing is written; a source over the rule's limit (Spark's threshold bounds
    it; ``spark.ushas.merge.broadcastSource.maxBytes``, a size, sets it; not a size: refused naming it), one
    Spark cannot size (a local list's rows), one calling a Python UDF and a condition without an equality keep
    Spark's full outer join (the result is right either way); a non-deterministic source is Spark's refusal, as without the rule."""
    t = f"ushas.{db}.t"
    make(spark, t, "parquet", True)
    upsert = f"MERGE INTO {t} t USING {{s}} s ON {{on}} WHEN MATCHED THEN UPDATE SET v = s.v " \
             f"WHEN NOT MATCHED THEN INSERT *"
    values_view(spark, "dup", [(2, "A", "y"), (2, "B", "y"), (500, "N", "x")])
    spark.createDataFrame(SOURCE, COLS).createOrReplaceTempView("unsized")
    spark.udf.register("rl_py_id", lambda i: i, "int")  # a source calling Python: dear to read three times
    try:
        dup = upsert.format(s="dup", on="t.id = s.id")
        assert "FullOuter" not in spark.sql(f"EXPLAIN {dup}").first()[0]
        with pytest.raises(Exception, match="MERGE_CARDINALITY_VIOLATION"):
            spark.sql(dup)
        assert {tuple(r) for r in spark.sql(f"SELECT id, v, dt FROM {t}").collect()} == set(TARGET)
        src = upsert.format(s="src", on="t.id = s.id")
        kept: list[tuple[str, dict[str, str]]] = [
            (upsert.format(s="unsized", on="t.id = s.id"), {}),
            (src, {"spark.sql.autoBroadcastJoinThreshold": "1"}),  # Spark's threshold bounds the rule's
            (src, {"spark.ushas.merge.broadcastSource.maxBytes": "100"}),  # the rule's own limit (bytes)
            (upsert.format(s="(SELECT rl_py_id(id) AS id, v, dt FROM src)", on="t.id = s.id"),
             {"spark.ushas.merge.unmatchedSource": "scan"}),  # the union's forms read the source three times
            (upsert.format(s="src", on="t.id < s.id - 100"), {})]
        for sql, conf in kept:
            for k, v in conf.items():
                spark.conf.set(k, v)
            try:
                plan = spark.sql(f"EXPLAIN {sql}").first()[0]
            finally:
                for k in conf:
                    spark.conf.unset(k)
            assert "FullOuter" in plan, (sql, conf, plan)
        python = upsert.format(s="(SELECT rl_py_id(id) AS id, v, dt FROM src)", on="t.id = s.id")
        assert "MergeProbe" in spark.sql(f"EXPLAIN {python}").first()[0]  # the probe reads the source once
        spark.conf.set("spark.ushas.merge.broadcastSource.maxBytes", "10k")
        try:
            assert "FullOuter" not in spark.sql(f"EXPLAIN {src}").first()[0]
            spark.conf.set("spark.ushas.merge.broadcastSource.maxBytes", "lots")
            with pytest.raises(Exception, match="spark.ushas.merge.broadcastSource.maxBytes: expected a size in bytes"):
                spark.sql(src)
        finally:
            spark.conf.unset("spark.ushas.merge.broadcastSource.maxBytes")
        with pytest.raises(Exception, match="INVALID_NON_DETERMINISTIC_EXPRESSIONS"):  # Spark's refusal, as without
            spark.sql(upsert.format(s="(SELECT * FROM src WHERE rand() < 2)", on="t.id = s.id"))  # the rule
        spark.sql(kept[0][0])  # the unsized source's statement, through Spark's plan
        assert {tuple(r) for r in spark.sql(f"SELECT id, v, dt FROM {t}").collect()} == \
            reference(spark, "merge_upsert")
    finally:
        spark.catalog.dropTempView("dup")
        spark.catalog.dropTempView("unsized")


#: target rows with a repeated key and NULL keys, and the source (a NULL key, a key the target repeats, a key
#: in another partition of the target's, a new key) for the MERGEs whose unmatched source rows come from the
#: distinct keys of the target (MergeBroadcastJoin.unmatchedByKeys)
KEYED_TARGET = [(1, "a", "x"), (1, "b", "x"), (None, "n", "x"), (2, "c", "y"), (3, "d", "y"), (None, "m", "y"),
                (5, "e", "z")]
KEYED_SOURCE = [(1, "S1", "x"), (None, "SN", "x"), (3, "S3", "z"), (4, "S4", "y"), (5, "S5", "z")]
#: (ON condition, whether the rule takes it apart into keys, whether those keys compare as their bytes):
#: equalities between the two sides, plain or null-safe, over expressions too, with conjuncts on the target alone
#: and on the source alone; a conjunct comparing the two otherwise keeps the form with the anti join against the
#: semi join's rows; a floating point key (-0.0 = 0.0) keeps the joins' form of the keys
KEYED_CONDITIONS = [
    ("t.id = s.id", True, True),
    ("t.id <=> s.id", True, True),  # a NULL key matches a NULL key
    ("t.id = s.id AND t.dt IN ('x', 'y')", True, True),  # 5 is in z: the source's 5 is inserted, the target's kept
    ("s.id = t.id AND s.v <> 'S1'", True, True),  # the source's 1 matches nothing: inserted next to the target's 1s
    ("t.id + 1 = s.id + 1 AND t.dt = s.dt", True, True),  # two keys, one an expression: 3 (y against z) unmatched
    ("t.id = s.id AND t.v < s.v", False, False),
    ("CAST(t.id AS DOUBLE) = CAST(s.id AS DOUBLE)", True, False),
]


def keyed_reference(spark: Any, on: str) -> set[tuple[Any, ...]]:
    """The upsert with ``WHEN NOT MATCHED BY SOURCE AND t.dt = 'y' THEN DELETE``, computed with a full outer
    join of DataFrames on ``on``."""
    spark.createDataFrame(KEYED_TARGET, COLS).selectExpr("*", "true AS in_t").createOrReplaceTempView("ref_t")
    spark.createDataFrame(KEYED_SOURCE, COLS).selectExpr("*", "true AS in_s").createOrReplaceTempView("ref_s")
    try:
        rows = spark.sql(f"SELECT CASE WHEN t.in_t AND s.in_s THEN struct(t.id, s.v, t.dt) "
                         f"WHEN s.in_s THEN struct(s.id, s.v, s.dt) "
                         f"WHEN t.dt = 'y' THEN NULL ELSE struct(t.id, t.v, t.dt) END AS r "
                         f"FROM ref_t t FULL OUTER JOIN ref_s s ON {on}").collect()
    finally:
        spark.catalog.dropTempView("ref_t")
        spark.catalog.dropTempView("ref_s")
    return {tuple(r.r) for r in rows if r.r is not None}


@pytest.mark.parametrize("form", ["probe", "scan", "join"])
def test_a_broadcast_merge_finds_unmatched_source_rows_by_the_targets_keys(spark: Any, db: str, form: str) -> None:
    """A broadcast MERGE whose ON condition is equalities between target and source plus conjuncts on either
    side alone finds the source rows no target row matches from the target's keys. ``scan`` (the default of
    ``spark.ushas.merge.unmatchedSource``): one scan of the target's key columns marks the source keys it meets
    (``MergeUnmatchedSource``: no join, no exchange under it) when the keys compare as their bytes, else the
    joins' form; ``join``: an anti join against the distinct keys of the target rows the source matches,
    broadcast (at most the source's keys: bounded as the source is), the keys aggregated before their broadcast.
    Either way no shuffle of the target's rows and the same rows as a DataFrame reference for repeated target
    keys, NULL keys (plain and null-safe equality), conjuncts on one side, expressions, two keys, a floating
    point key; a condition comparing the sides otherwise keeps the anti join against the rows of the semi join
    (shuffled). Two source rows with one key matching one target row still fail with
    MERGE_CARDINALITY_VIOLATION, writing nothing."""
    values = "VALUES " + ", ".join("(" + ", ".join("NULL" if x is None else repr(x) for x in r) + ")"
                                   for r in KEYED_SOURCE)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW ksrc AS SELECT CAST(id AS INT) AS id, v, dt "
              f"FROM {values} AS s(id, v, dt)")
    t = f"ushas.{db}.k"
    spark.sql(f"CREATE TABLE {t} ({COLS}) USING parquet PARTITIONED BY (dt)")
    spark.createDataFrame(KEYED_TARGET, COLS).writeTo(t).append()
    filled = spark.sql(f"SELECT max(version) FROM {t}.history").first()[0]
    spark.conf.set("spark.ushas.merge.unmatchedSource", form)
    try:
        for on, keyed, by_bytes in KEYED_CONDITIONS:
            spark.sql(f"CALL ushas.system.restore_table(table => '{db}.k', version => {filled})")
            sql = (f"MERGE INTO {t} t USING ksrc s ON {on} WHEN MATCHED THEN UPDATE SET v = s.v "
                   f"WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE AND t.dt = 'y' THEN DELETE")
            plan = spark.sql(f"EXPLAIN {sql}").first()[0]
            assert "FullOuter" not in plan and not target_shuffled(plan), (on, plan)
            probed = "MergeProbe" in plan
            assert probed == (form == "probe" and by_bytes), (on, plan)
            if probed:  # one pass: no join at all, the cardinality checked by the node, no row id
                assert "Join" not in plan and "checking cardinality" in plan and "__row_id" not in plan, (on, plan)
            scanned = "MergeUnmatchedSource" in plan
            assert scanned == (form == "scan" and by_bytes), (on, plan)
            if scanned:  # the node checks the cardinality: MergeRows needs no row id
                assert "LeftAnti" not in plan and "LeftSemi" not in plan, (on, plan)
                assert "checking cardinality" in plan and "__row_id" not in plan, (on, plan)
                assert not [line for line in subtree(plan, "MergeUnmatchedSource") if "Exchange" in line], (on, plan)
            # the keys' broadcast: over their aggregate, built for the anti join of the source rows
            by_keys = re.search(r"BroadcastHashJoin .*__ushas_merge_key_0.*LeftAnti, BuildRight", plan) is not None
            assert by_keys == (keyed and not scanned and not probed), (on, plan)
            if by_keys:
                below = plan[plan.index("LeftAnti, BuildRight"):]
                assert re.search(r"BroadcastExchange .*\n\s*\+- HashAggregate\(keys=\[__ushas_merge_key_0", below), \
                    (on, plan)
            spark.sql(sql)
            assert {tuple(r) for r in spark.sql(f"SELECT id, v, dt FROM {t}").collect()} == \
                keyed_reference(spark, on), on
        spark.sql(f"CALL ushas.system.restore_table(table => '{db}.k', version => {filled})")
        before = {tuple(r) for r in spark.sql(f"SELECT id, v, dt FROM {t}").collect()}
        assert (3, "d", "y") in before  # matched by both source rows of key 3 below
        dup = (f"MERGE INTO {t} t USING (SELECT * FROM ksrc UNION ALL SELECT 3, 'again', 'y') s ON t.id = s.id "
               f"AND s.dt <> 'q' WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")
        assert ("MergeProbe" if form == "probe" else "__ushas_merge_key_0") in spark.sql(f"EXPLAIN {dup}").first()[0]
        with pytest.raises(Exception, match="MERGE_CARDINALITY_VIOLATION"):
            spark.sql(dup)
        assert {tuple(r) for r in spark.sql(f"SELECT id, v, dt FROM {t}").collect()} == before
    finally:
        spark.conf.unset("spark.ushas.merge.unmatchedSource")
        spark.catalog.dropTempView("ksrc")


def test_the_unmatched_source_form_is_a_setting_under_the_rules_limit_and_a_bad_form_is_refused(
        spark: Any, db: str, sized_src: str) -> None:
    """A source of 2.6 MB by Spark's estimate (100,000 rows of a range: no row is computed for EXPLAIN) is under
    the probe's default limit (Spark's threshold: it reads and broadcasts the source once, as Spark's broadcast
    join) and over the union's forms' (a tenth of it): ``MergeProbe`` by default, Spark's plan with ``scan``. With
    the limit raised the union's forms take it: its unmatched rows found by the ``scan`` form, by the ``join`` form
    when the session asks for it, or when the key is one neither the probe nor ``scan`` can compare as bytes (a
    DOUBLE). Another value of ``spark.ushas.merge.unmatchedSource`` is refused naming the setting, before
    anything is written."""
    t = f"ushas.{db}.t"
    make(spark, t, "parquet", True)
    big = "(SELECT CAST(id AS INT) AS id, 'x' AS v, 'y' AS dt FROM range(100000))"
    merge = (f"MERGE INTO {t} t USING {{s}} s ON {{on}} WHEN MATCHED THEN UPDATE SET v = s.v "
             f"WHEN NOT MATCHED THEN INSERT *")
    raised = {"spark.ushas.merge.broadcastSource.maxBytes": "10m"}
    scan = {"spark.ushas.merge.unmatchedSource": "scan"}
    cases = [("t.id = s.id", {}, "probe"), ("t.id = s.id", scan, "spark"), ("t.id = s.id", {**raised, **scan}, "scan"),
             ("CAST(t.id AS DOUBLE) = CAST(s.id AS DOUBLE)", {}, "spark"),
             ("t.id = s.id", {**raised, "spark.ushas.merge.unmatchedSource": "join"}, "join"),
             ("CAST(t.id AS DOUBLE) = CAST(s.id AS DOUBLE)", raised, "join")]
    for on, conf, form in cases:
        for k, v in conf.items():
            spark.conf.set(k, v)
        try:
            plan = spark.sql(f"EXPLAIN {merge.format(s=big, on=on)}").first()[0]
        finally:
            for k in conf:
                spark.conf.unset(k)
        assert ("FullOuter" in plan) == (form == "spark"), (on, conf, plan)
        assert ("MergeUnmatchedSource" in plan) == (form == "scan"), (on, conf, plan)
        assert ("MergeProbe" in plan) == (form == "probe"), (on, conf, plan)
        assert (re.search(r"BroadcastHashJoin .*__ushas_merge_key_0.*LeftAnti", plan) is not None) == (form == "join"), \
            (on, conf, plan)
    spark.conf.set("spark.ushas.merge.unmatchedSource", "hash")
    try:
        with pytest.raises(Exception, match="spark.ushas.merge.unmatchedSource: expected probe, scan or join, got 'hash'"):
            spark.sql(merge.format(s=sized_src, on="t.id = s.id"))
    finally:
        spark.conf.unset("spark.ushas.merge.unmatchedSource")
    assert {tuple(r) for r in spark.sql(f"SELECT id, v, dt FROM {t}").collect()} == set(TARGET)
