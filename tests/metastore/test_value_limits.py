"""Limits on single values at the edge (issue 25): refused with LimitExceeded naming the limit, and
whatever is accepted can be altered, renamed, dropped and purged later."""
from __future__ import annotations

import pytest

from ushas_catalog.model import value_limits as vl
from ushas_catalog.errors import LimitExceeded
from ushas_catalog.metastore import Metastore
from ushas_catalog.model.table_changes import SetProperty

MB = 1_000_000


def _limit(exc: pytest.ExceptionInfo[LimitExceeded]) -> str:
    return exc.value.limit


def test_four_megabyte_properties_are_refused_at_create(sales: Metastore) -> None:
    props = {f"k{i}": "x" * MB for i in range(4)}
    with pytest.raises(LimitExceeded) as e:
        sales.create_table("main.sales.t", "id long", properties=props)
    assert _limit(e) == "property_value_bytes" and "property_value_bytes" in str(e.value)
    assert not sales.table_exists("main.sales.t")


@pytest.mark.parametrize("call, limit", [
    (lambda ms: ms.create_table("main.sales.t", "id long", comment="c" * (vl.MAX_COMMENT_BYTES + 1)), "comment_bytes"),
    (lambda ms: ms.create_table("main.sales.t", "id long", properties={"k" * 1001: "v"}), "property_key_bytes"),
    (lambda ms: ms.create_table("main.sales.t", "id long",
                                properties={f"k{i}": "v" * 90_000 for i in range(12)}), "properties_bytes"),
    (lambda ms: ms.create_table("main.sales.t", "id long", location="/" + "l" * vl.MAX_TEXT_BYTES), "text_bytes"),
    (lambda ms: ms.create_catalog("big", comment="c" * (vl.MAX_COMMENT_BYTES + 1)), "comment_bytes"),
    (lambda ms: ms.create_database("main.big", properties={"k": "v" * (vl.MAX_PROPERTY_VALUE_BYTES + 1)}),
     "property_value_bytes"),
    (lambda ms: ms.create_view("main.sales.v", "select 1 " + "-" * 1_600_000, "x int"), "record_bytes"),
    (lambda ms: ms.create_table("main.sales.t", "id long, " + ", ".join(f"c{i} string comment '{'z' * 99}'"
                                                                        for i in range(12_000))),
     "record_bytes"),
])
def test_each_limit_is_named(sales: Metastore, call, limit: str) -> None:
    with pytest.raises(LimitExceeded) as e:
        call(sales)
    assert _limit(e) == limit


def test_partition_values_have_a_limit(sales: Metastore) -> None:
    sales.create_table("main.sales.p", "id long, dt string", partition_by=["dt"])
    with pytest.raises(LimitExceeded) as e:
        sales.add_partitions("main.sales.p", [{"dt": "d" * 3000}])
    assert _limit(e) == "partition_key_bytes"
    assert sales.add_partitions("main.sales.p", [{"dt": "d" * 1500}]).added == 1


def test_alter_cannot_grow_a_table_past_its_limits(sales: Metastore) -> None:
    sales.create_table("main.sales.t", "id long")
    for i in range(9):
        sales.alter_table("main.sales.t", [SetProperty(f"k{i}", "v" * 99_000)])
    with pytest.raises(LimitExceeded) as e:
        sales.alter_table("main.sales.t", [SetProperty("k9", "v" * 99_000), SetProperty("k10", "v" * 99_000)])
    assert _limit(e) == "properties_bytes" or _limit(e) == "record_bytes"


def test_what_is_accepted_at_the_limits_can_be_altered_renamed_dropped_and_purged(sales: Metastore) -> None:
    """The biggest table the limits accept goes through every later operation."""
    props = {f"k{i}": "v" * (vl.MAX_PROPERTY_VALUE_BYTES - 10) for i in range(9)}
    sales.create_table("main.sales.big", "id long, dt string", partition_by=["dt"], properties=props,
                       comment="c" * vl.MAX_COMMENT_BYTES)
    sales.alter_table("main.sales.big", [SetProperty("k0", "w" * (vl.MAX_PROPERTY_VALUE_BYTES - 10))])
    sales.rename_table("main.sales.big", "main.sales.big2")
    sales.create_database("main.other")
    sales.rename_table("main.sales.big2", "main.other.big3")
    sales.drop_table("main.other.big3")
    sales.undrop_table("main.other.big3")
    sales.drop_table("main.other.big3")
    assert sales.purge_table("main.other.big3") == 1
    sales.create_view("main.sales.v", "select 1 -- " + "x" * 900_000, "x int")
    sales.alter_view("main.sales.v", sql="select 2 -- " + "y" * 900_000, schema="x int")
    sales.drop_view("main.sales.v")
    sales.create_catalog("big", properties={f"k{i}": "v" * 99_000 for i in range(9)})
    sales.alter_catalog("big", set_properties={"k0": "w" * 99_000})
    sales.drop_catalog("big", cascade=True, purge=True)
