"""The lineage extension of the catalog: what ``ushas_catalog`` serves of lineage, registered at the
catalog's extension points (:mod:`ushas_catalog.extensions`), so that the catalog never imports
``lineage`` (docs/internals/architecture.md, "Extensions").

Declared as the entry point ``lineage = "lineage.plugin:register"`` of the group
``ushas_catalog.extensions`` (pyproject.toml), and in the catalog's built-in list. Every implementation is
named by reference and imported on first use: registering imports nothing but this module.

- ``ushas lineage ...`` (:mod:`.cli_cmds`) and what ``ushas demo`` shows of lineage (:mod:`.demo`);
- the REST API's lineage reads and runs (:mod:`.api`, :mod:`.runs_api`: SELECT on the project), the remote
  capture's ingest
  (:mod:`.ingest_api`, a write token) and the OpenLineage receiver (:mod:`.receiver`, MODIFY);
- the bridge's ``lineage.event`` op and the capture hub of the process (:mod:`.stores`);
- the lineage system tables (:mod:`.system_tables`) and the lineage store the system and metadata tables
  read (:mod:`.stores`);
- ``df.lineage()`` on pyspark's classic and Spark Connect DataFrames (:mod:`lineage.dataframe`,
  :mod:`lineage.connect`).
"""
from __future__ import annotations

from typing import Any

#: pyspark's DataFrame modules and the modules that give their DataFrame ``lineage()``
DATAFRAME_METHODS = (("pyspark.sql.classic.dataframe", "lineage.dataframe"),
                     ("pyspark.sql.connect.dataframe", "lineage.connect"))


def register(ext: Any) -> None:
    """Fill the catalog's extension registry (an :class:`ushas_catalog.extensions.Extensions`)."""
    ext.add_command("lineage", "lineage.plugin.cli_cmds:register")
    ext.add_demo_section("lineage.plugin.demo:SECTION")
    ext.add_routes("lineage.plugin.api:register", "SELECT")  # read the lineage store, not checked calls
    ext.add_routes("lineage.plugin.runs_api:register", "SELECT")
    ext.add_routes("lineage.plugin.ingest_api:register", None)  # checks its write token itself
    ext.add_routes("lineage.plugin.receiver:register", "MODIFY")
    ext.add_bridge_op("lineage.event", "lineage.plugin.stores:lineage_event")
    ext.add_process_service("lineage", "lineage.plugin.stores:capture_hub")
    ext.add_service_store("lineage", "lineage.plugin.stores:served_queries")
    ext.add_read_store("lineage", "lineage.plugin.stores:read_queries")
    ext.add_system_tables("lineage.plugin.system_tables:TABLES")
    ext.add_wire_package("lineage.")  # remote mode: the runs a driver's capture sends to the service
    for pyspark_module, installer in DATAFRAME_METHODS:
        ext.add_dataframe_method(pyspark_module, installer)


__all__ = ["register", "DATAFRAME_METHODS"]
