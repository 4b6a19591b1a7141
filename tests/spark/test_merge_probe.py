"""A MERGE with a small source planned as one pass over the target (``MergeProbe``, docs/row-level.md): the
files no source key can be in are neither read nor replaced, the unmatched source rows are written after the
target's tasks in the same commit, and the results equal a DataFrame reference."""
from __future__ import annotations

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
        spark.sql(sql)
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
