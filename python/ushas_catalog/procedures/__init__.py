"""``CALL <catalog>.system.<name>(...)``: the procedures of the Spark catalog, declared once in
:mod:`.registry` by the modules of their groups (imported here, which fills :data:`PROCEDURES`)."""
from __future__ import annotations

from . import changes, drops, metadata, restore, stats, tables  # noqa: F401 - each declares its procedures
from . import partition_tags  # noqa: F401 - set_partition_tags, unset_partition_tags
from . import grants  # noqa: F401 - grant, revoke, show_grants, roles (docs/governance.md)
from . import shares  # noqa: F401 - shares between projects
from . import locations  # noqa: F401 - external locations (docs/governance.md)
from . import objects  # noqa: F401 - versioned objects (docs/objects.md)
from . import row_policies  # noqa: F401 - row filters and column masks (docs/governance.md)
from . import branches  # noqa: F401 - branches of a catalog (docs/branches.md)
from . import tags  # noqa: F401 - create_tag, drop_tag: named versions (docs/time-travel.md)
from . import compact  # noqa: F401 - compact: small files rewritten in one commit (docs/streaming.md)
from .registry import PROCEDURES, Procedure

__all__ = ["PROCEDURES", "Procedure"]
