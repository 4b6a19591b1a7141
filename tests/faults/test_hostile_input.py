"""Hostile names and values through the Python API, the CLI and the REST API (Spark SQL:
``test_hostile_spark.py``): each is stored and read back exactly or refused with a clear error and
nothing in the store changes (a dump of every key before and after); the store passes ``ushas
check`` after the accepted ones; and no tenant sees another's names."""
from __future__ import annotations

import json
import unicodedata
import urllib.parse
from typing import Any, Callable, Iterator

import pytest

from ushas_catalog.check import check_store
from ushas_catalog.cli import main
from ushas_catalog.errors import UshasError
from ushas_catalog.metastore import Metastore

from faults import hostile as H
from faults.store_fill import dump

STRING_COL = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}},
                                           {"name": "dt", "type": "string", "nullable": True, "metadata": {}}]}


@pytest.fixture
def base(store_uri: str) -> Iterator[Metastore]:
    ms = Metastore.open(store_uri, project="acme", user="tester")
    ms.create_catalog("main")
    ms.create_database("main.s")
    ms.create_table("main.s.p", STRING_COL, partition_by=["dt"])
    yield ms
    ms.close()


def _column(v: str) -> dict[str, Any]:
    return {"type": "struct", "fields": [{"name": v, "type": "string", "nullable": True, "metadata": {}}]}


def _col_comment(v: str) -> dict[str, Any]:
    return {"type": "struct", "fields": [{"name": "a", "type": "string", "nullable": True,
                                          "metadata": {"comment": v}}]}


#: slot -> (outcome table, write(ms, value), read back(ms, value) -> the stored value)
Slot = tuple[dict[str, object], Callable[[Metastore, str], Any], Callable[[Metastore, str], Any]]
SLOTS: dict[str, Slot] = {
    "catalog": (H.NAME, lambda ms, v: ms.create_catalog((v,)),
                lambda ms, v: [c.name for c in ms.list_catalogs() if c.name != "main"][0]),
    "database": (H.NAME, lambda ms, v: ms.create_database(("main", v)),
                 lambda ms, v: [d.name for d in ms.list_databases("main") if d.name != "s"][0]),
    "table": (H.NAME, lambda ms, v: ms.create_table(("main", "s", v), "id INT"),
              lambda ms, v: [t.name for t in ms.list_tables("main.s") if t.name != "p"][0]),
    "view": (H.NAME, lambda ms, v: ms.create_view(("main", "s", v), "SELECT 1 AS x", "x INT"),
             lambda ms, v: [t.name for t in ms.list_views("main.s")][0]),
    "column": (H.COLUMN, lambda ms, v: ms.create_table("main.s.c", _column(v)),
               lambda ms, v: ms.get_table("main.s.c").schema.fields[0].name),
    "table_comment": (H.COMMENT, lambda ms, v: ms.create_table("main.s.c", "id INT", comment=v),
                      lambda ms, v: ms.get_table("main.s.c").comment),
    "column_comment": (H.COLUMN_COMMENT, lambda ms, v: ms.create_table("main.s.c", _col_comment(v)),
                       lambda ms, v: ms.get_table("main.s.c").schema.fields[0].comment),
    "database_comment": (H.COMMENT, lambda ms, v: ms.create_database("main.d2", comment=v),
                         lambda ms, v: ms.get_database("main.d2").comment),
    "property_key": (H.PROPERTY_KEY, lambda ms, v: ms.create_table("main.s.c", "id INT", properties={v: "1"}),
                     lambda ms, v: [k for k in ms.get_table("main.s.c").properties if k == v][0]),
    "property_value": (H.PROPERTY_VALUE, lambda ms, v: ms.create_table("main.s.c", "id INT", properties={"k": v}),
                       lambda ms, v: ms.get_table("main.s.c").properties["k"]),
    "partition_value": (H.PARTITION_VALUE, lambda ms, v: ms.add_partitions("main.s.p", [{"dt": v}]),
                        lambda ms, v: [p.values["dt"] for p in ms.list_partitions("main.s.p")][0]),
    "tag": (H.TAG, lambda ms, v: ms.metadata.tag("main.s.p", [v]),
            lambda ms, v: ms.metadata.get("main.s.p").scope(_user()).tags[0]),
    "meta_value": (H.META_VALUE, lambda ms, v: ms.metadata.set("main.s.p", {"k": v}),
                   lambda ms, v: ms.metadata.get("main.s.p").scope(_user()).properties["k"]),
}


