"""The public API at the package top (issue 36): ``from ushas_catalog import Metastore, SetProperty, ...``,
the same classes as their modules', without importing pyspark or protobuf."""
from __future__ import annotations

import subprocess
import sys

import pytest

import ushas_catalog
from ushas_catalog.model import table_changes


@pytest.mark.parametrize("name", ushas_catalog.TABLE_CHANGES)
def test_table_changes_at_the_top(name: str) -> None:
    assert getattr(ushas_catalog, name) is getattr(table_changes, name)
    assert name in ushas_catalog.__all__


def test_importing_the_top_stays_light() -> None:
    code = ("import sys; import ushas_catalog; print(sorted(m for m in ('pyspark', 'google.protobuf') "
            "if m in sys.modules)); from ushas_catalog import SetProperty; print('pyspark' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["[]", "False"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="^NoSuchThing$"):
        ushas_catalog.NoSuchThing  # noqa: B018
