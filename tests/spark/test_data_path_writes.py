"""The write side of "the catalog owns the data path": each write stages in its own directory and
registers its exact files in one commit; overwritten / dropped data stays (unreachable) until purge;
two overwrites of one partition: one wins, the loser's files are never registered; empty-string
partition values; two applications writing one table at once; a writer killed mid-job.

Rows are read back through the file lists the catalog recorded (what reads use), so these tests say
what the catalog holds, independently of how a query plans its reads."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from spark_processes import conf_args, spark_bin

pytestmark = [pytest.mark.spark]


def local(location: str) -> Path:
    return Path(location.removeprefix("file:"))


def recorded(ms: Any, name: tuple[str, str, str]) -> dict[str, list[Any]]:
    """Partition (``dt=a``; ``""`` for an unpartitioned table) -> its recorded data files."""
    info = ms.get_table(name)
    if not info.partition_columns:
        return {"": ms.table_data_files(name)}
    out = {}
    for p in ms.list_partitions(name):
        assert p.data_files is not None, f"{p.spec}: no file list recorded"
        out["/".join(f"{k}={v}" for k, v in p.spec.items())] = p.data_files
    return out


def catalog_rows(spark: Any, ms: Any, name: tuple[str, str, str], fmt: str = "parquet") -> list[tuple[Any, ...]]:
    """Every row of the table as the catalog's file lists have it: (data columns..., partition values...)."""
    info = ms.get_table(name)
    rows: list[tuple[Any, ...]] = []
    parts = ([(p.values, p.data_files) for p in ms.list_partitions(name)] if info.partition_columns
             else [({}, ms.table_data_files(name))])
    for values, files in parts:
        if not files:
            continue
        for r in spark.read.format(fmt).load([f.path for f in files]).collect():
            rows.append(tuple(r) + tuple(values[c] for c in info.partition_columns))
    return sorted(rows, key=lambda r: [(v is None, "" if v is None else v) for v in r])


def disk_files(directory: Path) -> set[str]:
    if not directory.exists():
        return set()
    return {f"file:{p}" for p in directory.iterdir() if p.is_file() and not p.name.startswith(("_", "."))}


def test_each_write_stages_alone_and_registers_its_files(spark: Any, db: str, ms: Any) -> None:
    t, name = f"ushas.{db}.w", ("ushas", db, "w")
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    spark.createDataFrame([(3, "a")], "id int, dt string").writeTo(t).append()
    root = local(ms.get_table(name).location)
    files = recorded(ms, name)
    assert sorted(files) == ["dt=a", "dt=b"] and len(files["dt=a"]) == 2
    for part, listed in files.items():
        assert {f.path for f in listed} == disk_files(root / part)  # placed in the Hive layout, all listed
        for f in listed:
            assert os.path.getsize(local(f.path)) == f.size and f.mtime > 0
        p = ms.get_partition(name, {"dt": part[3:]})
        assert (p.files, p.bytes) == (len(listed), sum(f.size for f in listed))
    assert not (root / "_ushas_staging").exists() and not (root / "_temporary").exists()
    assert catalog_rows(spark, ms, name) == [(1, "a"), (2, "b"), (3, "a")]
    # the write sets permissions without a forked chmod (LocalFiles): the same modes and checksum files as
    # Hadoop's own local file system gives a plain path write of this session
    plain = root.parent / f"plain-{uuid.uuid4().hex[:6]}"
    spark.createDataFrame([(3, "a")], "id int, dt string").write.partitionBy("dt").parquet(f"file:{plain}")
    theirs = next((plain / "dt=a").glob("part-*"))
    for f in (f for listed in files.values() for f in listed):
        mine = local(f.path)
        assert oct(mine.stat().st_mode) == oct(theirs.stat().st_mode), f.path
        crc = mine.parent / f".{mine.name}.crc"
        assert oct(crc.stat().st_mode) == oct((theirs.parent / f".{theirs.name}.crc").stat().st_mode)
    assert oct((root / "dt=b").stat().st_mode) == oct((plain / "dt=a").stat().st_mode)
    jvm = spark.sparkContext._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    if not jvm.org.apache.hadoop.io.nativeio.NativeIO.isAvailable():  # else Hadoop needs no fork: not used
        stats = jvm.org.apache.hadoop.fs.FileSystem.getStatistics(
            "file", jvm.java.lang.Class.forName("io.ushas.spark.LocalFiles$Raw", True, loader))  # its own statistics
        assert stats.getBytesWritten() > 0, "the table's writes did not go through LocalFiles"
    # a file no committed write registered (a foreign writer, a crashed job) is in no list
    (root / "dt=a" / "part-foreign.parquet").write_bytes(b"junk")
    spark.sql(f"INSERT INTO {t} VALUES (4, 'a')")
    assert all("foreign" not in f.path for f in recorded(ms, name)["dt=a"])
    assert catalog_rows(spark, ms, name) == [(1, "a"), (2, "b"), (3, "a"), (4, "a")]

    u, uname = f"ushas.{db}.u", ("ushas", db, "u")
    spark.sql(f"CREATE TABLE {u} (id INT, s STRING) USING orc")
    spark.sql(f"INSERT INTO {u} VALUES (1, 'x')")
    spark.sql(f"INSERT INTO {u} VALUES (2, 'y')")
    listed = ms.table_data_files(uname)
    assert {f.path for f in listed} == disk_files(local(ms.get_table(uname).location))
    assert catalog_rows(spark, ms, uname, "orc") == [(1, "x"), (2, "y")]
    assert ms.get_table(uname).properties["numFiles"] == str(len(listed))