def _user() -> Any:
    from ushas_catalog.metadata.store import Scope

    return Scope.USER


def _expect(outcome: object, value: str) -> Any:
    if outcome == H.LOWER:
        return value.lower()
    if outcome == H.NULL:
        return None
    return value


def _error_text(exc: BaseException) -> str:
    return exc.message if isinstance(exc, UshasError) else str(exc)


ALL_CASES = [(slot, vid) for slot in SLOTS for vid in H.VALUES]


@pytest.mark.parametrize("slot,vid", ALL_CASES, ids=[f"{s}-{v}" for s, v in ALL_CASES])
def test_python_api(base: Metastore, store_uri: str, slot: str, vid: str) -> None:
    table, write, read = SLOTS[slot]
    value = H.VALUES[vid]
    outcome = H.expected(table, vid)
    before = dump(base, project_only=False)
    if isinstance(outcome, H.Refused):
        with pytest.raises(UshasError) as info:
            write(base, value)
        assert outcome.text in info.value.message
        assert len(info.value.message) < 400  # one readable line, never the 100 kB value
        assert dump(base, project_only=False) == before
        return
    write(base, value)
    assert read(base, value) == _expect(outcome, value)
    report = check_store(store_uri, "acme")
    assert report.ok, report.lines()


def test_normalisation_twins_are_two_names_read_back_exactly(base: Metastore, store_uri: str) -> None:
    nfc, nfd = H.VALUES["nfc"], H.VALUES["nfd"]
    assert nfc != nfd and unicodedata.normalize("NFC", nfd) == nfc
    base.create_table(("main", "s", nfc), "id INT", comment="composed")
    base.create_table(("main", "s", nfd), "id INT", comment="decomposed")
    assert base.get_table(("main", "s", nfc)).comment == "composed"
    assert base.get_table(("main", "s", nfd)).comment == "decomposed"
    assert sorted(t.name for t in base.list_tables("main.s")) == sorted(["p", nfc, nfd])
    base.add_partitions("main.s.p", [{"dt": nfc}, {"dt": nfd}])
    assert sorted(p.values["dt"] for p in base.list_partitions("main.s.p")) == sorted([nfc, nfd])
    assert check_store(store_uri, "acme").ok


@pytest.mark.parametrize("vid", list(H.VALUES))
def test_search_queries(base: Metastore, vid: str) -> None:
    base.metadata.tag("main.s.p", ["pii"])
    value = H.VALUES[vid]
    outcome = H.expected(H.SEARCH, vid)
    before = dump(base, project_only=False)
    if isinstance(outcome, H.Refused):
        with pytest.raises(UshasError) as info:
            base.search(value)
        assert outcome.text in info.value.message and len(info.value.message) < 400
    else:
        page = base.search(value)
        assert page.total == 0 and page.hits == []
    assert dump(base, project_only=False) == before


# ---- the CLI (in-process main: argv may hold any string) ------------------------------------------
def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        rc = main(list(argv))
    except SystemExit as exc:  # argparse-level refusals (bad bytes in an argument)
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


CLI_CASES = [(slot, vid) for slot in ("meta_value", "tag", "search") for vid in H.VALUES]


