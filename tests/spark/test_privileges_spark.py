"""The privilege matrix through Spark SQL and the DataFrame API (docs/governance.md): each privilege
granted on a table (or its database) x each operation, allowed or refused with
``[INSUFFICIENT_PERMISSIONS]``, a refusal writing nothing. Two catalog instances of the shared session
on one fresh project: ``adm`` (user admin, OWN on the project) and ``bob`` (user bob), both with
``authorization=true``; bob's privileges change between cases (each check reads the policy in the
call's transaction: no cache to wait for)."""
from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Callable

import pytest

from ushas_catalog.metastore import Metastore
from user_catalogs import user_catalog

PRIVILEGES = (None, "USE", "SELECT", "MODIFY", "MANAGE", "OWN")


@pytest.fixture(scope="module")
def gov(spark: Any, spark_dirs: dict[str, Path]) -> Any:
    project = "gov_" + uuid.uuid4().hex[:8]
    uri = f"sqlite:///{spark_dirs['store']}"
    store_admin = Metastore.open(uri, project=project)  # no identity: the store's administrator
    store_admin.grant("OWN", "project", "user:admin")
    names = {}
    for role, user in (("adm", "admin"), ("bob", "bob")):
        names[role] = user_catalog(spark, f"g{role}", uri=uri, project=project,
                                   warehouse=str(spark_dirs["warehouse"]), user=user)
    adm = names["adm"]
    spark.sql(f"CREATE NAMESPACE {adm}.db")
    yield type("Gov", (), {"adm": adm, "bob": names["bob"], "ms": store_admin, "project": project})
    store_admin.close()


def denied(fn: Callable[[], Any]) -> str:
    with pytest.raises(Exception) as info:
        fn()
    text = str(info.value)
    assert "[INSUFFICIENT_PERMISSIONS]" in text and "User bob does not have" in text, text
    return text


def needs(op: str) -> str:
    return {"select": "SELECT", "df_read": "SELECT", "history": "SELECT", "insert": "MODIFY", "df_append": "MODIFY",
            "alter": "MANAGE", "grant": "MANAGE", "describe": "USE", "drop": "MANAGE"}[op]


def partitions(ms: Metastore, table: str) -> list[str]:
    return [str(p.spec) for p in ms.list_partitions(("main", "db", table))]


def allowed(privilege: str | None, wanted: str) -> bool:
    return privilege is not None and (privilege in ("OWN", wanted) or wanted == "USE")


@pytest.mark.parametrize("privilege", PRIVILEGES, ids=lambda p: p or "none")
def test_table_privilege_matrix(spark: Any, gov: Any, privilege: str | None) -> None:
    t = "t_" + (privilege or "none").lower()
    adm_t, bob_t = f"{gov.adm}.db.{t}", f"{gov.bob}.db.{t}"
    spark.sql(f"CREATE TABLE {adm_t} (a INT, p STRING) USING parquet PARTITIONED BY (p)")
    if privilege is not None:
        gov.ms.grant(privilege, ("main", "db", t), "user:bob")
    ops: dict[str, Callable[[], Any]] = {
        "describe": lambda: spark.sql(f"DESCRIBE TABLE {bob_t}").collect(),
        "select": lambda: spark.sql(f"SELECT * FROM {bob_t}").collect(),
        "df_read": lambda: spark.table(bob_t).collect(),
        "history": lambda: spark.sql(f"SELECT * FROM {bob_t}.history").collect(),
        "insert": lambda: spark.sql(f"INSERT INTO {bob_t} VALUES (2, 'y')"),
        "df_append": lambda: spark.createDataFrame([(3, "z")], "a INT, p STRING").writeTo(bob_t).append(),
        "alter": lambda: spark.sql(f"ALTER TABLE {bob_t} SET TBLPROPERTIES ('k' = 'v')"),
        "grant": lambda: spark.sql(f"CALL {gov.bob}.system.grant('SELECT', 'db.{t}', 'user:carol')").collect(),
        "drop": lambda: spark.sql(f"DROP TABLE {bob_t}"),
    }
    writes = ("insert", "df_append", "drop")
    for op, run in ops.items():
        rows_before = partitions(gov.ms, t)
        if allowed(privilege, needs(op)):
            run()
        else:
            message = denied(run)
            named = {needs(op)} if allowed(privilege, "USE") else {"USE", needs(op)}  # none: not even USE
            assert any(f"have {n} on table main.db.{t}" in message for n in named), message
            if op in writes:  # nothing written
                assert partitions(gov.ms, t) == rows_before and gov.ms.table_exists(("main", "db", t))
    if not allowed(privilege, "MANAGE"):
        props = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {adm_t}").collect()}
        assert "k" not in props
        assert not any(g.principal == "user:carol" for g in gov.ms.grants(("main", "db", t)))


