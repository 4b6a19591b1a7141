"""``df.lineage()`` for users of :mod:`ushas_catalog.spark`, without importing pyspark where nobody
uses a DataFrame: :func:`install` runs the installers the extensions registered for pyspark's DataFrame
modules (:data:`ushas_catalog.extensions.Extensions.dataframe_methods`: the lineage extension's
``lineage.dataframe``, and ``lineage.connect`` for Spark Connect's DataFrame) now when such a module is
loaded, else right after it is (an import hook per module that removes itself).
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
#: Spark Connect's DataFrame module -> the module installing its ``lineage()``
CONNECT_DATAFRAME_MODULE = "pyspark.sql.connect.dataframe"


def _install_now(module: str = DATAFRAME_MODULE) -> None:
    from ..extensions import extensions

    for installer in extensions().dataframe_methods.get(module, ()):
        importlib.import_module(installer)


class _AfterDataFrameImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of its DataFrame module to install ``lineage()``
    once that module is executed, then leaves ``sys.meta_path``."""

    def __init__(self, module: str = DATAFRAME_MODULE) -> None:
        self.module = module

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if fullname != self.module:
            return None
        _remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_then_install(module: ModuleType) -> None:
            exec_module(module)
            _install_now(self.module)

        loader.exec_module = exec_then_install  # type: ignore[method-assign]
        return spec


_HOOK = _AfterDataFrameImport()
_CONNECT_HOOK = _AfterDataFrameImport(CONNECT_DATAFRAME_MODULE)


def _remove(hook: _AfterDataFrameImport = _HOOK) -> None:
    if hook in sys.meta_path:
        sys.meta_path.remove(hook)


def install() -> None:
    """``DataFrame.lineage`` now, or as soon as pyspark's DataFrame module is imported (idempotent);
    the same for Spark Connect's DataFrame."""
    for hook in (_HOOK, _CONNECT_HOOK):
        if hook.module in sys.modules:
            _install_now(hook.module)
        elif hook not in sys.meta_path:
            sys.meta_path.insert(0, hook)
