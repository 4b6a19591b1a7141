"""A Spark catalog instance of the shared session with an identity of its own (docs/governance.md: two
catalog names with different ``.user`` options in one application are two callers). Shared by the
privilege and row-filter tests (``tests/`` is on ``sys.path``)."""
from __future__ import annotations

import uuid
from typing import Any


def user_catalog(spark: Any, prefix: str, *, uri: str, project: str, warehouse: str, user: str) -> str:
    """Configures ``<prefix>_<random>`` over catalog ``main`` of ``project`` as ``user`` with authorization
    on, and answers its name."""
    name = f"{prefix}_{uuid.uuid4().hex[:6]}"
    for key, value in {"": "io.ushas.spark.UshasCatalog", ".uri": uri, ".project": project, ".catalog": "main",
                       ".warehouse": warehouse, ".user": user, ".authorization": "true"}.items():
        spark.conf.set(f"spark.sql.catalog.{name}{key}", value)
    return name
