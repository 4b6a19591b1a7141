"""The catalog's extension points, and the ONE registry of what the installed extensions put there.

The catalog never imports an extension (``lineage`` is one: docs/internals/architecture.md, "Extensions").
An extension is a module with ``register(ext: Extensions)``; it names its implementations as
``"module:attribute"`` references (:class:`Ref`), imported on first use, so that loading the extensions
imports nothing heavy (no Flask in the Spark bridge, no pyspark in the CLI).

Which extensions: every entry point of the group ``ushas_catalog.extensions`` (``pyproject.toml``:
``lineage = "lineage.plugin:register"``; a third party declares its own), plus the modules of
:data:`BUILT_IN` not named by an entry point (this distribution's own, so that a source tree on
``PYTHONPATH`` or an install made before the group existed works the same), one of which that cannot be
imported is left out (a build without it).

The extension points (fields of :class:`Extensions`):

- ``commands``: CLI command groups, name -> ``register(subparsers)`` (``ushas lineage ...``);
- ``routes``: REST API v1 routes, ``register(blueprint, state, namespaces)`` with the privilege on the
  project every endpoint made with ``state.endpoint`` needs under ``ushas serve --authorization``;
- ``bridge_ops``: ops of the Spark bridge answered without the metastore's lock, op ->
  ``handler(request, may_create) -> answer`` (the lineage listener's ``lineage.event``);
- ``process_services``: one object per process, name -> ``factory()``, made at first use and closed with
  the bridge's registry (the lineage capture hub: ``REGISTRY.service("lineage")``);
- ``service_stores``: the service's per-store handles, name -> ``open(uri, project) -> handle`` (``stores.lineage``
  of ``ushas serve`` and ``ushas ui``, closed with ``handle.close()``);
- ``read_stores``: name -> ``open(metastore) -> store`` over a metastore's (joined) database, what the system
  and metadata tables read (``ReadContext.store("lineage")``);
- ``system_tables``: ``-> dict[name, TableDef]`` added to ``<catalog>.system``;
- ``dataframe_methods``: pyspark module -> the modules to import once it is loaded (``df.lineage()``);
- ``demo_sections``: what ``ushas demo`` shows after its pipeline (an object with ``wait(uri, project,
  dataset, timeout) -> bool`` and ``report(uri, project, dataset, column) -> DemoReport``);
- ``wire_packages``: package prefixes whose dataclasses and enums remote mode's wire encoding may decode
  (:mod:`ushas_catalog.remote.wire`; ``lineage.``: the captured runs a remote-mode driver sends).
"""
from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

#: the entry-point group extensions declare themselves in
GROUP = "ushas_catalog.extensions"
#: this distribution's own extensions (``"module:function"``), loaded even where the entry points are not
#: installed (a source tree on PYTHONPATH, an editable install made before the group existed)
BUILT_IN: tuple[str, ...] = ("lineage.plugin:register",)


@dataclass(frozen=True)
class Ref:
    """``"module:attribute"``, imported when first loaded."""

    target: str

    def load(self) -> Any:
        module, _, attribute = self.target.partition(":")
        found: Any = importlib.import_module(module)
        for part in attribute.split(".") if attribute else ():
            found = getattr(found, part)
        return found


@dataclass(frozen=True)
class Routes:
    """REST routes of an extension: ``register(blueprint, state, namespaces)``; ``need``: the privilege
    on the project (``SELECT``, ``MODIFY``) each ``state.endpoint`` view checks under authorization
    (None: the routes check their callers themselves)."""

    register: Ref
    need: str | None


@dataclass(frozen=True)
class DemoReport:
    """What a demo section adds: ``key`` of its JSON answer, that answer, its text, and closing hints."""

    key: str
    data: Any
    text: str
    hints: tuple[str, ...] = ()


@dataclass
class Extensions:
    """What the loaded extensions registered (see the module's docstring for each point)."""

    commands: dict[str, Ref] = field(default_factory=dict)
    routes: list[Routes] = field(default_factory=list)
    bridge_ops: dict[str, Ref] = field(default_factory=dict)
    process_services: dict[str, Ref] = field(default_factory=dict)
    service_stores: dict[str, Ref] = field(default_factory=dict)
    read_stores: dict[str, Ref] = field(default_factory=dict)
    system_tables: list[Ref] = field(default_factory=list)
    dataframe_methods: dict[str, list[str]] = field(default_factory=dict)
    demo_sections: list[Ref] = field(default_factory=list)
    wire_packages: list[str] = field(default_factory=list)
    #: the extensions loaded, by the reference of their ``register``
    loaded: list[str] = field(default_factory=list)

    def add_command(self, name: str, register: str) -> None:
        self._unique(self.commands, name, "CLI command")
        self.commands[name] = Ref(register)

    def add_routes(self, register: str, need: str | None) -> None:
        self.routes.append(Routes(Ref(register), need))

    def add_bridge_op(self, op: str, handler: str) -> None:
        self._unique(self.bridge_ops, op, "bridge op")
        self.bridge_ops[op] = Ref(handler)

    def add_process_service(self, name: str, factory: str) -> None:
        self._unique(self.process_services, name, "process service")
        self.process_services[name] = Ref(factory)

    def add_service_store(self, name: str, opener: str) -> None:
        self._unique(self.service_stores, name, "service store")
        self.service_stores[name] = Ref(opener)

    def add_read_store(self, name: str, opener: str) -> None:
        self._unique(self.read_stores, name, "read store")
        self.read_stores[name] = Ref(opener)

    def add_system_tables(self, tables: str) -> None:
        self.system_tables.append(Ref(tables))

    def add_dataframe_method(self, pyspark_module: str, installer_module: str) -> None:
        self.dataframe_methods.setdefault(pyspark_module, []).append(installer_module)

    def add_demo_section(self, section: str) -> None:
        self.demo_sections.append(Ref(section))

    def add_wire_package(self, prefix: str) -> None:
        if not prefix.endswith(".") or prefix.startswith("ushas_catalog"):
            raise ValueError(f"a wire package is a package prefix of the extension's own, ending in '.': {prefix!r}")
        if prefix not in self.wire_packages:
            self.wire_packages.append(prefix)

    @staticmethod
    def _unique(table: dict[str, Any], name: str, what: str) -> None:
        if name in table:
            raise ValueError(f"two extensions register the {what} {name!r}")


def _entry_points() -> list[str]:
    from importlib.metadata import entry_points

    return [ep.value for ep in entry_points(group=GROUP)]


def load(built_in: tuple[str, ...] = BUILT_IN, declared: Callable[[], list[str]] = _entry_points) -> Extensions:
    """A registry filled by every extension: the entry points' and the built-in ones not among them (one
    that cannot be imported, because its package is not there, is left out)."""
    ext = Extensions()
    names = list(dict.fromkeys(declared()))
    for target in names + [b for b in built_in if b not in names]:
        ref = Ref(target)
        try:
            register = ref.load()
        except ModuleNotFoundError as exc:
            module = target.partition(":")[0]
            if target in names or exc.name is None or not (module == exc.name or module.startswith(exc.name + ".")):
                raise  # a declared extension that is broken, or a missing dependency of one: not silent
            continue
        register(ext)
        ext.loaded.append(target)
    return ext


_LOCK = threading.Lock()
_LOADED: list[Extensions] = []


def extensions() -> Extensions:
    """The registry of this process, loaded at the first call."""
    with _LOCK:
        if not _LOADED:
            _LOADED.append(load())
        return _LOADED[0]


__all__ = ["BUILT_IN", "DemoReport", "Extensions", "GROUP", "Ref", "Routes", "extensions", "load"]
