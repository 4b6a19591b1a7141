"""The API v1 contract: the OpenAPI 3.1 document of ``/api/v1`` (served at
``/api/v1/openapi.json``; the checked-in copy is ``service/openapi.json``, which
``tests/service/test_contract.py`` keeps equal to :func:`document`).

Names in paths: every catalog, database, table and view name is one path segment,
percent-encoded (``a/b`` is ``a%2Fb``); :mod:`.routing` routes on the raw request URI so an
encoded ``/`` stays inside its segment. Objects whose metadata is read or written (down to a
column) are named by query parameters: ``catalog``, ``database``, ``table``, ``column``.

Paths only ever get added: a client built against one version of this document keeps working.
"""
from __future__ import annotations

from typing import Any

VERSION = "1.0.0"

# ---- small builders ---------------------------------------------------------------------------------------
STR: dict[str, Any] = {"type": "string"}
NSTR: dict[str, Any] = {"type": ["string", "null"]}
INT: dict[str, Any] = {"type": "integer"}
NINT: dict[str, Any] = {"type": ["integer", "null"]}
BOOL: dict[str, Any] = {"type": "boolean"}
STRMAP: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}
ANYOBJ: dict[str, Any] = {"type": "object"}


def ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def obj(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    props = {**required, **(optional or {})}
    return {"type": "object", "required": sorted(required), "properties": props}


def arr(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item}


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"oneOf": [schema, {"type": "null"}]}


def page_of(item: str) -> dict[str, Any]:
    return obj({"items": arr(ref(item)), "offset": INT, "limit": INT, "total": INT, "has_more": BOOL})


def path_param(name: str, description: str, example: str | None = None) -> dict[str, Any]:
    out = {"name": name, "in": "path", "required": True, "description": description,
           "schema": {"type": "string", "minLength": 1}}
    if example is not None:
        out["example"] = example
    return out


def query(name: str, description: str, schema: dict[str, Any] | None = None, required: bool = False,
          explode: bool = False, example: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "in": "query", "required": required, "description": description,
                           "schema": schema or STR}
    if example is not None:
        out["example"] = example
    if explode:
        out["style"], out["explode"] = "form", True
    return out


OFFSET = query("offset", "items to skip (default 0)", {"type": "integer", "minimum": 0})
LIMIT = query("limit", "items per page (default 50, at most 1000)", {"type": "integer", "minimum": 1, "maximum": 1000})
SINCE = query("since", "time bound: epoch milliseconds or an ISO date / date-time (UTC unless it says)")
UNTIL = query("until", "time bound: epoch milliseconds or an ISO date / date-time (UTC unless it says)")
CATALOG = path_param("catalog", "catalog name (percent-encoded)", "shop")
DATABASE = path_param("database", "database name (percent-encoded)", "sales")
TABLE = path_param("table", "table name (percent-encoded)", "raw")
VIEW = path_param("view", "view name (percent-encoded)", "fr")
OBJ = path_param("name", "versioned object name (percent-encoded)", "churn")
LOCATION_NAME = path_param("name", "external location name", "raw")
SUBSPACE = path_param("subspace", "a user-defined subspace of the object", "daily")
KEY_Q = query("key", "the primary key as JSON: a value, or a list of them", {"type": "string", "minLength": 1},
              required=True, example='["c42", 3]')
OBJECT_PARAMS = [query("catalog", "the catalog (alone: the catalog itself)", {"type": "string", "minLength": 1},
                       required=True, example="shop"),
                 query("database", "the database (with catalog)", example="sales"),
                 query("table", "a table or view (with catalog and database)", example="raw"),
                 query("column", "a column of that table or view; a nested field as a.b (backticks quote a "
                                 "part holding a dot)", example="amount")]

ERRORS = {
    "400": {"description": "bad input (InvalidArgument, InvalidName, ...)", "$ref": "#/components/responses/Error"},
    "404": {"description": "no such object (NoSuchTable, NoSuchRun, ...)", "$ref": "#/components/responses/Error"},
}
WRITE_ERRORS = {
    **ERRORS,
    "401": {"$ref": "#/components/responses/Error"},
    "403": {"$ref": "#/components/responses/Error"},
    "409": {"$ref": "#/components/responses/Error"},
}


def ok(schema: dict[str, Any], description: str = "OK", code: str = "200") -> dict[str, Any]:
    return {code: {"description": description, "content": {"application/json": {"schema": schema}}}}