@pytest.mark.parametrize("privilege", (None, "USE", "CREATE", "OWN"), ids=lambda p: p or "none")
def test_create_needs_create_on_the_database(spark: Any, gov: Any, privilege: str | None) -> None:
    db = "c_" + (privilege or "none").lower()
    spark.sql(f"CREATE NAMESPACE {gov.adm}.{db}")
    if privilege is not None:
        gov.ms.grant(privilege, ("main", db), "user:bob")
    create = lambda: spark.sql(f"CREATE TABLE {gov.bob}.{db}.n (a INT) USING parquet")  # noqa: E731
    if privilege in ("CREATE", "OWN"):
        create()
        owners = [g for g in gov.ms.grants(("main", db, "n")) if g.privilege == "OWN" and not g.inherited_from]
        assert [g.principal for g in owners] == ["user:bob"]  # the creator owns what it creates
    else:
        message = denied(create)
        assert f"have {'CREATE' if privilege else 'USE'} on database main.{db}" in message, message
        assert not gov.ms.table_exists(("main", db, "n"))


def test_roles_grants_and_audit_through_procedures(spark: Any, gov: Any) -> None:
    adm = gov.adm
    spark.sql(f"CREATE TABLE {adm}.db.r (a INT) USING parquet")
    spark.sql(f"CALL {adm}.system.create_role('analysts')").collect()
    spark.sql(f"CALL {adm}.system.grant_role('analysts', 'user:bob')").collect()
    (row,) = spark.sql(f"CALL {adm}.system.grant('select', 'db', 'role:analysts')").collect()
    assert (row.action, row.object) == ("GRANT", "main.db")
    assert spark.sql(f"SELECT * FROM {gov.bob}.db.r").collect() == []  # SELECT on the database, through the role
    principals = {r.principal for r in spark.sql(f"CALL {gov.bob}.system.current_principals()").collect()}
    assert principals == {"user:bob", "role:analysts"}
    shown = spark.sql(f"CALL {adm}.system.show_grants('db.r')").collect()
    assert any(r.principal == "role:analysts" and r.inherited_from == "database main.db" for r in shown)
    assert any(r.principal == "role:analysts" for r in spark.sql(f"SELECT * FROM {adm}.system.grants").collect())
    spark.sql(f"CALL {adm}.system.revoke('SELECT', 'db', 'role:analysts')").collect()
    denied(lambda: spark.sql(f"SELECT * FROM {gov.bob}.db.r").collect())
    denied(lambda: spark.sql(f"SELECT * FROM {gov.bob}.system.audit").collect())  # administrators only
    audit = spark.sql(f"SELECT change, operation, user, principal FROM {adm}.system.audit").collect()
    changes = {(r.change, r.operation) for r in audit}
    assert {("ROLE_CHANGED", "CREATE ROLE"), ("ROLE_CHANGED", "ADD MEMBER"), ("GRANTED", "GRANT"),
            ("REVOKED", "REVOKE"), ("ACCESS_DENIED", "DENIED")} <= changes
    assert any(r.change == "ACCESS_DENIED" and r.user == "bob" for r in audit)
    history = spark.sql(f"SELECT user FROM {adm}.db.r.history").collect()
    assert [r.user for r in history] == ["admin"]  # the caller's identity on its commits
