"""Every catalog operation on one object: the per-object modules composed. The layers above
(metadata, search, changes) take a :class:`CatalogCore`; :class:`ushas_catalog.metastore.Metastore`
adds the subscribers of its commit hook."""
from __future__ import annotations

from .namespaces import NamespaceOps
from .partitions import PartitionOps
from .project import ProjectOps
from .restore import RestoreOps
from .statistics import StatisticsOps
from .tables import TableOps
from .views import ViewOps
from .view_schema import ViewSchemaOps
from .functions import FunctionOps
from .access import AccessOps
from .partition_tags import PartitionTagOps
from .branches import BranchOps
from .row_policies import RowPolicyOps
from .locations import LocationOps
from .time_travel import TimeTravelOps
from .stream_source import StreamSourceOps


class CatalogCore(NamespaceOps, RestoreOps, StatisticsOps, TableOps, ViewOps, PartitionOps, ProjectOps,
                  ViewSchemaOps, FunctionOps, AccessOps,
                  PartitionTagOps, RowPolicyOps, BranchOps, TimeTravelOps, LocationOps,
                  StreamSourceOps):
    """Catalogs, databases, tables, views and partitions of one project, each call one transaction."""
