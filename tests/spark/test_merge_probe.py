"""A MERGE with a small source planned as one pass over the target (``MergeProbe``, docs/row-level.md): the
files no source key can be in are neither read nor replaced, the unmatched source rows are written after the
target's tasks in the same commit, and the results equal a DataFrame reference."""
from __future__ import annotations

import uuid
from typing import Any

import pytest

COLS = "id INT, v STRING, dt STRING"


def files(spark: Any, t: str) -> dict[str, set[str]]:
    """The table's data files by partition directory (``dt=a``, ``dt=b``)."""
    out: dict[str, set[str]] = {}
    for r in spark.sql(f"SELECT path FROM {t}.files").collect():
        out.setdefault(r.path.rsplit("/", 2)[-2], set()).add(r.path)
    return out


def rows(spark: Any, t: str) -> set[tuple[Any, ...]]:
    return {tuple(r) for r in spark.sql(f"SELECT id, v, dt FROM {t}").collect()}


@pytest.fixture
def banded(spark: Any, db: str) -> Any:
    """A table of 3 appends into partition 'a' (ids 1-10, 11-20, 21-30: a file each, bounds apart) and one into
    'b' (ids 31-40), plus NULL ids in the third append's file."""
    t = f"ushas.{db}.banded"
    spark.sql(f"CREATE TABLE {t} ({COLS}) USING parquet PARTITIONED BY (dt)")
    for lo in (1, 11, 21):
        extra = [(None, f"null{lo}", "a")] if lo == 21 else []
        spark.createDataFrame([(i, f"v{i}", "a") for i in range(lo, lo + 10)] + extra, COLS).writeTo(t).append()
    spark.createDataFrame([(i, f"v{i}", "b") for i in range(31, 41)], COLS).writeTo(t).append()
    # no runtime group filter: the footers alone tell which files a key can be in
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('ushas.row-level.group-filter' = 'never')")
    yield t


def reference(before: set[tuple[Any, ...]], source: list[tuple[Any, ...]], null_safe: bool = False,
              by_source_delete: bool = False) -> set[tuple[Any, ...]]:
    """``MERGE … ON t.id = s.id (or <=>) WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *
    [WHEN NOT MATCHED BY SOURCE AND t.dt = 'b' THEN DELETE]`` on plain Python rows."""
    def same(a: Any, b: Any) -> bool:
        return a == b if not null_safe else (a is None and b is None) or (a is not None and a == b)

    out = set()
    for r in before:
        m = [s for s in source if (r[0] is not None or null_safe) and same(r[0], s[0])]
        if m:
            out.add((r[0], m[0][1], r[2]))
        elif not (by_source_delete and r[2] == "b"):
            out.add(r)
    for s in source:
        if not any((s[0] is not None or null_safe) and same(r[0], s[0]) for r in before):
            out.add(s)
    return out


