"""The privilege matrix, declared once (docs/governance.md, "Enforcement"): each operation with the
privilege it needs and the level of the object it acts on, and how to make it through each surface
(Spark SQL, the DataFrame API, the CLI, the REST API); each principal of the matrix holds exactly one
privilege granted at one level (or nothing). :func:`expected` says whether a principal may make an
operation; :class:`Probe` runs one and checks the outcome: an allowed call succeeds, a refused one
names the privilege and the object, writes nothing (every key of the project but the change feed's is
as before) and leaves an ``ACCESS_DENIED`` event naming the user.

Each principal acts in a catalog of its own (``c_<key>``: database ``db``, table ``t`` partitioned by
``p`` with partition ``p=z``), so principals never see each other's writes; within a principal the
operations run in declaration order (``DROP TABLE`` then undrop last).

Used by ``test_matrix_cli.py``, ``test_matrix_rest.py``, ``tests/spark/test_privilege_matrix_spark.py`` and
``tests/remote/test_connect_privilege_matrix.py`` (Spark Connect: one client session per principal).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from ushas_catalog.metastore import Metastore

#: object levels, outermost first: a grant on a level applies to every object below it
LEVELS = ("project", "catalog", "database", "table")
PRIVILEGES = ("USE", "SELECT", "MODIFY", "CREATE", "MANAGE", "OWN")


@dataclass(frozen=True)
class Principal:
    """A user holding exactly ``privilege`` granted at ``level`` (on its own catalog, its database or
    its table; ``project``: on the project), or nothing (``privilege`` None)."""

    privilege: str | None
    level: str = "table"

    @property
    def key(self) -> str:
        return "none" if self.privilege is None else f"{self.privilege.lower()}_{self.level}"

    @property
    def user(self) -> str:
        return f"u_{self.key}"

    @property
    def catalog(self) -> str:
        return f"c_{self.key}"

    def grant_object(self) -> Any:
        return {"project": "project", "catalog": (self.catalog,), "database": (self.catalog, "db"),
                "table": (self.catalog, "db", "t")}[self.level]


PRINCIPALS = (Principal(None),) + tuple(Principal(p, level) for level in LEVELS for p in PRIVILEGES)


@dataclass(frozen=True)
class Operation:
    """One operation of the matrix: the privilege it needs on the object of ``level`` (the principal's
    catalog, ``db``, ``db.t`` or the project), and how each surface makes it (None: not on that
    surface). Templates: ``{m}`` the Spark catalog name, ``{c}`` the catalog's name in the store."""

    name: str
    privilege: str
    level: str
    sql: str | None = None
    dataframe: Callable[[Any, str], Any] | None = None
    cli: tuple[str, ...] | None = None
    rest: tuple[str, str, Any] | None = None
    #: Spark Connect (tests/remote/test_connect_privilege_matrix.py): a SQL template, a DataFrame call
    connect: str | None = None
    connect_dataframe: Callable[[Any, str], Any] | None = None

    def object_name(self, catalog: str) -> str:
        return {"project": "project", "catalog": f"catalog {catalog}", "database": f"database {catalog}.db",
                "table": f"table {catalog}.db.t"}[self.level]


def _df(spark: Any) -> Any:
    return spark.createDataFrame([(7, "d")], "a INT, p STRING")


def _table_path(spark: Any, m: str) -> str:
    """The directory of the principal's table ``db.t`` (the Spark catalog's warehouse / its catalog / db / t)."""
    return f"{spark.conf.get(f'spark.sql.catalog.{m}.warehouse')}/{spark.conf.get(f'spark.sql.catalog.{m}.catalog')}/db/t"


def _external_path(spark: Any, m: str) -> str:
    """A directory outside the managed warehouse (and every table) for the principal's external table."""
    return f"{spark.conf.get(f'spark.sql.catalog.{m}.warehouse')}-external/{spark.conf.get(f'spark.sql.catalog.{m}.catalog')}/e"


