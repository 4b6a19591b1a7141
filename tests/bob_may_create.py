"""The governed store the hostile-user tests of the service and of registered files share (``tests/`` is on
``sys.path``): admin owns the project and makes catalog ``main`` and database ``main.db``, where bob may create
tables (USE on both, CREATE on the database) and nothing else."""
from __future__ import annotations

from typing import Any


def admin_with_bob(uri: str, db_location: str | None = None, own: bool = True) -> Any:
    """admin's metastore (authorization on) after making ``main`` and ``main.db`` (at ``db_location``) and granting
    bob USE and CREATE there; ``own``: first make admin the project's owner."""
    from ushas_catalog.metastore import Metastore

    if own:
        ms = Metastore.open(uri)
        ms.grant("OWN", "project", "user:admin")
        ms.close()
    admin = Metastore.open(uri, user="admin", authorization=True)
    admin.create_catalog("main")
    admin.create_database("main.db", location=db_location)
    for privilege, on in (("USE", "main"), ("USE", "main.db"), ("CREATE", "main.db")):
        admin.grant(privilege, on, "user:bob")
    return admin
