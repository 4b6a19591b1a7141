"""Validate OpenLineage RunEvents against the vendored spec 2-0-2 and the facet schemas their
``_schemaURL`` names (python/lineage/openlineage_spec, copied from the OpenLineage repository)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

SPEC_DIR = Path(__file__).parents[2] / "python" / "lineage" / "openlineage_spec"


def _registry() -> Registry:
    resources = []
    for path in sorted(SPEC_DIR.glob("*.json")):
        doc = json.loads(path.read_text())
        resources.append((doc["$id"], Resource.from_contents(doc)))
    return Registry().with_resources(resources)


REGISTRY = _registry()
RUN_EVENT = {"$ref": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}


def _validate(instance: Any, schema: Any) -> None:
    cls = jsonschema.validators.validator_for({"$schema": "https://json-schema.org/draft/2020-12/schema"})
    cls(schema, registry=REGISTRY, format_checker=jsonschema.FormatChecker()).validate(instance)


def _facets(event: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = list(event.get("run", {}).get("facets", {}).items()) + list(event.get("job", {}).get("facets", {}).items())
    for ds in event.get("inputs", []) + event.get("outputs", []):
        out += list(ds.get("facets", {}).items())
        out += list(ds.get("inputFacets", {}).items()) + list(ds.get("outputFacets", {}).items())
    return out


def validate_event(event: dict[str, Any]) -> None:
    """The RunEvent against the spec, and each facet against the schema its _schemaURL names
    (which must be one of the vendored ones)."""
    _validate(event, RUN_EVENT)
    for key, facet in _facets(event):
        url = facet["_schemaURL"]
        assert url.split("#")[0] in {json.loads(p.read_text())["$id"] for p in SPEC_DIR.glob("*.json")}, url
        _validate(facet, {"$ref": url})