D = "/api/v1/catalogs/{c}/databases/db"
OPERATIONS: tuple[Operation, ...] = (
    Operation("list tables", "USE", "database", sql="SHOW TABLES IN {m}.db", cli=("tables", "{c}.db"),
              rest=("GET", D + "/tables", None),
              dataframe=lambda spark, m: spark.catalog.listTables(f"{m}.db")),
    Operation("describe table", "USE", "table", sql="DESCRIBE TABLE {m}.db.t", cli=("describe", "{c}.db.t"),
              rest=("GET", D + "/tables/t", None)),
    Operation("select", "SELECT", "table", sql="SELECT * FROM {m}.db.t", connect="SELECT * FROM {m}.db.t",
              dataframe=lambda spark, m: spark.table(f"{m}.db.t").collect()),
    # a path read is checked by every governed catalog of the session (as each one's user): only on Connect, where
    # every catalog of a client's session has that client's user, is it one principal's row
    Operation("read a table's files by path", "SELECT", "table", connect="SELECT * FROM text.`{w}/{c}/db/t`",
              connect_dataframe=lambda spark, m: spark.read.schema("a INT, p STRING").parquet(
                  _table_path(spark, m)).collect()),
    Operation("read the history metadata table", "SELECT", "table", sql="SELECT * FROM {m}.db.t.history",
              cli=("history", "{c}.db.t"), rest=("GET", D + "/tables/t/history", None),
              dataframe=lambda spark, m: spark.table(f"{m}.db.t.history").collect()),
    Operation("read a database's history", "SELECT", "database", cli=("history", "{c}.db")),
    Operation("list partitions", "SELECT", "table", sql="SHOW PARTITIONS {m}.db.t", cli=("partitions", "{c}.db.t"),
              rest=("GET", D + "/tables/t/partitions", None)),
    Operation("read system.tables", "SELECT", "catalog", sql="SELECT * FROM {m}.system.tables",
              dataframe=lambda spark, m: spark.table(f"{m}.system.tables").collect()),
    Operation("read the change feed", "SELECT", "project", sql="SELECT * FROM {m}.system.changes", cli=("changes",),
              rest=("GET", "/api/v1/changes", None)),
    Operation("read lineage", "SELECT", "project", sql="SELECT * FROM {m}.system.runs",
              rest=("GET", "/api/v1/lineage/datasets", None)),
    Operation("read system.grants", "MANAGE", "catalog", sql="SELECT * FROM {m}.system.grants"),
    Operation("read system.audit", "MANAGE", "project", sql="SELECT * FROM {m}.system.audit"),
    Operation("insert", "MODIFY", "table", sql="INSERT INTO {m}.db.t VALUES (1, 'a')",
              dataframe=lambda spark, m: _df(spark).writeTo(f"{m}.db.t").append()),
    Operation("insertInto", "MODIFY", "table", dataframe=lambda spark, m: _df(spark).write.insertInto(f"{m}.db.t")),
    Operation("add partition", "MODIFY", "table", sql="ALTER TABLE {m}.db.t ADD PARTITION (p = 'b')"),
    Operation("drop partition", "MODIFY", "table", sql="ALTER TABLE {m}.db.t DROP PARTITION (p = 'z')"),
    Operation("insert overwrite", "MODIFY", "table", sql="INSERT OVERWRITE {m}.db.t VALUES (2, 'a')",
              dataframe=lambda spark, m: _df(spark).writeTo(f"{m}.db.t").overwritePartitions()),
    Operation("alter table", "MANAGE", "table", sql="ALTER TABLE {m}.db.t SET TBLPROPERTIES ('k' = 'v')",
              cli=("meta", "tag", "{c}.db.t", "pii"),
              rest=("POST", "/api/v1/metadata/tags?catalog={c}&database=db&table=t", {"tags": ["pii"]})),
    Operation("set properties", "MANAGE", "table",
              rest=("POST", "/api/v1/metadata/properties?catalog={c}&database=db&table=t",
                    {"properties": {"k": "v"}})),
    Operation("create table", "CREATE", "database", sql="CREATE TABLE {m}.db.n (a INT) USING parquet",
              dataframe=lambda spark, m: _df(spark).writeTo(f"{m}.db.n2").using("parquet").create()),
    Operation("create namespace", "CREATE", "catalog", sql="CREATE NAMESPACE {m}.ns"),
    Operation("grant", "MANAGE", "table", sql="CALL {m}.system.grant('SELECT', 'db.t', 'user:carol')",
              cli=("grant", "SELECT", "ON", "TABLE", "{c}.db.t", "TO", "user:carol")),
    Operation("list external locations", "USE", "project", sql="CALL {m}.system.show_locations()",
              cli=("locations",), rest=("GET", "/api/v1/locations", None),
              connect="CALL {m}.system.show_locations()"),
    # the DataFrame API's placement of data at a path (CREATE TABLE … LOCATION): CREATE on the database (no
    # external location is declared on that surface, and the path lies outside the warehouse and every table)
    Operation("create an external table", "CREATE", "database",
              dataframe=lambda spark, m: _df(spark).writeTo(f"{m}.db.e").using("parquet")
              .tableProperty("location", _external_path(spark, m)).create()),
    Operation("declare an external location", "MANAGE", "project",
              sql="CALL {m}.system.create_location('l_{c}', '/tmp/ushas-matrix-locations/sql/{c}')",
              connect="CALL {m}.system.create_location('l_{c}', '{w}-locations/{c}')",
              cli=("locations", "create", "l_{c}", "/tmp/ushas-matrix-locations/cli/{c}"),
              rest=("POST", "/api/v1/locations", {"name": "l_{c}", "url": "/tmp/ushas-matrix-locations/rest/{c}"})),
    Operation("drop table", "MANAGE", "table", sql="DROP TABLE {m}.db.t", cli=("drop", "{c}.db.t")),
    Operation("undrop table", "MANAGE", "database", sql="CALL {m}.system.undrop_table('db.t')",
              cli=("undrop", "{c}.db.t")),
)