def test_replaced_and_dropped_files_stay_until_purge(spark: Any, db: str, ms: Any) -> None:
    from ushas_catalog.data.purge import purge

    t, name = f"ushas.{db}.o", ("ushas", db, "o")
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    root = local(ms.get_table(name).location)
    before = recorded(ms, name)
    kept: set[str] = set()

    def let_go(part: str) -> None:
        gone = {f.path for f in before[part]}
        assert not gone & {f.path for fs in recorded(ms, name).values() for f in fs}  # unreachable at once
        assert all(local(p).exists() for p in gone)  # but not deleted
        kept.update(gone)

    spark.sql(f"INSERT OVERWRITE {t} PARTITION (dt = 'a') VALUES (10)")           # static
    let_go("dt=a")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        spark.sql(f"INSERT OVERWRITE {t} VALUES (20, 'b')")                         # dynamic
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    let_go("dt=b")
    spark.sql(f"ALTER TABLE {t} DROP PARTITION (dt = 'c')")
    let_go("dt=c")
    assert catalog_rows(spark, ms, name) == [(10, "a"), (20, "b")]
    before = recorded(ms, name)
    spark.sql(f"TRUNCATE TABLE {t} PARTITION (dt = 'a')")
    let_go("dt=a")
    assert recorded(ms, name)["dt=a"] == [] and catalog_rows(spark, ms, name) == [(20, "b")]
    spark.sql(f"TRUNCATE TABLE {t}")
    let_go("dt=b")
    assert catalog_rows(spark, ms, name) == []
    spark.sql(f"INSERT INTO {t} VALUES (30, 'a')")
    live = {f.path for fs in recorded(ms, name).values() for f in fs}

    summary = purge(ms, None, None)
    assert summary.report.deleted >= len(kept) and not summary.report.unreachable
    assert not any(local(p).exists() for p in kept)
    assert all(local(p).exists() for p in live) and catalog_rows(spark, ms, name) == [(30, "a")]
    assert ms.garbage(name) == [] and (root / "dt=a").exists()

    # an unpartitioned table: INSERT OVERWRITE and TRUNCATE TABLE too
    u, uname = f"ushas.{db}.u", ("ushas", db, "u")
    spark.sql(f"CREATE TABLE {u} (id INT) USING parquet")
    spark.sql(f"INSERT INTO {u} VALUES (1)")
    first = ms.table_data_files(uname)
    spark.sql(f"INSERT OVERWRITE {u} VALUES (2)")
    assert catalog_rows(spark, ms, uname) == [(2,)] and all(local(f.path).exists() for f in first)
    second = ms.table_data_files(uname)
    spark.sql(f"TRUNCATE TABLE {u}")
    assert ms.table_data_files(uname) == [] and all(local(f.path).exists() for f in second)
    purge(ms, None, None)
    assert not any(local(f.path).exists() for f in first + second)


