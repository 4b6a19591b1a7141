"""``df.lineage()`` for users of :mod:`ushas_catalog.spark`, without importing pyspark where nobody
uses a DataFrame: :func:`install` installs ``DataFrame.lineage`` (:mod:`lineage.dataframe`) now when
pyspark's DataFrame module is loaded, else right after it is (an import hook that removes itself).
So the bridge process the shim launches and CLI commands such as ``ushas jar`` never load pyspark."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any, Sequence

#: the module whose class gets ``lineage()``
DATAFRAME_MODULE = "pyspark.sql.classic.dataframe"


def _install_now() -> None:
    importlib.import_module("lineage.dataframe")


class _AfterDataFrameImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of :data:`DATAFRAME_MODULE` to install ``lineage()``
    once that module is executed, then leaves ``sys.meta_path``."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if fullname != DATAFRAME_MODULE:
            return None
        _remove()
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_then_install(module: ModuleType) -> None:
            exec_module(module)
            _install_now()

        loader.exec_module = exec_then_install  # type: ignore[method-assign]
        return spec


_HOOK = _AfterDataFrameImport()


def _remove() -> None:
    if _HOOK in sys.meta_path:
        sys.meta_path.remove(_HOOK)


def install() -> None:
    """``DataFrame.lineage`` now, or as soon as pyspark's DataFrame module is imported (idempotent)."""
    if DATAFRAME_MODULE in sys.modules:
        _install_now()
    elif _HOOK not in sys.meta_path:
        sys.meta_path.insert(0, _HOOK)