def expected(op: Operation, who: Principal) -> bool:
    """Whether ``who`` may make ``op``: its privilege, or OWN, granted on the object or an ancestor;
    USE with any privilege on, above or inside the object."""
    if who.privilege is None:
        return False
    if op.privilege == "USE":
        return True
    covers = LEVELS.index(who.level) <= LEVELS.index(op.level)
    return covers and who.privilege in ("OWN", op.privilege)


def refused_privileges(op: Operation, who: Principal) -> set[str]:
    """What a refusal of ``op`` to ``who`` may name: the privilege it needs; for a caller who may not
    even see the object, USE."""
    return {op.privilege} if who.privilege is not None else {op.privilege, "USE"}


def setup_store(ms: Metastore, warehouse: str, principals: tuple[Principal, ...] = PRINCIPALS) -> None:
    """Each principal's catalog, database and table (with partition ``p=z``) and its one grant, made by
    the store's administrator (``ms``: no identity)."""
    for who in principals:
        ms.create_catalog(who.catalog)
        ms.create_database((who.catalog, "db"), location=f"{warehouse}/{who.catalog}/db")
        ms.create_table((who.catalog, "db", "t"), schema="a INT, p STRING", partition_by=["p"])
        ms.add_partitions((who.catalog, "db", "t"), [{"p": "z"}])
        if who.privilege is not None:
            ms.grant(who.privilege, who.grant_object(), f"user:{who.user}")


class Probe:
    """Runs operations and checks their outcome against :func:`expected`, reading the store as its
    administrator (``ms``): a refusal must write nothing but its audit event."""

    def __init__(self, ms: Metastore, files: Callable[[Principal], Any] | None = None) -> None:
        self.ms = ms
        #: the data files of a principal's catalog (what a refusal must leave as it was), when the surface writes data
        self.files = files
        self.cursor: str | None = None
        self.cursor = self._last_cursor()

    def _last_cursor(self) -> str | None:
        last = self.cursor
        for change in self.ms.changes(self.cursor):
            last = change.cursor
        return last

    def keys(self) -> dict[bytes, bytes]:
        """Every key of the project but the change feed's, with its value."""
        layout = self.ms.layout
        begin, end = layout.project(self.ms.project).range()
        pairs = self.ms.db.run(lambda tr: list(tr.get_range(begin, end)))
        out = {}
        for kv in pairs:
            if "ChangeFeed" not in layout.keyspace.parse(bytes(kv.key)).directory_names:
                out[bytes(kv.key)] = bytes(kv.value)
        return out

    def run(self, op: Operation, who: Principal, call: Callable[[], Any],
            refusal: Callable[[BaseException | None, Any], str]) -> None:
        """``call()`` (which returns what a surface answers, or raises) as ``who``: allowed or refused as
        :func:`expected` says. ``refusal(error, answer)`` is the refusal's message ('' when the outcome
        is not a refusal)."""
        before = self.keys()
        files = self.files(who) if self.files is not None else None
        error: BaseException | None = None
        answer: Any = None
        try:
            answer = call()
        except Exception as e:  # noqa: BLE001 - what the surface raised is checked below
            error = e
        message = refusal(error, answer)
        where = f"{op.name} as {who.user}"
        if expected(op, who):
            assert not message and error is None, f"{where}: refused: {message or error}"
            self.cursor = self._last_cursor()
            return
        assert message, f"{where}: allowed, expected a refusal (error: {error}, answer: {answer})"
        assert f"User {who.user} does not have" in message or f"User {who.user} may not" in message, \
            f"{where}: {message}"
        # "does not have SELECT on table …"; a path read: "… of table …, and you hold neither SELECT on it nor …"
        shown = re.search(r"does not have (\w+)(?: or (\w+))? on", message) or \
            re.search(r"hold neither (\w+) on it", message)
        named = sorted(refused_privileges(op, who) & set(shown.groups() if shown else ()))
        assert named, f"{where}: the refusal names another privilege than {op.privilege}: {message}"
        if op.privilege in named:
            assert op.object_name(who.catalog) in message, f"{where}: the refusal names another object: {message}"
        after = self.keys()
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        assert not changed, f"{where}: the refusal wrote {[self.ms.layout.keyspace.parse(k) for k in changed]}"
        if self.files is not None:
            assert self.files(who) == files, f"{where}: the refusal changed data files"
        events = list(self.ms.changes(self.cursor))
        denied = [e for e in events if e.change == "ACCESS_DENIED"]
        assert denied and len(denied) == len(events), f"{where}: events {[e.change for e in events]}"
        assert any(who.user in e.user and set(named) & set(e.detail.get("privilege", "").split(" or ")) for e in denied), \
            f"{where}: {[(e.user, e.detail) for e in denied]}"
        self.cursor = events[-1].cursor


def fill(template: str, who: Principal, spark_catalog: str = "", warehouse: str = "") -> str:
    return template.format(m=spark_catalog, c=who.catalog, w=warehouse)


__all__ = ["LEVELS", "OPERATIONS", "PRINCIPALS", "Operation", "Principal", "Probe", "expected", "fill",
           "refused_privileges", "setup_store"]
