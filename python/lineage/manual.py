"""Lineage recorded by hand from Python: ``lineage.record(inputs=[...], output=...)`` stores one run whose
inputs are table columns (or whole tables) and whose output is a dataset, most often a version of a
versioned object (a model trained on those columns: docs/objects.md, "Lineage").

The output of an object version is the dataset ``<catalog>.<database>.<object>@v<version>`` (a version
given as an :class:`~ushas_catalog.model.versioned_objects.ObjectVersionInfo`, as that name, or as the
object's name: its current version); the edges go from each input column to that dataset as a whole
(no output column). The run is then in ``ushas lineage upstream / downstream / impact`` like a captured
Spark run, and counts in the usage profile of every dataset it names.
"""
from __future__ import annotations

import uuid
from typing import Any, Sequence

from ushas_catalog.errors import InvalidArgument, NoSuchTable, NotFound
from ushas_catalog.model.names import TableName, split_name
from ushas_catalog.model.versioned_objects import ObjectVersionInfo, version_dataset

from .identity import looks_like_path
from .model import ColumnNode, Dataset, Edge, EdgeSubtype
from .store import CapturedRun, LineageStore, Run, RunStatus, now_ms
from .tables import MetastoreTableIds

#: the application id of runs recorded with :func:`record`
APPLICATION = "python"


def _output(ms: Any, output: Any) -> Dataset:
    """The output dataset: an object version (info, ``name@vN``, or an object's name: its current version),
    or a metastore table."""
    if isinstance(output, ObjectVersionInfo):
        name, version = output.object, output.version
    elif isinstance(output, str) and "@v" in output:
        name, _, v = output.rpartition("@v")
        if not v.isdigit():
            raise InvalidArgument(f"output {output!r}: expected OBJECT@vN (a version number after @v)")
        version = int(v)
    elif isinstance(output, str):
        name, version = output, 0
    else:
        raise InvalidArgument(f"output: an object version (ObjectVersionInfo or 'catalog.db.object@vN'), "
                              f"not {type(output).__name__}")
    if not ms.objects.exists(name):
        tn = TableName.parse(name)
        if version == 0 and ms.table_exists(tn):
            return Dataset.table(tn.catalog, tn.database, tn.name)
        raise NotFound(f"output {output}: no versioned object (or table) {name}")
    found = ms.objects.version(name, version or None)  # NoSuchVersion when it has none
    tn = TableName.parse(found.object)
    return Dataset.table(tn.catalog, tn.database, version_dataset(tn.name, found.version))


def _inputs(ms: Any, inputs: Sequence[Any]) -> tuple[list[Dataset], list[ColumnNode]]:
    """The datasets read and the columns the output derives from: ``catalog.db.table.column``,
    ``catalog.db.table`` (every column of a metastore table), a path, an object version
    (``catalog.db.object@vN``, or the object: its current version; read whole, no column edges), or
    :class:`ColumnNode`s."""
    datasets: list[Dataset] = []
    columns: list[ColumnNode] = []
    if isinstance(inputs, (str, bytes)) or not isinstance(inputs, Sequence):
        raise InvalidArgument("inputs: a list of columns (catalog.db.table.column) or tables")
    for item in inputs:
        if isinstance(item, ColumnNode):
            if item.dataset is None:
                raise InvalidArgument(f"input {item}: a column of a dataset")
            datasets.append(item.dataset)
            columns.append(item)
            continue
        if not isinstance(item, str) or not item.strip():
            raise InvalidArgument(f"input {item!r}: a column name (catalog.db.table.column) or a table name")
        if looks_like_path(item):
            datasets.append(Dataset.path(item))
            continue
        if "@v" in item or (len(split_name(item)) == 3 and ms.objects.exists(item)):
            datasets.append(_output(ms, item))  # an object version read whole (a model a scoring job loads)
            continue
        parts = split_name(item)
        if len(parts) == 3:
            table = ms.get_table(tuple(parts))
            ds = Dataset.table(*parts)
            datasets.append(ds)
            columns.extend(ColumnNode.column(ds, f.name) for f in table.schema.fields)
        elif len(parts) == 4:
            table = ms.get_table(tuple(parts[:3]))
            names = {f.name.lower(): f.name for f in table.schema.fields}
            if parts[3].lower() not in names:
                raise InvalidArgument(f"input {item}: table {'.'.join(parts[:3])} has no column {parts[3]!r} "
                                      f"(columns: {', '.join(names.values())})")
            ds = Dataset.table(*parts[:3])
            datasets.append(ds)
            columns.append(ColumnNode.column(ds, names[parts[3].lower()]))
        else:
            raise NoSuchTable(f"input {item!r}: expected catalog.db.table or catalog.db.table.column")
    return list(dict.fromkeys(datasets)), list(dict.fromkeys(columns))


def record(inputs: Sequence[Any], output: Any, *, metastore: Any = None, uri: str | None = None,
           project: str = "default", job: str = "", user: str | None = None, operation: str = "RECORD",
           start_ms: int | None = None, end_ms: int | None = None) -> uuid.UUID:
    """Store one run: ``inputs`` (columns or tables) -> ``output`` (an object version, by default).
    Give the ``metastore`` (a :class:`~ushas_catalog.metastore.Metastore`) or its store ``uri`` and
    ``project``. Everything is checked before anything is written (one transaction). Answers the run id."""
    own = metastore is None
    if own:
        if not uri:
            raise InvalidArgument("lineage.record: give metastore= or uri=")
        from ushas_catalog.metastore import Metastore

        metastore = Metastore.open(uri, project=project, create=False)
    try:
        reads, columns = _inputs(metastore, inputs)
        if not reads:
            raise InvalidArgument("lineage.record: at least one input")
        target = _output(metastore, output)
        end = now_ms() if end_ms is None else end_ms
        run = Run(run_id=uuid.uuid4(), application_id=APPLICATION, application_name=job or "lineage.record",
                  execution_id=0, user=user or metastore.user, start_ms=end if start_ms is None else start_ms,
                  end_ms=end, status=RunStatus.COMPLETE, operation=operation, job=job or "lineage.record",
                  kind=operation)
        edges = tuple(Edge(None, c, EdgeSubtype.TRANSFORMATION.kind, EdgeSubtype.TRANSFORMATION) for c in columns)
        store = LineageStore(metastore.db, metastore.project, layout=metastore.layout,
                             tables=MetastoreTableIds(metastore))
        store.record(CapturedRun(run, reads=tuple(reads), writes=(target,), edges=edges))
        return run.run_id
    finally:
        if own:
            metastore.close()


__all__ = ["APPLICATION", "record"]
