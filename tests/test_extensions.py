"""The catalog's extension registry (ushas_catalog.extensions): which extensions load (entry points, then the
built-in ones they do not name), what a missing or broken one does, and that two extensions cannot take the
same name. The lineage extension's own registrations: tests/test_architecture.py."""
from __future__ import annotations

import sys
import types
from typing import Any, Iterator

import pytest

from ushas_catalog.extensions import Extensions, Ref, load


@pytest.fixture
def fake_extension() -> Iterator[list[Any]]:
    """A module ``ushas_fake_ext`` whose ``register`` records each registry it fills."""
    calls: list[Any] = []
    module = types.ModuleType("ushas_fake_ext")

    def register(ext: Extensions) -> None:
        calls.append(ext)
        ext.add_command("fake", "ushas_fake_ext:register")

    module.register = register  # type: ignore[attr-defined]
    sys.modules["ushas_fake_ext"] = module
    yield calls
    del sys.modules["ushas_fake_ext"]


@pytest.mark.parametrize("declared, built_in, loaded", [
    ([], ("ushas_fake_ext:register",), ["ushas_fake_ext:register"]),            # no entry points: the built-in
    (["ushas_fake_ext:register"], ("ushas_fake_ext:register",), ["ushas_fake_ext:register"]),  # once, not twice
    (["ushas_fake_ext:register"], (), ["ushas_fake_ext:register"]),              # a third party's entry point
    ([], ("ushas_no_such_package.plugin:register", "ushas_fake_ext:register"),  # a build without a built-in
     ["ushas_fake_ext:register"]),
])
def test_which_extensions_load(fake_extension: list[Any], declared: list[str], built_in: tuple[str, ...],
                               loaded: list[str]) -> None:
    ext = load(built_in=built_in, declared=lambda: declared)
    assert ext.loaded == loaded
    assert len(fake_extension) == 1 and fake_extension[0] is ext
    assert ext.commands == {"fake": Ref("ushas_fake_ext:register")}


def test_a_declared_extension_that_cannot_load_is_an_error() -> None:
    with pytest.raises(ModuleNotFoundError, match="ushas_no_such_package"):
        load(built_in=(), declared=lambda: ["ushas_no_such_package.plugin:register"])
    with pytest.raises(AttributeError, match="no_register"):
        load(built_in=(), declared=lambda: ["ushas_catalog.extensions:no_register"])


def test_two_extensions_cannot_take_one_name() -> None:
    ext = Extensions()
    ext.add_command("fake", "ushas_fake_ext:register")
    with pytest.raises(ValueError, match="two extensions register the CLI command 'fake'"):
        ext.add_command("fake", "other:register")
    ext.add_bridge_op("x.event", "a:b")
    with pytest.raises(ValueError, match="bridge op 'x.event'"):
        ext.add_bridge_op("x.event", "c:d")


def test_the_process_registry_has_the_lineage_extension() -> None:
    """In this process (a source tree on PYTHONPATH, or an install with the entry point), lineage is loaded:
    ``ushas lineage``, the bridge's ``lineage.event`` and the lineage system tables are there."""
    from ushas_catalog.extensions import extensions
    from ushas_catalog.sql_tables.system_tables import TABLES, all_tables

    ext = extensions()
    assert "lineage.plugin:register" in ext.loaded
    assert "lineage" in ext.commands and "lineage.event" in ext.bridge_ops
    every = all_tables()
    assert {"runs", "dataset_access", "column_lineage", "table_lineage", "usage"} <= set(every) - set(TABLES)


@pytest.mark.parametrize("prefix", ["ushas_catalog.spark.", "ushas_catalog.", "builtins", ""])
def test_an_extension_cannot_widen_what_the_wire_decodes(prefix: str) -> None:
    """Remote mode decodes dataclasses only of the listed packages: an extension adds its own package, not
    the catalog's other packages nor a bare name (a prefix ends with a dot)."""
    with pytest.raises(ValueError, match="wire package"):
        Extensions().add_wire_package(prefix)


def test_remote_mode_decodes_lineage_values_only_with_the_lineage_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    """The service decodes a remote driver's captured runs (lineage's dataclasses and enums) because the
    lineage extension lists its package; without it, the same document is refused, not imported."""
    from lineage.store import RunStatus
    from ushas_catalog import extensions as registry
    from ushas_catalog.errors import InvalidArgument
    from ushas_catalog.remote import wire

    sent = wire.encode([RunStatus.FAIL])
    assert wire.decode(sent) == [RunStatus.FAIL]
    monkeypatch.setattr(registry, "extensions", Extensions)  # a process without extensions
    with pytest.raises(InvalidArgument, match="not one the catalog service exchanges"):
        wire.decode(sent)