@pytest.mark.parametrize("slot,vid", CLI_CASES, ids=[f"{s}-{v}" for s, v in CLI_CASES])
def test_cli(base: Metastore, store_uri: str, capsys: pytest.CaptureFixture[str], slot: str, vid: str) -> None:
    value = H.VALUES[vid]
    g = ["--uri", store_uri, "--project", "acme"]
    argv = {"meta_value": [*g, "meta", "set", "main.s.p", f"k={value}"],
            "tag": [*g, "meta", "tag", "main.s.p", value],
            "search": [*g, "search", value, "--json"]}[slot]
    table = {"meta_value": H.META_VALUE, "tag": H.TAG, "search": H.SEARCH}[slot]
    outcome = H.expected(table, vid)
    before = dump(base, project_only=False)
    rc, out, err = _cli(capsys, *argv)
    if isinstance(outcome, H.Refused):
        assert rc == 2, (out, err)
        text = "NUL character" if vid == "nul" else outcome.text  # a NUL never reaches the command
        assert err.startswith("ushas: ") and err.count("\n") == 1 and text in err, err[:500]
        assert len(err) < 400
        assert dump(base, project_only=False) == before
        return
    assert rc == 0, err[:500]
    if slot == "search":
        assert json.loads(out)["total"] == 0
        assert dump(base, project_only=False) == before
        return
    rc, out, err = _cli(capsys, *g, "meta", "show", "main.s.p", "--json")
    user = json.loads(out)["USER"]
    assert (user["properties"]["k"] if slot == "meta_value" else user["tags"][0]) == value


@pytest.mark.parametrize("vid", [v for v in H.VALUES if not isinstance(H.expected(H.NAME, v), H.Refused)])
def test_cli_reads_back_accepted_names_exactly(base: Metastore, store_uri: str,
                                               capsys: pytest.CaptureFixture[str], vid: str) -> None:
    name = H.VALUES[vid].lower()
    base.create_table(("main", "s", name), "id INT", comment=H.VALUES["rtl"])
    from ushas_catalog.model.names import TableName

    qualified = str(TableName("main", "s", name))
    rc, out, err = _cli(capsys, "--uri", store_uri, "--project", "acme", "describe", qualified, "--json")
    assert rc == 0, err
    info = json.loads(out)
    assert info["name"] == name and info["comment"] == H.VALUES["rtl"]
    rc, out, err = _cli(capsys, "--uri", store_uri, "--project", "acme", "tables", "main.s", "--json")
    assert name in [t["name"] for t in json.loads(out)]


# ---- the REST API (the UI's JSON endpoints, Flask's test client) ---------------------------------
@pytest.fixture
def client(base: Metastore, store_uri: str) -> Iterator[Any]:
    app = _api_app(store_uri, "acme")
    yield app.test_client()
    app.config["USHAS"].close()


def _api_app(store_uri: str, project: str) -> Any:
    """The service's app (the UI page and API v1) over ``store_uri``, for Flask's test client."""
    from ushas_catalog.service.api import register_api
    from ushas_catalog.ui.app import create_app

    app = create_app(store_uri, project)
    register_api(app, app.config["USHAS"])
    return app


def _q(part: str) -> str:
    return urllib.parse.quote(part, safe="")


@pytest.mark.parametrize("vid", list(H.VALUES))
def test_rest_reads_hostile_names(base: Metastore, client: Any, vid: str) -> None:
    value = H.VALUES[vid]
    accepted = not isinstance(H.expected(H.NAME, vid), H.Refused)
    if accepted:
        base.create_table(("main", "s", value.lower()), STRING_COL, partition_by=["dt"], comment=value[:4000]
                          if not isinstance(H.expected(H.COMMENT, vid), H.Refused) else None)
        base.add_partitions(("main", "s", value.lower()), [{"dt": H.VALUES["quotes"]}])
    before = dump(base, project_only=False)
    table = f"/api/v1/catalogs/main/databases/s/tables/{_q(value.lower())}"
    r = client.get(table)
    if accepted:
        assert r.status_code == 200, r.data[:300]
        assert r.json["name"] == value.lower()
        parts = client.get(f"{table}/partitions").json
        assert [p["spec"]["dt"] for p in parts["items"]] == [H.VALUES["quotes"]]
    else:
        assert 400 <= r.status_code < 500, (r.status_code, r.data[:300])
        assert "error" in r.json and len(r.data) < 2000
    s = client.get(f"/api/v1/search?q={_q(value)}")
    if isinstance(H.expected(H.SEARCH, vid), H.Refused):
        assert s.status_code == 400 and "NUL" in json.dumps(s.json)
    else:
        assert s.status_code == 200, s.data[:300]
    prefix = client.get(f"/api/v1/catalogs/main/databases/s/tables/p/partitions?prefix={_q('dt=' + value)}")
    assert prefix.status_code in (200, 400, 404), prefix.data[:300]
    assert dump(base, project_only=False) == before  # reads never write