def get(op_id: str, summary: str, params: list[dict[str, Any]], schema: dict[str, Any],
        tag: str) -> dict[str, Any]:
    return {"get": {"operationId": op_id, "summary": summary, "tags": [tag], "parameters": params,
                    "responses": {**ok(schema), **ERRORS}}}


def write(method: str, op_id: str, summary: str, params: list[dict[str, Any]], body: dict[str, Any] | None,
          schema: dict[str, Any], tag: str, code: str = "200") -> dict[str, Any]:
    op: dict[str, Any] = {"operationId": op_id, "summary": summary, "tags": [tag], "parameters": params,
                          "security": [{"bearer": []}, {"session": []}],
                          "responses": {**ok(schema, code=code), **WRITE_ERRORS}}
    if body is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    return {method: op}


def remote_call(op_id: str, summary: str, params: list[dict[str, Any]], body: str, answer: str) -> dict[str, Any]:
    """A remote-mode endpoint: POST, a bearer token only (a browser session is not enough)."""
    return {"post": {"operationId": op_id, "summary": summary, "tags": ["remote"], "parameters": params,
                     "security": [{"bearer": []}],
                     "requestBody": {"required": True, "content": {"application/json": {"schema": ref(body)}}},
                     "responses": {**ok(ref(answer)), **WRITE_ERRORS,
                                   "503": {"description": "the store is busy or unavailable: retry later",
                                           "$ref": "#/components/responses/Error"}}}}