@pytest.mark.parametrize("skipping", [True, False])
def test_a_merge_rewrites_only_the_files_a_source_key_can_be_in(spark: Any, banded: str, skipping: bool) -> None:
    """The source's keys (12, 15 and new 100) fall in the bounds of the second file of 'a' only: the MERGE
    replaces that file, keeps the other files of 'a' and 'b' as they are (the same paths), writes the new row in
    the same commit (one version, one MERGE in history) and leaves the reference's rows. With
    ``spark.ushas.merge.skipFilesByFooters=false`` every file of the group is replaced, the rows the same."""
    t = banded
    if not skipping:
        spark.conf.set("spark.ushas.merge.skipFilesByFooters", "false")
    source = [(12, "S12", "a"), (15, "S15", "a"), (100, "N100", "b")]
    spark.createDataFrame(source, COLS).createOrReplaceTempView("probe_src")
    before, kept = rows(spark, t), files(spark, t)
    version = spark.sql(f"SELECT max(version) FROM {t}.history").first()[0]
    sql = (f"MERGE INTO {t} t USING probe_src s ON t.id = s.id "
           f"WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")
    spark.sql("CACHE TABLE probe_cached AS SELECT * FROM probe_src")  # sized: the rule takes it
    try:
        sql = sql.replace("probe_src", "probe_cached")
        assert "MergeProbe" in spark.sql(f"EXPLAIN {sql}").first()[0]
        tasks = merge_tasks(spark, sql)
    finally:
        spark.sql("UNCACHE TABLE IF EXISTS probe_cached")
        spark.catalog.dropTempView("probe_cached")
        spark.catalog.dropTempView("probe_src")
        spark.conf.unset("spark.ushas.merge.skipFilesByFooters")
    assert rows(spark, t) == reference(before, source)
    after = files(spark, t)
    assert len(kept["dt=a"]) == 3 and len(kept["dt=a"] & after["dt=a"]) == (2 if skipping else 0), (kept, after)
    assert (kept["dt=b"] <= after["dt=b"]) == skipping and len(after["dt=b"]) == len(kept["dt=b"]) + 1, (kept, after)
    history = spark.sql(f"SELECT version, operation FROM {t}.history WHERE version > {version}").collect()
    assert [r.operation for r in history] == ["MERGE"], history
    # the group's four files make a task each, planned before the source is known: with the footers, the tasks of
    # the three files left alone are not run; the write's job is the rewritten file's task and the new row's
    assert tasks[1] == (2 if skipping else 4), tasks  # after the source's collection


def merge_job_ids(spark: Any, sql: str) -> list[int]:
    """Runs ``sql``; the ids of the Spark jobs it ran, in order."""
    sc = spark.sparkContext
    group = f"merge-jobs-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "a MERGE's jobs, counted")
    try:
        spark.sql(sql)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    return sorted(sc.statusTracker().getJobIdsForGroup(group))


def merge_tasks(spark: Any, sql: str) -> list[int]:
    """Runs ``sql``; the number of tasks of each Spark job it ran, in order."""
    tracker = spark.sparkContext.statusTracker()
    return [sum(tracker.getStageInfo(s).numTasks for s in tracker.getJobInfo(j).stageIds)
            for j in merge_job_ids(spark, sql)]


def test_a_merge_reads_every_file_when_a_row_may_change_without_a_match(spark: Any, banded: str) -> None:
    """With ``WHEN NOT MATCHED BY SOURCE`` every target row may change: no file is skipped (every file of 'b' is
    replaced: its rows deleted); with ``<=>`` and a NULL source key, the file holding NULL ids is read (its NULL
    row matches) — both equal to the reference."""
    t = banded
    source = [(12, "S12", "a"), (None, "SN", "a"), (100, "N100", "b")]
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW probe_src AS SELECT * FROM VALUES (12, 'S12', 'a'), "
              "(CAST(NULL AS INT), 'SN', 'a'), (100, 'N100', 'b') AS s(id, v, dt)")
    before = rows(spark, t)
    filled = spark.sql(f"SELECT max(version) FROM {t}.history").first()[0]
    try:
        null_safe = (f"MERGE INTO {t} t USING probe_src s ON t.id <=> s.id "
                     f"WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")
        assert "MergeProbe" in spark.sql(f"EXPLAIN {null_safe}").first()[0]
        spark.sql(null_safe)
        assert rows(spark, t) == reference(before, source, null_safe=True)
        assert (None, "SN", "a") in rows(spark, t) and (None, "null21", "a") not in rows(spark, t)
        spark.sql(f"CALL ushas.system.restore_table(table => '{t.split('.', 1)[1]}', version => {filled})")
        by_source = (f"MERGE INTO {t} t USING probe_src s ON t.id = s.id "
                     f"WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT * "
                     f"WHEN NOT MATCHED BY SOURCE AND t.dt = 'b' THEN DELETE")
        assert "MergeProbe" in spark.sql(f"EXPLAIN {by_source}").first()[0]
        spark.sql(by_source)
        assert rows(spark, t) == reference(before, source, by_source_delete=True)
    finally:
        spark.catalog.dropTempView("probe_src")