def test_drop_table_keeps_data_for_undrop_and_purge_deletes_it(spark: Any, db: str, ms: Any,
                                                                tmp_path: Path) -> None:
    from ushas_catalog.data.purge import purge
    from ushas_catalog.model.names import parse_any

    t, name = f"ushas.{db}.d", ("ushas", db, "d")
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'b')")
    root = local(ms.get_table(name).location)
    spark.sql(f"DROP TABLE {t}")
    assert root.exists() and disk_files(root / "dt=b")
    ms.undrop_table(name)
    assert spark.sql(f"SELECT count(*) FROM {t}").collect()[0][0] == 3  # every row it had
    assert catalog_rows(spark, ms, name) == [(1, "a"), (2, "b"), (3, "b")]
    spark.sql(f"DROP TABLE {t}")
    assert purge(ms, parse_any(f"ushas.{db}.d"), None).objects == 1 and not root.exists()

    spark.sql(f"CREATE TABLE {t} (id INT) USING parquet")
    spark.sql(f"INSERT INTO {t} VALUES (1)")
    spark.sql(f"DROP TABLE {t}")  # kept until purge, in the directory the next table of that name gets
    spark.sql(f"CREATE TABLE {t} (id INT) USING parquet")
    spark.sql(f"INSERT INTO {t} VALUES (2)")
    assert catalog_rows(spark, ms, name) == [(2,)]  # the dropped table's file is not this table's
    root = local(ms.get_table(name).location)
    spark.sql(f"DROP TABLE {t} PURGE")
    assert not root.exists()

    ext = tmp_path / "ext"
    spark.sql(f"CREATE TABLE ushas.{db}.e (id INT) USING parquet LOCATION 'file:{ext}'")
    spark.sql(f"INSERT INTO ushas.{db}.e VALUES (1)")
    files = disk_files(ext)
    spark.sql(f"DROP TABLE ushas.{db}.e PURGE")
    assert files and disk_files(ext) == files  # the catalog never deletes an external table's files


def test_two_overwrites_of_one_partition_one_wins(spark: Any, db: str, ms: Any, tmp_path: Path) -> None:
    from pyspark.sql.types import IntegerType

    t, name = f"ushas.{db}.c", ("ushas", db, "c")
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    root = local(ms.get_table(name).location)
    started, release = tmp_path / "started", tmp_path / "release"

    def gate(x: int) -> int:
        Path(started).touch()
        deadline = time.time() + 120
        while not Path(release).exists() and time.time() < deadline:
            time.sleep(0.05)
        return x

    spark.udf.register(f"gate_{db}", gate, IntegerType())
    errors: list[BaseException] = []

    def slow(sql: str) -> None:
        try:
            spark.sql(sql)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    # A: an overwrite of dt=a that is running (its job planned from the current version) ...
    a = threading.Thread(target=slow, args=(
        f"INSERT OVERWRITE {t} PARTITION (dt = 'a') SELECT gate_{db}(id) FROM VALUES (100) AS v(id)",))
    a.start()
    deadline = time.time() + 120
    while not started.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert started.exists()
    # ... B overwrites dt=a and commits first, an append to dt=b too
    spark.sql(f"INSERT OVERWRITE {t} PARTITION (dt = 'a') VALUES (200)")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'b')")
    release.touch()
    a.join(180)
    assert not a.is_alive()
    [error] = errors
    assert "WriteConflict" in str(error) and "dt=a" in str(error)
    assert catalog_rows(spark, ms, name) == [(2, "b"), (3, "b"), (200, "a")]  # nothing of the loser
    # the loser's files are gone from disk: what is there is the first write's (kept until purge) and B's
    listed = {f.path for f in recorded(ms, name)["dt=a"]}
    left = disk_files(root / "dt=a") - listed
    assert len(left) == 1 and spark.read.parquet(*left).collect()[0].id == 1
    assert not (root / "_ushas_staging").exists()

    # an overwrite of another partition meanwhile does not conflict
    started.unlink()
    release.unlink()
    a = threading.Thread(target=slow, args=(
        f"INSERT OVERWRITE {t} PARTITION (dt = 'b') SELECT gate_{db}(id) FROM VALUES (300) AS v(id)",))
    a.start()
    deadline = time.time() + 120
    while not started.exists() and time.time() < deadline:
        time.sleep(0.05)
    spark.sql(f"INSERT OVERWRITE {t} PARTITION (dt = 'a') VALUES (400)")
    release.touch()
    a.join(180)
    assert errors == [error]
    assert catalog_rows(spark, ms, name) == [(300, "b"), (400, "a")]