# ---- schemas ----------------------------------------------------------------------------------------------
def schemas() -> dict[str, Any]:
    meta_scope = obj({"properties": STRMAP, "tags": arr(STR)})
    obj_ref = obj({"type": STR, "name": STR, "id": STR}, {"relation": STR, "column": STR})
    object_metadata = obj({"object": ref("ObjectRef"), "USER": ref("ScopedMetadata"), "SYSTEM": ref("ScopedMetadata")},
                          {"schema_fields": arr(STR),
                           "columns": {"type": "object", "additionalProperties": ref("ObjectMetadata")}})
    common = {"name": STR, "id": STR, "comment": NSTR, "properties": STRMAP, "owner": NSTR,
              "created_at": NSTR, "updated_at": NSTR, "version": INT}
    node = obj({"id": STR, "dataset": STR, "column": NSTR, "level": INT, "whole_dataset": BOOL})
    edge = obj({"target": STR, "source": STR, "kind": {"type": "string", "enum": ["DIRECT", "INDIRECT"]},
                "subtype": STR, "runs": arr(STR), "latest_ms": NINT, "expression": STR})
    run = obj({"run_id": STR, "application_id": STR, "application_name": STR, "execution_id": INT, "user": STR,
               "start_ms": INT, "end_ms": INT, "duration_ms": INT, "status": {"type": "string",
                                                                             "enum": ["COMPLETE", "FAIL"]},
               "operation": STR, "sql": NSTR, "error": NSTR, "table_level": NSTR, "job": STR, "kind": STR},
              {"access": {"type": "string", "enum": ["read", "write"]}, "producer": STR,
               # the Spark Connect / Thrift server client the run was for (docs/servers.md)
               "session_id": NSTR, "client_kind": NSTR, "client_type": NSTR,
               # a streaming micro-batch's run (docs/streaming.md)
               "stream_query_id": NSTR, "batch_id": NINT})
    dataset_ref = obj({"name": STR}, {"kind": STR, "dropped": BOOL, "table_id": STR, "path": STR,
                                      "partition": STRMAP})
    return {
        "Error": obj({"error": obj({"type": STR, "message": STR}, {"detail": ANYOBJ})}),
        "Info": obj({"project": STR, "store": STR, "api": STR,
                     "auth": obj({"reads": {"type": "string", "enum": ["open", "token"]},
                                  "writes": {"type": "string", "enum": ["token"]}})}),
        "Session": obj({"access": {"type": "string", "enum": ["none", "read", "write"]}, "csrf": NSTR,
                        "auth_required": BOOL}),
        "SessionLogin": obj({"token": {"type": "string", "minLength": 1}}),
        "Catalog": obj(common),
        "Database": obj({**common, "catalog": STR, "location": NSTR}),
        "Relation": obj({"catalog": STR, "database": STR, "name": STR,
                         "kind": {"type": "string", "enum": ["TABLE", "VIEW"]}, "id": STR, "created_at": NSTR}),
        "Field": obj({"name": STR, "type": {}, "nullable": BOOL}, {"metadata": ANYOBJ}),
        "Table": obj({"catalog": STR, "database": STR, "name": STR, "id": STR, "kind": {"const": "TABLE"},
                      "version": INT, "schema_id": INT, "schema": ANYOBJ, "partition_columns": arr(STR),
                      "format": STR, "location": NSTR, "external": BOOL, "properties": STRMAP, "comment": NSTR,
                      "owner": NSTR, "created_at": NSTR, "updated_at": NSTR, "full_name": STR,
                      "metadata": nullable(ref("ObjectMetadata")), "lineage": BOOL},
                     {"row_filter": obj({"expression": STR, "exempt": STR}),  # docs/governance.md
                      "column_masks": arr(obj({"column": STR, "expression": STR, "exempt": STR}))}),
        "View": obj({"catalog": STR, "database": STR, "name": STR, "id": STR, "kind": {"const": "VIEW"},
                     "version": INT, "sql": STR, "schema": ANYOBJ, "comment": NSTR, "properties": STRMAP,
                     "current_catalog": NSTR, "current_namespace": arr(STR), "query_column_names": arr(STR),
                     "owner": NSTR, "created_at": NSTR, "updated_at": NSTR, "full_name": STR,
                     "metadata": nullable(ref("ObjectMetadata")), "lineage": BOOL}),
        "Partition": obj({"spec": STRMAP, "values": ANYOBJ, "location": NSTR, "files": NINT, "bytes": NINT,
                          "rows": NINT, "properties": STRMAP, "created_at": NSTR,
                          "data_files": {"type": ["array", "null"]}}, {"tags": STRMAP}),
        "PartitionPage": obj({"items": arr(ref("Partition")), "columns": arr(STR), "offset": INT, "limit": INT,
                              "has_more": BOOL}),
        "HistoryItem": obj({"version": INT, "operation": STR, "user": STR, "committed_at": NSTR,
                            "detail": ANYOBJ, "schema_id": NINT, "changed": arr(STR)}),
        "ScopedMetadata": meta_scope,
        "ObjectRef": obj_ref,
        "ObjectMetadata": object_metadata,
        "MetadataChange": obj({"at": STR, "user": STR, "action": STR, "scope": STR, "column": NSTR, "key": STR,
                               "old": NSTR, "new": NSTR, "source": STR}),
        "TagsBody": obj({"tags": {"type": "array", "items": STR, "minItems": 1}}),
        "PropertiesBody": obj({"properties": {"type": "object", "additionalProperties": STR, "minProperties": 1}}),
        "OwnerBody": obj({"owner": STR}),
        "DescriptionBody": obj({"description": NSTR}),
        "SearchHit": obj({"type": STR, "name": STR, "id": STR, "match": STR, "score": {"type": "number"},
                          "matches": arr(ANYOBJ)},
                         {"relation": STR, "column": STR, "owner": NSTR, "format": NSTR, "tags": arr(STR),
                          "comment": NSTR}),
        "SearchPage": obj({"total": INT, "hits": arr(ref("SearchHit")), "next_cursor": NSTR,
                           "facets": obj({"kind": {"type": "object", "additionalProperties": INT},
                                          "tag": {"type": "object", "additionalProperties": INT},
                                          "owner": {"type": "object", "additionalProperties": INT},
                                          "format": {"type": "object", "additionalProperties": INT}}),
                           "facets_over": INT}),
        "LineageDataset": obj({"name": STR, "kind": STR, "dropped": BOOL, "last_access_ms": NINT,
                               "last_access": NSTR, "dataset": ANYOBJ}, {"table_id": STR}),
        "GraphNode": node,
        "GraphEdge": edge,
        "ColumnGraph": obj({"start": STR, "direction": STR, "depth": NINT, "since": NINT, "until": NINT,
                            "truncated": BOOL, "nodes": arr(ref("GraphNode")), "edges": arr(ref("GraphEdge"))}),
        "TableNode": obj({"id": STR, "name": STR, "kind": STR, "level": INT, "columns": arr(STR)},
                         {"table_id": STR, "dropped": BOOL}),
        "TableEdge": obj({"source": STR, "target": STR, "direct": INT, "indirect": INT, "whole_dataset": INT,
                          "runs": INT, "latest_ms": NINT}),
        "TableGraph": obj({"start": STR, "direction": STR, "depth": NINT, "since": NINT, "until": NINT,
                           "truncated": BOOL, "nodes": arr(ref("TableNode")), "edges": arr(ref("TableEdge"))}),
        "ImpactRow": obj({"name": STR, "dataset": STR, "column": NSTR, "depth": INT, "owner": NSTR,
                          "tags": arr(STR), "path": arr(STR)}),
        "Impact": obj({"start": STR, "since": NINT, "until": NINT, "items": arr(ref("ImpactRow"))}),
        "Run": run,
        "RunPage": obj({"items": arr(ref("Run")), "next_cursor": NSTR}),
        "DatasetRef": dataset_ref,
        "RunEdge": obj({"target": STR, "source": STR, "kind": STR, "subtype": STR, "expression": STR}),
        "RunDetail": obj({"run": ref("Run"), "inputs": arr(ref("DatasetRef")), "outputs": arr(ref("DatasetRef")),
                          "edges": arr(ref("RunEdge"))}),
        "Change": obj({"cursor": STR, "change": STR, "kind": STR, "operation": STR, "object_id": STR,
                       "name": STR, "version": NINT, "user": STR, "committed_at": STR},
                      {"before": {}, "after": {}, "added": arr(ANYOBJ), "dropped": arr(ANYOBJ),
                       "partitions_cleared": {}, "purged": {}, "detail": {}}),
        "ChangePage": obj({"items": arr(ref("Change")), "next_cursor": NSTR}),
        "RunEvent": {"type": "object", "required": ["eventTime", "producer", "schemaURL", "run", "job"],
                     "description": "an OpenLineage RunEvent (spec 2-0-2: https://openlineage.io/spec/2-0-2/"
                                    "OpenLineage.json#/$defs/RunEvent)"},
        "Object": obj({"catalog": STR, "database": STR, "name": STR, "id": STR, "kind": STR, "location": STR,
                       "properties": STRMAP, "comment": NSTR, "owner": NSTR, "current_version": INT, "version": INT,
                       "created_at": NSTR, "updated_at": NSTR, "subspaces": arr(STR)}),
        "ObjectVersion": obj({"object": STR, "version": INT, "location": STR, "properties": STRMAP, "comment": NSTR,
                              "created_by": STR, "created_at": NSTR, "rolled_back_from": NINT, "current": BOOL,
                              "dataset": STR}),
        "ObjectCreate": obj({"name": {"type": "string", "minLength": 1}, "kind": {"type": "string", "minLength": 1},
                             "location": {"type": "string", "minLength": 1}},
                            {"properties": STRMAP, "comment": STR}),
        "ObjectVersionCreate": obj({}, {"location": {"type": "string", "minLength": 1}, "properties": STRMAP,
                                        "comment": STR}),
        "Subspace": obj({"name": STR, "message_type": STR, "primary_key": arr(STR), "fields": arr(STR)}),
        "SubspaceCreate": obj({"name": {"type": "string", "minLength": 1},
                               "descriptor_set": {"type": "string", "minLength": 1,
                                                  "description": "a serialized FileDescriptorSet, base64"},
                               "primary_key": {"type": "array", "items": STR, "minItems": 1}},
                              {"message_type": STR}),
        "SubspaceRecord": obj({"key": arr({}), "record": ANYOBJ}),
        "SubspaceRecordBody": obj({"record": ANYOBJ}),
        "SubspaceKey": obj({"key": arr({})}),
        "SubspaceDeleted": obj({"deleted": arr({})}),
        "RollbackBody": obj({"version": {"type": "integer", "minimum": 1}}),
        "Dropped": obj({"dropped": STR}),
        "Location": obj({"name": STR, "url": STR, "id": STR, "comment": STR, "created_by": STR,
                         "created_micros": INT}),
        "LocationCreate": obj({"name": {"type": "string", "minLength": 1}, "url": {"type": "string", "minLength": 1}},
                              {"comment": STR}),
        "LocationGrant": obj({"privilege": {"type": "string", "minLength": 1},
                              "principal": {"type": "string", "minLength": 1}}),
        "Granted": obj({"granted": BOOL}),
        "LineageAccepted": obj({"run_id": STR, "event_type": STR, "stored": BOOL, "datasets": arr(STR),
                                "column_edges": INT}),
        # remote mode (docs/service.md): the shim's op table, the metastore API and lineage capture over HTTP
        "CatalogOpRequest": {**obj({"ctx": obj({"catalog": {"type": "string", "minLength": 1}},
                                               {"spark_catalog": STR, "branch": STR, "warehouse": STR})}),
                             "additionalProperties": True,
                             "description": "a request of the Spark shim's op table, as the local bridge gets it; "
                                            "the service sets the store, the project and the caller itself"},
        "CatalogOpAnswer": {"type": "object", "description": "the op's answer, as the local bridge gives it (an "
                                                             "error answer has the same Spark error class)"},
        "MetastoreCall": obj({"method": {"type": "string", "minLength": 1}},
                             {"args": {"type": "array"}, "kwargs": ANYOBJ, "project": NSTR, "branch": NSTR}),
        "MetastoreResult": obj({"result": {}}),
        "LineageIngest": obj({"method": {"type": "string", "enum": ["record", "report_source", "add_dropped"]}},
                             {"args": {"type": "array"}, "kwargs": ANYOBJ, "project": NSTR, "catalogs": STRMAP}),
    }