def test_a_merge_refuses_two_source_rows_for_one_target_row_and_writes_nothing(spark: Any, banded: str) -> None:
    """Two source rows with the key of one target row: MERGE_CARDINALITY_VIOLATION, the table as it was (no
    unmatched source row written either); a table of another format (orc, no footer bounds read) gets the same
    results as the reference."""
    t = banded
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW probe_src AS SELECT * FROM VALUES (12, 'A', 'a'), (12, 'B', 'a'), "
              "(100, 'N100', 'b') AS s(id, v, dt)")
    before, kept = rows(spark, t), files(spark, t)
    try:
        sql = (f"MERGE INTO {t} t USING probe_src s ON t.id = s.id "
               f"WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")
        assert "MergeProbe" in spark.sql(f"EXPLAIN {sql}").first()[0]
        with pytest.raises(Exception, match="MERGE_CARDINALITY_VIOLATION"):
            spark.sql(sql)
        assert rows(spark, t) == before and files(spark, t) == kept
        orc = f"{t}_orc"
        spark.sql(f"CREATE TABLE {orc} ({COLS}) USING orc PARTITIONED BY (dt)")
        spark.table(t).select("id", "v", "dt").writeTo(orc).append()
        spark.sql("CREATE OR REPLACE TEMPORARY VIEW probe_src AS SELECT * FROM VALUES (12, 'A', 'a'), "
                  "(100, 'N100', 'b') AS s(id, v, dt)")
        spark.sql(sql.replace(t, orc))
        assert rows(spark, orc) == reference(before, [(12, "A", "a"), (100, "N100", "b")])
    finally:
        spark.catalog.dropTempView("probe_src")


def merge_jobs(spark: Any, sql: str) -> int:
    """Runs ``sql``; the number of Spark jobs it ran."""
    return len(merge_job_ids(spark, sql))


@pytest.fixture
def gapped(spark: Any, db: str) -> Any:
    """Partition 'a': one file of ids 1, 5, 9 (bounds [1, 9], with gaps); 'b': one file of ids 20, 30."""
    t = f"ushas.{db}.gapped"
    spark.sql(f"CREATE TABLE {t} ({COLS}) USING parquet PARTITIONED BY (dt)")
    spark.createDataFrame([(1, "v1", "a"), (5, "v5", "a"), (9, "v9", "a")], COLS).coalesce(1).writeTo(t).append()
    spark.createDataFrame([(20, "v20", "b"), (30, "v30", "b")], COLS).coalesce(1).writeTo(t).append()
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('ushas.row-level.group-filter' = 'never')")
    yield t


def test_source_rows_no_file_can_match_are_written_by_the_statements_own_job(spark: Any, gapped: str) -> None:
    """New keys outside every file's bounds (100; a NULL key of a plain ``=``, which never matches) are written
    by the MERGE's own job beside the rewritten files: one job fewer than when a new key falls inside a file's
    bounds (3: between 1 and 9), whose row the write's commit writes after the job. Both in one commit (one MERGE
    in history), a ``WHEN NOT MATCHED AND`` condition applied to both kinds, the rows equal to the reference."""
    t = gapped
    filled = spark.sql(f"SELECT max(version) FROM {t}.history").first()[0]
    before = rows(spark, t)
    merge = (f"MERGE INTO {t} t USING probe_src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
             f"WHEN NOT MATCHED AND s.v <> 'skip' THEN INSERT *")
    outside = [(5, "S5", "a"), (100, "N100", "b"), (None, "NN", "b"), (200, "skip", "b")]
    inside = outside + [(3, "N3", "a"), (4, "skip", "a")]
    jobs = {}
    try:
        for name, source in (("outside", outside), ("inside", inside)):
            values = ", ".join(f"({'CAST(NULL AS INT)' if i is None else i}, '{v}', '{d}')" for i, v, d in source)
            spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW probe_src AS SELECT * FROM VALUES {values} AS s(id, v, dt)")
            assert "MergeProbe" in spark.sql(f"EXPLAIN {merge}").first()[0]
            jobs[name] = merge_jobs(spark, merge)
            kept = [s for s in source if s[1] != "skip"]
            assert rows(spark, t) == reference(before, kept), name
            history = spark.sql(f"SELECT operation FROM {t}.history WHERE version > {filled}").collect()
            assert [r.operation for r in history] == ["MERGE"], (name, history)
            spark.sql(f"CALL ushas.system.restore_table(table => '{t.split('.', 1)[1]}', version => {filled})")
            filled = spark.sql(f"SELECT max(version) FROM {t}.history").first()[0]
    finally:
        spark.catalog.dropTempView("probe_src")
    assert jobs["inside"] == jobs["outside"] + 1, jobs


