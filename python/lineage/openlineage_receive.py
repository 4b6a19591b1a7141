"""OpenLineage RunEvents from any producer (Airflow, dbt, Flink, Spark's OpenLineage listener,
this project's own HTTP transport) into the lineage store: ``POST /api/v1/lineage`` of
``ushas serve``.

- :func:`validate_event`: the event against the vendored spec 2-0-2 (``openlineage_spec/``,
  ``OpenLineage.json#/$defs/RunEvent``), and each facet whose ``_schemaURL`` is one of the
  vendored facet schemas against it (facets of other versions or producers pass unchecked).
- :class:`Receiver`: a run is stored once, at its terminal event (COMPLETE, FAIL, ABORT), with
  the datasets and facets of its earlier events (START, RUNNING) merged in (kept in memory, at
  most :data:`MAX_OPEN_RUNS` runs). A terminal event without a START is stored alone.
- Names (:meth:`Receiver.dataset`): a dataset is a catalog table when its ``namespace`` (or the
  namespace of one of its ``symlinks`` identifiers) is a catalog of this store — directly or
  through the ``namespaces`` map (``spark://host:10000`` -> ``ushas``) — and its name is
  ``db.table`` (or ``catalog.db.table``): then it is the metastore's table, keyed by table id
  like Spark-captured lineage, and a dbt model's lineage joins a Spark job's. A file namespace
  (``file``, ``s3://bucket``, ``hdfs://nn``...) is a path; anything else is kept under
  ``namespace/name``.
- Column edges come from the outputs' ``columnLineage`` facet (``fields`` and the dataset-wide
  ``dataset`` list), with ``transformations`` (or the older ``transformationType``).
"""
from __future__ import annotations

import datetime as dt
import json
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping

from ushas_catalog.errors import InvalidArgument

from .kinds import EdgeKind, EdgeSubtype
from .model import ColumnNode, Dataset, Edge
from .store import CapturedRun, Run, RunStatus

SPEC_DIR = Path(__file__).parent / "openlineage_spec"
RUN_EVENT_REF = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
MAX_OPEN_RUNS = 10_000
TERMINAL = {"COMPLETE": RunStatus.COMPLETE, "FAIL": RunStatus.FAIL, "ABORT": RunStatus.FAIL}
EVENT_TYPES = ("START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER")
#: namespaces (schemes) whose datasets are files
FILE_SCHEMES = ("file", "s3", "s3a", "s3n", "gs", "gcs", "hdfs", "abfs", "abfss", "wasb", "wasbs", "dbfs", "viewfs")


@lru_cache(maxsize=1)
def _schemas() -> tuple[Any, frozenset[str]]:
    from referencing import Registry, Resource

    resources = []
    for path in sorted(SPEC_DIR.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        resources.append((doc["$id"], Resource.from_contents(doc)))
    return Registry().with_resources(resources), frozenset(r[0] for r in resources)


def _validate(instance: Any, ref: str, where: str) -> None:
    import jsonschema

    registry, _ = _schemas()
    cls = jsonschema.validators.validator_for({"$schema": "https://json-schema.org/draft/2020-12/schema"})
    error = jsonschema.exceptions.best_match(cls({"$ref": ref}, registry=registry,
                                                  format_checker=jsonschema.FormatChecker()).iter_errors(instance))
    if error is not None:
        at = "/".join(str(p) for p in error.absolute_path)
        raise InvalidArgument(f"not a valid OpenLineage RunEvent: {where}{'/' + at if at else ''}: "
                              f"{error.message[:300]}")


def validate_event(event: Any) -> None:
    """Raise :class:`InvalidArgument` naming the first problem of a RunEvent."""
    if not isinstance(event, dict):
        raise InvalidArgument("an OpenLineage RunEvent is a JSON object")
    if "run" not in event or "job" not in event:
        raise InvalidArgument("not an OpenLineage RunEvent: it needs run and job")
    _validate(event, RUN_EVENT_REF, "event")
    _, known = _schemas()
    for where, facets in _facets(event):
        for name, facet in facets.items():
            url = facet.get("_schemaURL", "") if isinstance(facet, dict) else ""
            if isinstance(url, str) and url.split("#")[0] in known:
                _validate(facet, url, f"{where}/{name}")


def _facets(event: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = [("run/facets", event["run"].get("facets") or {}), ("job/facets", event["job"].get("facets") or {})]
    for side in ("inputs", "outputs"):
        for i, ds in enumerate(event.get(side) or []):
            for key in ("facets", "inputFacets", "outputFacets"):
                if ds.get(key):
                    out.append((f"{side}/{i}/{key}", ds[key]))
    return out


def _time_ms(text: str) -> int:
    when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1000)


@dataclass
class _OpenRun:
    start_ms: int
    inputs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    outputs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    job_facets: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Accepted:
    run_id: str
    event_type: str
    stored: bool
    datasets: list[str]
    column_edges: int

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "event_type": self.event_type, "stored": self.stored,
                "datasets": self.datasets, "column_edges": self.column_edges}


