"""The shim's plan walker in a running Spark driver that was not started with the jar.

``df.lineage()`` calls ``io.ushas.spark.PlanWriter`` in the driver JVM. A notebook or a shared
cluster's ``pyspark`` shell usually runs a session nobody configured with ``spark.jars``: there
the class is missing, and a restart is not an option. This module loads the jar (built by
:func:`ushas_catalog.jar.jar_path`) into the running JVM through Py4J reflection: a
``URLClassLoader`` over the jar whose parent is Spark's class loader (so Spark's and Jackson's
classes are the ones the session uses), and one ``PlanWriter`` instance, on which Py4J calls the
static entry points in one round trip each, exactly as it calls them by class name otherwise.
It happens once per driver JVM (Python process) and says so once, at WARNING.
"""
from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger("ushas.lineage")

WRITER = "io.ushas.spark.PlanWriter"

_lock = threading.Lock()
#: gateway client -> the PlanWriter instance loaded into its JVM (None: loading failed, with why)
_loaded: dict[int, tuple[Any, Any, str | None]] = {}


class ShimLoadError(RuntimeError):
    pass


def loaded_writer(gateway_client: Any) -> Any | None:
    """The PlanWriter instance already loaded into this client's JVM, or None."""
    entry = _loaded.get(id(gateway_client))
    if entry is None or entry[0] is not gateway_client:
        return None
    return entry[1]


def load_writer(gateway_client: Any) -> Any:
    """Load the shim jar into the JVM behind ``gateway_client`` (once) and return a PlanWriter
    instance (a py4j ``JavaObject``). Raises :class:`ShimLoadError` when it cannot be done (no
    JDK to build the jar, a JVM that refuses the class loader)."""
    with _lock:
        entry = _loaded.get(id(gateway_client))
        if entry is not None and entry[0] is gateway_client:
            if entry[1] is None:
                raise ShimLoadError(entry[2] or "loading the shim failed")
            return entry[1]
        try:
            writer, jar = _load(gateway_client)
        except Exception as exc:  # noqa: BLE001 - reported as one clear error, remembered
            why = f"loading the ushas shim jar into the running Spark driver failed: {exc}"
            _loaded[id(gateway_client)] = (gateway_client, None, why)
            raise ShimLoadError(why) from exc
        _loaded[id(gateway_client)] = (gateway_client, writer, None)
    log.warning("ushas lineage: the shim jar was not on the Spark driver's classpath; loaded %s into the "
                "running driver for df.lineage() (automatic capture still needs spark.jars and the listener)",
                jar)
    return writer


def _new_array(gateway_client: Any, java_class: Any, size: int) -> Any:
    """``new <java_class>[size]`` in the JVM (what ``JavaGateway.new_array`` sends)."""
    from py4j import protocol
    from py4j.java_gateway import get_command_part, get_return_value

    command = (protocol.ARRAY_COMMAND_NAME + protocol.ARRAY_CREATE_SUB_COMMAND_NAME
               + get_command_part(java_class._fqn) + get_command_part(size) + protocol.END_COMMAND_PART)
    return get_return_value(gateway_client.send_command(command), gateway_client)


def _load(gateway_client: Any) -> tuple[Any, str]:
    from py4j import protocol
    from py4j.java_gateway import JVMView

    from ushas_catalog.spark.jar import jar_path

    jar = str(jar_path())
    jvm = JVMView(gateway_client, jvm_name=protocol.DEFAULT_JVM_NAME, id=protocol.DEFAULT_JVM_ID)
    urls = _new_array(gateway_client, jvm.java.net.URL, 1)
    urls[0] = jvm.java.io.File(jar).toURI().toURL()
    parent = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
    loader = jvm.java.net.URLClassLoader(urls, parent)
    cls = jvm.java.lang.Class.forName(WRITER, True, loader)
    ctor = cls.getDeclaredConstructor(_new_array(gateway_client, jvm.java.lang.Class, 0))
    ctor.setAccessible(True)
    return ctor.newInstance(_new_array(gateway_client, jvm.java.lang.Object, 0)), jar


__all__ = ["ShimLoadError", "load_writer", "loaded_writer"]