def test_a_failure_writing_the_rows_no_file_can_match_leaves_the_table_as_it_was(spark: Any, gapped: str) -> None:
    """An error raised while the statement's own job makes an unmatched source row (``raise_error`` in the INSERT
    of key 100, outside every file's bounds) fails the MERGE: the table's rows and files as they were, the matched
    file's rewrite undone with it; then a MERGE into an empty table (every source row is such a row) equals the
    reference."""
    t = gapped
    before, kept = rows(spark, t), files(spark, t)
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW probe_src AS SELECT * FROM VALUES (5, 'S5', 'a'), (100, 'N100', 'b') "
              "AS s(id, v, dt)")
    try:
        sql = (f"MERGE INTO {t} t USING probe_src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
               f"WHEN NOT MATCHED THEN INSERT (id, v, dt) VALUES (s.id, "
               f"CASE WHEN s.id = 100 THEN raise_error('no row 100 here') ELSE s.v END, s.dt)")
        assert "MergeProbe" in spark.sql(f"EXPLAIN {sql}").first()[0]
        with pytest.raises(Exception, match="no row 100 here"):
            spark.sql(sql)
        assert rows(spark, t) == before and files(spark, t) == kept
        empty = f"{t}_empty"
        spark.sql(f"CREATE TABLE {empty} ({COLS}) USING parquet PARTITIONED BY (dt)")
        spark.sql(sql.replace(t, empty).replace("raise_error('no row 100 here')", "'big'"))
        assert rows(spark, empty) == {(5, "S5", "a"), (100, "big", "b")}
    finally:
        spark.catalog.dropTempView("probe_src")


@pytest.fixture
def small_files(spark: Any, db: str) -> Any:
    """Partitions 'a', 'b', 'c', each with 8 small files (ids 100p + 10k + 1 … + 3 in append k), and the scan's
    settings that pack several files, of more than one partition, into a task."""
    t = f"ushas.{db}.small_files"
    spark.sql(f"CREATE TABLE {t} ({COLS}) USING parquet PARTITIONED BY (dt)")
    for k in range(8):
        data = [(100 * p + 10 * k + i, f"v{p}{k}{i}", d) for p, d in enumerate("abc") for i in (1, 2, 3)]
        spark.createDataFrame(data, COLS).repartition(1).writeTo(t).append()
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('ushas.row-level.group-filter' = 'never')")
    spark.conf.set("spark.sql.files.openCostInBytes", "1")
    try:
        yield t
    finally:
        spark.conf.unset("spark.sql.files.openCostInBytes")