class Receiver:
    """Turns RunEvents into stored runs. ``is_catalog(name)``: whether a catalog of that name
    exists in the store; ``namespaces``: OpenLineage namespace -> catalog name."""

    def __init__(self, record: Callable[[CapturedRun], bool], is_catalog: Callable[[str], bool],
                 namespaces: Mapping[str, str] | None = None) -> None:
        self.record = record
        self.is_catalog = is_catalog
        self.namespaces = dict(namespaces or {})
        self.open: OrderedDict[str, _OpenRun] = OrderedDict()
        self.lock = threading.Lock()

    # ---- names -----------------------------------------------------------------------------------
    def dataset(self, ds: Mapping[str, Any]) -> Dataset:
        namespace, name = str(ds["namespace"]), str(ds["name"])
        candidates = [(namespace, name)]
        symlinks = ((ds.get("facets") or {}).get("symlinks") or {}).get("identifiers") or []
        candidates += [(str(s.get("namespace", "")), str(s.get("name", ""))) for s in symlinks if isinstance(s, dict)]
        for ns, nm in candidates:
            table = self._catalog_table(ns, nm)
            if table is not None:
                return table
        scheme = namespace.split("://", 1)[0].lower() if "://" in namespace else namespace.lower()
        if scheme in FILE_SCHEMES:
            if "://" in namespace:
                return Dataset.path(namespace.rstrip("/") + "/" + name.lstrip("/"))
            return Dataset.path(f"{scheme}:{name if name.startswith('/') else '/' + name}")
        return Dataset.table(None, f"{namespace}/{name}")

    def _catalog_table(self, namespace: str, name: str) -> Dataset | None:
        parts = name.split(".")
        catalog = self.namespaces.get(namespace, namespace)
        if len(parts) == 2 and catalog and self._known(catalog):
            return Dataset.table(catalog, *parts)
        if len(parts) == 3 and self._known(parts[0]) and (namespace in self.namespaces or self._known(namespace)
                                                          or "://" in namespace or namespace == parts[0]):
            return Dataset.table(parts[0], parts[1], parts[2])
        return None

    def _known(self, catalog: str) -> bool:
        try:
            return bool(catalog) and self.is_catalog(catalog)
        except Exception:  # noqa: BLE001 - a name the metastore refuses is no catalog
            return False

    # ---- events ----------------------------------------------------------------------------------
    def receive(self, event: dict[str, Any]) -> Accepted:
        if isinstance(event, dict) and "run" not in event and ("dataset" in event or "job" in event):
            # a DatasetEvent or JobEvent (static metadata, no run): valid ones are taken, not stored
            kind = "DatasetEvent" if "dataset" in event else "JobEvent"
            _validate(event, RUN_EVENT_REF.replace("RunEvent", kind), "event")
            return Accepted("", kind, False, [], 0)
        validate_event(event)
        run_id = str(event["run"]["runId"])
        try:
            rid = uuid.UUID(run_id)
        except ValueError:
            raise InvalidArgument(f"run.runId must be a UUID, not {run_id[:60]!r}") from None
        event_type = str(event.get("eventType") or "OTHER").upper()
        if event_type not in EVENT_TYPES:
            raise InvalidArgument(f"eventType must be one of {', '.join(EVENT_TYPES)}, not {event_type[:40]!r}")
        time_ms = _time_ms(str(event["eventTime"]))
        with self.lock:
            state = self.open.pop(run_id, None) or _OpenRun(time_ms)
            state.start_ms = min(state.start_ms, time_ms)
            for side, target in (("inputs", state.inputs), ("outputs", state.outputs)):
                for ds in event.get(side) or []:
                    key = (str(ds["namespace"]), str(ds["name"]))
                    merged = target.setdefault(key, {"namespace": key[0], "name": key[1], "facets": {}})
                    merged["facets"].update(ds.get("facets") or {})
            state.job_facets.update(event["job"].get("facets") or {})
            if event_type not in TERMINAL:
                self.open[run_id] = state
                while len(self.open) > MAX_OPEN_RUNS:
                    self.open.popitem(last=False)
                return Accepted(run_id, event_type, False, [], 0)
        captured = self._captured(event, rid, TERMINAL[event_type], state, time_ms)
        stored = self.record(captured)
        names = [d.name for d in (*captured.reads, *captured.writes)]
        return Accepted(run_id, event_type, stored, list(dict.fromkeys(names)), len(captured.edges))

    def _captured(self, event: dict[str, Any], rid: uuid.UUID, status: RunStatus, state: _OpenRun,
                  end_ms: int) -> CapturedRun:
        job = event["job"]
        facets = state.job_facets
        sql = (facets.get("sql") or {}).get("query") if isinstance(facets.get("sql"), dict) else None
        job_type: dict[str, Any] = facets["jobType"] if isinstance(facets.get("jobType"), dict) else {}
        run_facets = event["run"].get("facets") or {}
        error = (run_facets.get("errorMessage") or {}).get("message") if status is RunStatus.FAIL else None
        producer = str(event.get("producer", ""))
        run = Run(run_id=rid, application_id=f"openlineage:{job['namespace']}", application_name=str(job["namespace"]),
                  execution_id=0, user=str((run_facets.get("processing_engine") or {}).get("name") or "openlineage"),
                  start_ms=state.start_ms, end_ms=max(end_ms, state.start_ms), status=status,
                  operation=producer[:200], sql=sql if isinstance(sql, str) else None,
                  error=(str(error) if error else ("failed" if status is RunStatus.FAIL else None)),
                  job=str(job["name"]), kind=str(job_type.get("jobType") or ""))
        reads = {key: self.dataset(ds) for key, ds in state.inputs.items()}
        writes = {key: self.dataset(ds) for key, ds in state.outputs.items()}
        edges: list[Edge] = []
        for key, ds in state.outputs.items():
            lineage = ds["facets"].get("columnLineage")
            if not isinstance(lineage, dict):
                continue
            target = writes[key]
            for column, spec in (lineage.get("fields") or {}).items():
                for f in (spec or {}).get("inputFields") or []:
                    edges.extend(self._edges(f, spec, ColumnNode.column(target, str(column)), reads))
            if len(writes) == 1:
                for f in lineage.get("dataset") or []:
                    edges.extend(self._edges(f, {}, None, reads))
        return CapturedRun(run, tuple(dict.fromkeys(reads.values())), tuple(dict.fromkeys(writes.values())),
                           tuple(edges))

    def _edges(self, field_: Mapping[str, Any], spec: Mapping[str, Any], target: ColumnNode | None,
               reads: dict[tuple[str, str], Dataset]) -> list[Edge]:
        key = (str(field_.get("namespace", "")), str(field_.get("name", "")))
        source_ds = reads.get(key) or self.dataset({"namespace": key[0], "name": key[1]})
        source = ColumnNode.column(source_ds, str(field_.get("field", "")))
        out = []
        transformations = field_.get("transformations") or []
        if not transformations:
            legacy = str(spec.get("transformationType") or "").upper()
            subtype = EdgeSubtype.IDENTITY if legacy == "IDENTITY" else EdgeSubtype.TRANSFORMATION
            if target is None:
                subtype = EdgeSubtype.FILTER
            transformations = [{"type": subtype.kind.value, "subtype": subtype.value,
                                "description": str(spec.get("transformationDescription") or "")}]
        for t in transformations:
            subtype = _subtype(t, target is None)
            out.append(Edge(target, source, subtype.kind, subtype, str(t.get("description") or "")[:2000]))
        return out


def _subtype(t: Mapping[str, Any], whole: bool) -> EdgeSubtype:
    text = str(t.get("subtype") or "").upper()
    try:
        sub = EdgeSubtype(text)
    except ValueError:
        sub = EdgeSubtype.FILTER if str(t.get("type", "")).upper() == EdgeKind.INDIRECT.value or whole \
            else EdgeSubtype.TRANSFORMATION
    if whole and sub.kind is EdgeKind.DIRECT:
        sub = EdgeSubtype.FILTER
    return sub


__all__ = ["Accepted", "Receiver", "SPEC_DIR", "validate_event"]