@pytest.mark.parametrize("shape", ["values", "one_task", "many_tasks"])
def test_empty_string_and_null_partition_values_share_the_default_partition(spark: Any, db: str, ms: Any,
                                                                             shape: str) -> None:
    t, name = f"ushas.{db}.e", ("ushas", db, "e")
    spark.sql(f"CREATE TABLE {t} (id INT, s STRING) USING parquet PARTITIONED BY (s)")
    if shape == "values":
        spark.sql(f"INSERT INTO {t} VALUES (5, ''), (6, NULL), (7, 'x')")
    else:
        df = spark.createDataFrame([(5, ""), (6, None), (7, "x")], "id int, s string")
        df = df.coalesce(1) if shape == "one_task" else df.repartition(3)
        df.writeTo(t).append()
    assert [p.spec["s"] for p in ms.list_partitions(name)] == ["__HIVE_DEFAULT_PARTITION__", "x"]
    assert len(spark.sql(f"SHOW PARTITIONS {t}").collect()) == 2
    assert catalog_rows(spark, ms, name) == [(5, None), (6, None), (7, "x")]


# ---- other processes ---------------------------------------------------------------------------------
def _app(tmp_path: Path, body: str) -> Path:
    app = tmp_path / f"app_{uuid.uuid4().hex[:6]}.py"
    app.write_text("from pyspark.sql import SparkSession\nspark = SparkSession.builder.getOrCreate()\n"
                   + textwrap.dedent(body) + "\nspark.stop()\nprint('DONE')\n")
    return app