def test_a_merge_that_keeps_each_rows_partition_writes_without_sorting(spark: Any, small_files: str) -> None:
    """A MERGE whose clauses keep a target row's partition (``UPDATE SET v``) has no sort before its write: the
    group's tasks read files in partition order, and its new rows (keys outside every file's bounds, for 'c', 'a'
    and 'b' in that order in the source, and a NULL key) come sorted by partition. The table's rows equal the
    reference, none twice. One that moves rows between partitions (``SET dt``) keeps the sort, and is right too."""
    t = small_files
    filled = spark.sql(f"SELECT max(version) FROM {t}.history").first()[0]
    before = rows(spark, t)
    source = [(12, "S12", "a"), (141, "S141", "b"), (273, "S273", "c"), (900, "N900", "c"), (901, "N901", "a"),
              (902, "N902", "b"), (None, "NN", "b"), (903, "N903", "c")]
    values = ", ".join(f"({'CAST(NULL AS INT)' if i is None else i}, '{v}', '{d}')" for i, v, d in source)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW probe_src AS SELECT * FROM VALUES {values} AS s(id, v, dt)")
    try:
        keep = (f"MERGE INTO {t} t USING probe_src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
                f"WHEN NOT MATCHED THEN INSERT *")
        plan = spark.sql(f"EXPLAIN {keep}").first()[0]
        assert "MergeProbe" in plan and "Sort [" not in plan, plan
        spark.sql(keep)
        after = [tuple(r) for r in spark.sql(f"SELECT id, v, dt FROM {t}").collect()]
        assert len(after) == len(set(after)) and set(after) == reference(before, source)
        spark.sql(f"CALL ushas.system.restore_table(table => '{t.split('.', 1)[1]}', version => {filled})")
        move = keep.replace("UPDATE SET v = s.v", "UPDATE SET v = s.v, dt = 'z'")
        plan = spark.sql(f"EXPLAIN {move}").first()[0]
        assert "MergeProbe" in plan and "Sort [" in plan, plan
        spark.sql(move)
        matched = {i for i, _, _ in before} & {i for i, _, _ in source}
        expected = {(i, v, "z" if i in matched else d) for i, v, d in reference(before, source)}
        after = [tuple(r) for r in spark.sql(f"SELECT id, v, dt FROM {t}").collect()]
        assert len(after) == len(set(after)) and set(after) == expected
    finally:
        spark.catalog.dropTempView("probe_src")


@pytest.mark.parametrize("key_type,cast", [("INT", "{}"), ("BIGINT", "{}"), ("SMALLINT", "{}"), ("TINYINT", "{}"),
                                           ("DATE", "date_add(DATE'2024-01-01', {})")])
@pytest.mark.parametrize("op", ["=", "<=>"])
def test_a_merge_on_one_integer_key_of_any_width_and_sign_matches_the_reference(spark: Any, db: str, key_type: str,
                                                                             cast: str, op: str) -> None:
    """The probe reads a single integer (or date) key straight from the target row: negative keys, a NULL key on
    both sides (matching only with ``<=>``), and keys of every width give the reference's rows."""
    t = f"ushas.{db}.keyed_{key_type.lower()}"
    spark.sql(f"CREATE TABLE {t} (k {key_type}, v STRING, dt STRING) USING parquet PARTITIONED BY (dt)")
    ids: list[int | None] = [-100, -3, -1, 0, 1, 7, 100, None]
    key = lambda i: "NULL" if i is None else cast.format(i)  # noqa: E731
    target = ", ".join(f"(CAST({key(i)} AS {key_type}), 't{i}', '{'a' if i is None or i < 0 else 'b'}')"
                       for i in ids)
    spark.sql(f"INSERT INTO {t} VALUES {target}")
    source = [-100, -2, 7, 101, None]
    values = ", ".join(f"(CAST({key(i)} AS {key_type}), 's{i}', 'c')" for i in source)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW probe_src AS SELECT * FROM VALUES {values} AS s(k, v, dt)")
    try:
        sql = (f"MERGE INTO {t} t USING probe_src s ON t.k {op} s.k WHEN MATCHED THEN UPDATE SET v = s.v "
               f"WHEN NOT MATCHED THEN INSERT *")
        assert "MergeProbe" in spark.sql(f"EXPLAIN {sql}").first()[0]
        spark.sql(sql)
        got = sorted((r.v, r.dt) for r in spark.sql(f"SELECT v, dt FROM {t}").collect())
        null_safe = op == "<=>"
        matched = {i for i in source if i in ids and (i is not None or null_safe)}
        want = sorted([(f"s{i}" if i in matched else f"t{i}", "a" if i is None or i < 0 else "b") for i in ids]
                      + [(f"s{i}", "c") for i in source if i not in matched])
        assert got == want
    finally:
        spark.catalog.dropTempView("probe_src")