# ---- paths ------------------------------------------------------------------------------------------------
def paths() -> dict[str, Any]:
    c, d = "/api/v1/catalogs/{catalog}", "/api/v1/catalogs/{catalog}/databases/{database}"
    o = d + "/objects/{name}"
    cd = [CATALOG, DATABASE]
    node_q = query("node", "DATASET or DATASET.COLUMN (catalog.db.table, a path, an OpenLineage name)",
                   {"type": "string", "minLength": 1}, required=True, example="shop.sales.raw.amount")
    direction = query("direction", "upstream, downstream or both (default both)",
                      {"type": "string", "enum": ["upstream", "downstream", "both"]})
    depth = query("depth", "hops (default 3, at most 20)", {"type": "integer", "minimum": 1, "maximum": 20})
    kind_q = query("kind", "table, view, external table or path",
                   {"type": "string", "enum": ["table", "view", "external table", "path"]})
    impact = get("impact", "everything downstream of a column (or of a whole dataset), with owners, tags and "
                           "paths; format=csv: as CSV",
                 [node_q, SINCE, UNTIL, query("format", "json (default) or csv",
                                              {"type": "string", "enum": ["json", "csv"]})], ref("Impact"), "lineage")
    impact["get"]["responses"]["200"]["content"]["text/csv"] = {"schema": {"type": "string"}}
    return {
        "/api/v1/info": get("info", "the project, the kind of store, the auth rules", [], ref("Info"), "service"),
        "/api/v1/openapi.json": {"get": {"operationId": "openapi", "summary": "this document", "tags": ["service"],
                                         "responses": ok(ANYOBJ)}},
        "/api/v1/session": {
            **get("session", "who this browser session is (cookie) and its CSRF token", [], ref("Session"),
                  "service"),
            "post": {"operationId": "login", "summary": "sign a browser in with a token (sets an HttpOnly, "
                                                        "SameSite=Strict cookie); answers the CSRF token",
                     "tags": ["service"], "requestBody": {"required": True, "content": {
                         "application/json": {"schema": ref("SessionLogin")}}},
                     "responses": {**ok(ref("Session")), "400": {"$ref": "#/components/responses/Error"},
                                   "401": {"$ref": "#/components/responses/Error"}}},
            "delete": {"operationId": "logout", "summary": "sign this browser out", "tags": ["service"],
                       "responses": ok(ref("Session"))},
        },
        "/api/v1/catalogs": get("listCatalogs", "catalogs", [], page_of("Catalog"), "catalog"),
        c: get("getCatalog", "one catalog", [CATALOG], ref("Catalog"), "catalog"),
        c + "/databases": get("listDatabases", "databases of a catalog", [CATALOG, OFFSET, LIMIT],
                              page_of("Database"), "catalog"),
        d: get("getDatabase", "one database", cd, ref("Database"), "catalog"),
        d + "/relations": get("listRelations", "tables and views of a database (by name)",
                              cd + [query("kind", "TABLE or VIEW", {"type": "string", "enum": ["TABLE", "VIEW"]}),
                                    query("prefix", "names starting with this"), OFFSET, LIMIT],
                              page_of("Relation"), "catalog"),
        d + "/tables": get("listTables", "tables of a database", cd + [OFFSET, LIMIT], page_of("Relation"),
                           "catalog"),
        d + "/tables/{table}": get("getTable", "a table: schema, storage, owner, comment, metadata",
                                   cd + [TABLE], ref("Table"), "catalog"),
        d + "/tables/{table}/partitions": get(
            "listPartitions", "partitions of a table (paged, in value order)",
            cd + [TABLE, OFFSET, LIMIT, query("prefix", "col=value[,col=value...]: leading partition values")],
            ref("PartitionPage"), "catalog"),
        d + "/tables/{table}/history": get("tableHistory", "the table's versions (commits), newest first",
                                           cd + [TABLE, query("limit", "the most recent N", {"type": "integer",
                                                                                             "minimum": 1})],
                                           arr(ref("HistoryItem")), "catalog"),
        d + "/tables/{table}/as-of": get(
            "tableAsOf", "the table as it was at a version or a time",
            cd + [TABLE, query("version", "a table version", {"type": "integer", "minimum": 0}),
                  query("time", "an ISO date-time (UTC unless it says)")], ref("Table"), "catalog"),
        d + "/views": get("listViews", "views of a database", cd + [OFFSET, LIMIT], page_of("Relation"), "catalog"),
        d + "/views/{view}": get("getView", "a view: SQL, schema, owner, comment, metadata", cd + [VIEW],
                                 ref("View"), "catalog"),
        d + "/views/{view}/history": get("viewHistory", "the view's versions (commits), newest first", cd + [VIEW],
                                         arr(ref("HistoryItem")), "catalog"),
        d + "/objects": {
            **get("listObjects", "versioned objects of a database (volumes, models, files)",
                  cd + [query("kind", "only objects of this kind"),
                        query("dropped", "true: the dropped ones (undroppable until purge)",
                              {"type": "string", "enum": ["true", "false"]}), OFFSET, LIMIT],
                  page_of("Object"), "objects"),
            **write("post", "createObject", "create a versioned object (ushas objects create)", cd,
                    ref("ObjectCreate"), ref("Object"), "objects")},
        o: {**get("getObject", "one versioned object", cd + [OBJ], ref("Object"), "objects"),
            **write("delete", "dropObject", "drop an object (undrop brings it back until purge)", cd + [OBJ], None,
                    ref("Dropped"), "objects")},
        o + "/undrop": write("post", "undropObject", "bring a dropped object back",
                             cd + [OBJ, query("id", "which dropped object of that name (default: the last dropped)")],
                             None, ref("Object"), "objects"),
        o + "/history": get("objectHistory", "the object's commits, newest first",
                            cd + [OBJ, query("limit", "the most recent N", {"type": "integer", "minimum": 1})],
                            arr(ref("HistoryItem")), "objects"),
        o + "/versions": {
            **get("listObjectVersions", "the object's data versions, newest first",
                  cd + [OBJ, query("limit", "the most recent N", {"type": "integer", "minimum": 1})],
                  arr(ref("ObjectVersion")), "objects"),
            **write("post", "addObjectVersion", "a new data version, made current (ushas objects add-version)",
                    cd + [OBJ], ref("ObjectVersionCreate"), ref("ObjectVersion"), "objects")},
        o + "/versions/{version}": get("getObjectVersion", "one data version", cd + [OBJ, path_param(
            "version", "a version number", "1")], ref("ObjectVersion"), "objects"),
        o + "/as-of": get("objectVersionAsOf", "the data version current at a time",
                          cd + [OBJ, query("time", "an ISO date-time (UTC unless it says)",
                                           {"type": "string", "minLength": 1}, required=True)],
                          ref("ObjectVersion"), "objects"),
        o + "/subspaces": {
            **get("listSubspaces", "the object's user-defined subspaces", cd + [OBJ], arr(ref("Subspace")),
                  "objects"),
            **write("post", "registerSubspace", "register a user-defined subspace: a protobuf message type and its "
                                                "primary key fields", cd + [OBJ], ref("SubspaceCreate"),
                    ref("Subspace"), "objects")},
        o + "/subspaces/{subspace}/records": {
            **get("scanSubspace", "records in primary key order (bounds: a key or key prefix, as JSON)",
                  cd + [OBJ, SUBSPACE, query("from", "first key or prefix (JSON), inclusive", example='["c42"]'),
                        query("to", "last key or prefix (JSON), exclusive"),
                        query("limit", "at most N records (default 100, at most 10000)",
                              {"type": "integer", "minimum": 1, "maximum": 10000}),
                        query("reverse", "true: in descending key order", {"type": "string",
                                                                            "enum": ["true", "false"]})],
                  arr(ref("SubspaceRecord")), "objects"),
            **write("put", "putSubspaceRecord", "store a record (type-checked) under its primary key",
                    cd + [OBJ, SUBSPACE], ref("SubspaceRecordBody"), ref("SubspaceKey"), "objects")},
        o + "/subspaces/{subspace}/record": {
            **get("getSubspaceRecord", "the record of a primary key",
                  cd + [OBJ, SUBSPACE, KEY_Q], ref("SubspaceRecord"), "objects"),
            **write("delete", "deleteSubspaceRecord", "remove the record of a primary key", cd + [OBJ, SUBSPACE, KEY_Q],
                    None, ref("SubspaceDeleted"), "objects")},
        o + "/rollback": write("post", "rollbackObject", "a new data version copying an earlier one", cd + [OBJ],
                               ref("RollbackBody"), ref("ObjectVersion"), "objects"),
        "/api/v1/locations": {
            **get("listLocations", "declared external locations of the project (ushas locations list)", [],
                  arr(ref("Location")), "governance"),
            **write("post", "createLocation", "declare an external location (MANAGE on the project)", [],
                    ref("LocationCreate"), ref("Location"), "governance")},
        "/api/v1/locations/{name}": {
            **get("getLocation", "one external location", [LOCATION_NAME], ref("Location"), "governance"),
            **write("delete", "dropLocation", "drop an external location and its grants", [LOCATION_NAME], None,
                    ref("Dropped"), "governance")},
        "/api/v1/locations/{name}/grants": write(
            "post", "grantOnLocation", "grant CREATE EXTERNAL TABLE, READ FILES, WRITE FILES, MANAGE or OWN on a "
            "location", [LOCATION_NAME], ref("LocationGrant"), ref("Granted"), "governance"),
        "/api/v1/search": get("search", "search names, tags, properties and column names, with facets",
                              [query("q", "TERM, TERM*, tag:T, key:K, value:V, field:F, KEY=VALUE",
                                     {"type": "string", "minLength": 1}, required=True, example="pii"),
                               query("kind", "only these kinds (catalog, database, table, view, column, object)",
                                     arr({"type": "string", "enum": ["catalog", "database", "table", "view",
                                                                     "column", "object"]}), explode=True),
                               query("tag", "only objects with every one of these USER tags", arr(STR),
                                     explode=True),
                               query("owner", "only objects owned by this owner"),
                               query("format", "only tables of this format"),
                               query("limit", "hits per page (default 25, at most 200)",
                                     {"type": "integer", "minimum": 1, "maximum": 200}),
                               query("cursor", "continue after the page that answered this next_cursor")],
                              ref("SearchPage"), "search"),
        "/api/v1/metadata": get("getMetadata", "USER and SYSTEM metadata of an object (a table's: its columns' "
                                               "too)", OBJECT_PARAMS, ref("ObjectMetadata"), "metadata"),
        "/api/v1/metadata/history": get("metadataHistory", "who changed which metadata of an object, when",
                                        OBJECT_PARAMS + [query("limit", "the most recent N",
                                                               {"type": "integer", "minimum": 1})],
                                        arr(ref("MetadataChange")), "metadata"),
        "/api/v1/metadata/tags": {
            **write("post", "addTags", "add USER tags (ushas meta tag)", OBJECT_PARAMS, ref("TagsBody"),
                    ref("ObjectMetadata"), "metadata"),
            **write("delete", "removeTags", "remove USER tags (ushas meta untag)",
                    OBJECT_PARAMS + [query("tag", "a tag to remove", arr(STR), required=True, explode=True)],
                    None, ref("ObjectMetadata"), "metadata")},
        "/api/v1/metadata/properties": {
            **write("post", "setProperties", "set USER properties (ushas meta set)", OBJECT_PARAMS,
                    ref("PropertiesBody"), ref("ObjectMetadata"), "metadata"),
            **write("delete", "unsetProperties", "remove USER properties (ushas meta unset)",
                    OBJECT_PARAMS + [query("key", "a key to remove", arr(STR), required=True, explode=True)],
                    None, ref("ObjectMetadata"), "metadata")},
        "/api/v1/metadata/owner": write("put", "setOwner", "set the owner of a database, table or view",
                                        OBJECT_PARAMS, ref("OwnerBody"), ref("ObjectMetadata"), "metadata"),
        "/api/v1/metadata/description": write(
            "put", "setDescription", "set (null: clear) the description (comment) of an object or column",
            OBJECT_PARAMS, ref("DescriptionBody"), ref("ObjectMetadata"), "metadata"),
        "/api/v1/lineage/datasets": get("lineageDatasets", "datasets lineage was captured for",
                                        [kind_q, query("prefix", "names starting with this"), OFFSET, LIMIT],
                                        page_of("LineageDataset"), "lineage"),
        "/api/v1/lineage/graph": get("columnGraph", "the column-level graph around a dataset or column",
                                     [node_q, direction, depth, SINCE, UNTIL], ref("ColumnGraph"), "lineage"),
        "/api/v1/lineage/tables": get("tableGraph", "the table-level graph around a dataset",
                                      [node_q, direction, depth, SINCE, UNTIL], ref("TableGraph"), "lineage"),
        "/api/v1/lineage/impact": impact,
        "/api/v1/lineage": {"post": {
            "operationId": "receiveRunEvent", "tags": ["lineage"],
            "summary": "the OpenLineage receiver: one RunEvent (any producer)",
            "security": [{"bearer": []}],
            "requestBody": {"required": True, "content": {"application/json": {"schema": ref("RunEvent")}}},
            "responses": {**ok(ref("LineageAccepted"), code="201"), "400": {"$ref": "#/components/responses/Error"},
                          "401": {"$ref": "#/components/responses/Error"},
                          "403": {"$ref": "#/components/responses/Error"}}}},
        "/api/v1/runs": get("listRuns", "runs, newest first: of a dataset, or all (cursor-paged)",
                            [query("dataset", "only runs that read or wrote this dataset"), SINCE, UNTIL,
                             query("limit", "runs per page (default 50, at most 1000)",
                                   {"type": "integer", "minimum": 1, "maximum": 1000}),
                             query("cursor", "continue after the page that answered this next_cursor")],
                            ref("RunPage"), "lineage"),
        "/api/v1/runs/{run_id}": get("getRun", "one run: SQL, inputs, outputs, status, duration, column edges",
                                     [path_param("run_id", "a run id (or a unique prefix)")], ref("RunDetail"),
                                     "lineage"),
        "/api/v1/catalog/ops/{op}": remote_call(
            "catalogOp", "one call of the Spark shim's op table (remote mode), run as the bearer token's user "
                         "with authorization on; a read token runs only the ops that change nothing",
            [path_param("op", "an op of the shim's op table", "list_namespaces"),
             {"name": "X-Ushas-Timeout-Ms", "in": "header", "required": False,
              "description": "how long the caller waits (ms): the call's deadline on the service's clock",
              "schema": {"type": "integer", "minimum": 1}}],
            "CatalogOpRequest", "CatalogOpAnswer"),
        "/api/v1/metastore/call": remote_call(
            "metastoreCall", "one call of the metastore API (Metastore.open(\"http://...\"), the CLI's --uri "
                             "http://...), values in the remote wire encoding, as the bearer token's user",
            [], "MetastoreCall", "MetastoreResult"),
        "/api/v1/catalog/lineage": remote_call(
            "catalogLineage", "a remote-mode Spark driver's captured lineage (runs, counters, drops), stored as "
                              "the bearer token's user; needs a write token", [], "LineageIngest",
            "MetastoreResult"),
        "/api/v1/changes": get("changes", "the change feed after a cursor, oldest first",
                               [query("since", "the cursor of the last change seen (default: the oldest kept)"),
                                query("limit", "changes per page (default 100, at most 1000)",
                                      {"type": "integer", "minimum": 1, "maximum": 1000})],
                               ref("ChangePage"), "changes"),
    }


def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of API v1."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "Ushas Catalog API", "version": VERSION,
                 "description": "Catalog, search, metadata, lineage and the OpenLineage receiver of one "
                                "project of an Ushas store (ushas serve). Errors: {\"error\": {\"type\", "
                                "\"message\"}} with the type names of ushas_catalog.errors."},
        "servers": [{"url": "/"}],
        "paths": paths(),
        "components": {
            "schemas": schemas(),
            "responses": {"Error": {"description": "an error; error.type is a stable code",
                                    "content": {"application/json": {"schema": ref("Error")}}}},
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer",
                           "description": "a token of `ushas tokens create --read|--write`"},
                "session": {"type": "apiKey", "in": "cookie", "name": "ushas_session",
                            "description": "a browser session (POST /api/v1/session); writes also need the "
                                           "X-CSRF-Token header"}},
        },
    }


def write_file() -> None:
    """Rewrite the checked-in ``service/openapi.json`` from :func:`document`."""
    import json
    from pathlib import Path

    path = Path(__file__).parent / "openapi.json"
    path.write_text(json.dumps(document(), indent=1, sort_keys=True) + "\n", encoding="utf-8")


__all__ = ["VERSION", "document", "write_file"]