def _submit(app: Path, spark_dirs: dict[str, Path], cwd: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    cmd = [spark_bin("spark-submit"), "--master", "local[1]",
           *conf_args(spark_dirs["store"], spark_dirs["warehouse"]), str(app)]
    return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _finish(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"spark-submit did not finish in {timeout} s: {err[-3000:]}") from None
    assert proc.returncode == 0 and "DONE" in out, out[-2000:] + "\n".join(
        line for line in err.splitlines() if " INFO " not in line)[-6000:]
    return out, err


@pytest.mark.slow
def test_two_applications_write_one_table_at_once(spark: Any, spark_dirs: dict[str, Path], db: str, ms: Any,
                                                  tmp_path: Path) -> None:
    t, name = f"ushas.{db}.m", ("ushas", db, "m")
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (0, 'o1'), (0, 'o2')")
    # a barrier: each application's first INSERT waits in its tasks (a UDF over its rows) until both have
    # reached it, so both are inside a write of t at the same moment, whatever the machine's load
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    apps = []
    for n in (1, 2):
        apps.append(_app(tmp_path, f"""
            import time
            from pathlib import Path
            from pyspark.sql.types import IntegerType

            def meet(x):
                Path({str(barrier / f"app{n}")!r}).touch()
                deadline = time.time() + 300
                while not (Path({str(barrier / "app1")!r}).exists() and Path({str(barrier / "app2")!r}).exists()):
                    if time.time() > deadline:
                        raise RuntimeError("the other application never reached its write")
                    time.sleep(0.05)
                return x

            spark.udf.register("meet", meet, IntegerType())
            for i in range(4):
                col = "meet(CAST(id AS INT))" if i == 0 else "id"
                spark.sql(f"INSERT INTO {t} SELECT {{col}}, 'p{n}' FROM range({n * 1000} + {{i * 10}}, {n * 1000 + 10} + {{i * 10}})")
                spark.sql(f"INSERT OVERWRITE {t} PARTITION (dt = 'o{n}') SELECT id FROM range({n * 1000} + {{i}}, {n * 1000 + 3} + {{i}})")
        """))
    procs = [_submit(app, spark_dirs, tmp_path) for app in apps]
    for p in procs:
        _finish(p, 480)
    assert sorted(f.name for f in barrier.iterdir()) == ["app1", "app2"]  # both met inside their first write
    rows = catalog_rows(spark, ms, name)
    for n in (1, 2):
        appended = sorted(r[0] for r in rows if r[1] == f"p{n}")
        assert appended == list(range(n * 1000, n * 1000 + 40))  # every row exactly once
        assert sorted(r[0] for r in rows if r[1] == f"o{n}") == [n * 1000 + 3, n * 1000 + 4, n * 1000 + 5]
    root = local(ms.get_table(name).location)
    assert not (root / "_ushas_staging").exists() and not (root / "_temporary").exists()


@pytest.mark.slow
def test_writer_killed_mid_job_leaves_nothing(spark: Any, spark_dirs: dict[str, Path], db: str, ms: Any,
                                              tmp_path: Path) -> None:
    t, name = f"ushas.{db}.k", ("ushas", db, "k")
    # not clustered by partition: the stalling rows are in the write's own tasks, not in a shuffle before it
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt) "
              "TBLPROPERTIES ('write.distribution-mode' = 'none')")
    root = local(ms.get_table(name).location)
    started = tmp_path / "started"
    app = _app(tmp_path, f"""
        import time
        from pathlib import Path
        from pyspark.sql.types import IntegerType

        def stall(x):
            Path({str(started)!r}).touch()
            time.sleep(600)
            return x

        spark.udf.register("stall", stall, IntegerType())
        spark.sql("INSERT INTO {t} SELECT stall(CAST(id AS INT)), 'k' FROM range(3)")
    """)
    proc = _submit(app, spark_dirs, tmp_path)
    try:
        deadline = time.time() + 300
        while not started.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert started.exists(), proc.stderr.read()[-3000:] if proc.poll() is not None else "no task started"
        jobs = list((root / "_ushas_staging").iterdir())
        assert len(jobs) == 1 and (jobs[0] / "_owner").exists()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    assert ms.list_partition_keys(name)[1] == []  # nothing registered
    assert not (root / "dt=k").exists() or not disk_files(root / "dt=k")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")  # the next write removes the dead job's staging
    assert not (root / "_ushas_staging").exists()
    assert catalog_rows(spark, ms, name) == [(1, "a")]


def test_path_writes_into_a_table_directory_are_recorded(spark: Any, db: str, ms: Any) -> None:
    t, name = f"ushas.{db}.pw", ("ushas", db, "pw")
    spark.sql(f"CREATE TABLE {t} (id INT, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    location = ms.get_table(name).location
    spark.createDataFrame([(2, "a"), (3, "b")], "id int, dt string").write.mode("append") \
        .partitionBy("dt").parquet(location)
    files = recorded(ms, name)
    assert sorted(files) == ["dt=a", "dt=b"] and len(files["dt=a"]) == 2
    assert {f.path for f in files["dt=a"]} == disk_files(local(location) / "dt=a")
    assert catalog_rows(spark, ms, name) == [(1, "a"), (2, "a"), (3, "b")]


def test_partition_values_that_need_escaping(spark: Any, db: str, ms: Any) -> None:
    t, name = f"ushas.{db}.x", ("ushas", db, "x")
    spark.sql(f"CREATE TABLE {t} (id INT, s STRING, n INT) USING parquet PARTITIONED BY (s, n)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x/y:z%w', 1), (2, 'a b=c', 2)")
    assert sorted(p.spec["s"] for p in ms.list_partitions(name)) == ["a b=c", "x/y:z%w"]
    assert catalog_rows(spark, ms, name) == [(1, "x/y:z%w", 1), (2, "a b=c", 2)]
    for p in ms.list_partitions(name):
        assert all(os.path.exists(local(f.path)) for f in p.data_files) and len(p.data_files) == 1