# ---- tenants ---------------------------------------------------------------------------------------
def test_tenants_never_see_each_others_names(store_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    with Metastore.open(store_uri, project="zeta") as z:
        z.create_catalog("zcat")
        z.create_database("zcat.zdb")
        z.create_table("zcat.zdb.ztable", "zcolumn INT, dt STRING", partition_by=["dt"], comment="zcomment")
        z.add_partitions("zcat.zdb.ztable", [{"dt": "zpart"}])
        z.metadata.tag("zcat.zdb.ztable", ["ztag"])
        z.metadata.set("zcat.zdb.ztable", {"zkey": "zvalue"})
        # the same catalog / table names in both tenants: each sees its own
        z.create_catalog("main")
        z.create_database("main.s")
        z.create_table("main.s.p", "zonly INT")
    with Metastore.open(store_uri, project="acme") as a:
        a.create_catalog("main")
        a.create_database("main.s")
        a.create_table("main.s.p", "id INT")
        a.metadata.tag("main.s.p", ["atag"])
        assert [c.name for c in a.list_catalogs()] == ["main"]
        assert [f.name for f in a.get_table("main.s.p").schema.fields] == ["id"]
        for q in ("ztag", "zkey", "zvalue", "zcolumn", "ztable", "zcomment", "z*", "zkey=zvalue", "tag:ztag"):
            assert a.search(q).total == 0, q
        with pytest.raises(UshasError):
            a.get_table("zcat.zdb.ztable")
        assert a.search("atag").total == 1
        changes = [c.name for c in a.changes()]
        assert changes and not any("z" in n for n in changes)
    g = ["--uri", store_uri, "--project", "acme"]
    texts = []
    for argv in (["catalogs"], ["databases"], ["tables", "main.s"], ["search", "z*"], ["search", "ztag"],
                 ["changes"], ["describe", "main.s.p"], ["stats"], ["history", "main.s.p"]):
        rc, out, err = _cli(capsys, *g, *argv, "--json")
        texts.append(out + err)
    rc, out, err = _cli(capsys, *g, "describe", "zcat.zdb.ztable")
    assert rc == 1 and "does not exist" in err
    app = _api_app(store_uri, "acme")
    try:
        c = app.test_client()
        for url in ("/api/v1/catalogs", "/api/v1/catalogs/main/databases",
                    "/api/v1/catalogs/main/databases/s/relations", "/api/v1/catalogs/main/databases/s/tables/p",
                    "/api/v1/search?q=z*", "/api/v1/search?q=ztag", "/api/v1/lineage/datasets", "/api/v1/info",
                    "/api/v1/changes", "/api/v1/metadata?name=main.s.p"):
            texts.append(c.get(url).get_data(as_text=True))
        assert c.get("/api/v1/catalogs/zcat/databases/zdb/tables/ztable").status_code == 404
    finally:
        app.config["USHAS"].close()
    everything = "\n".join(texts)
    for word in ("zcat", "zdb", "ztable", "ztag", "zkey", "zvalue", "zcolumn", "zcomment", "zpart", "zonly", "zeta"):
        assert word not in everything, word
