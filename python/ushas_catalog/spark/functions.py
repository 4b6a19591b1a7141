"""The shim ops of persistent functions (``FunctionCatalog`` and the function statements Spark leaves to
the session catalog: ``io.ushas.spark.UshasFunctionCommand``). Each is one metastore call; DESCRIBE
FUNCTION is answered in the lines Spark's ``DescribeFunctionCommand`` prints for the session catalog."""
from __future__ import annotations

import re
from typing import Any

from ..errors import NoSuchFunction, NoSuchNamespace, SparkError, spark_id
from ..model.functions import FunctionDefinition, FunctionInfo
from .tables import SparkCtx, database_of, table_name

Request = dict[str, Any]
Answer = dict[str, Any]


def _definition(d: dict[str, Any]) -> FunctionDefinition:
    det = d.get("deterministic")
    return FunctionDefinition(class_name=d.get("class_name") or None,
                              resources=tuple((x["type"], x["uri"]) for x in d.get("resources") or ()),
                              parameters=d.get("parameters") or "", return_type=d.get("return_type") or "",
                              body=d.get("body") or "", table_function=bool(d.get("table_function")),
                              deterministic=None if det is None else bool(det), comment=d.get("comment"),
                              language=d.get("language") or "SQL")


def function_answer(f: FunctionInfo) -> dict[str, Any]:
    return {"class_name": f.class_name, "resources": [{"type": t, "uri": u} for t, u in f.resources],
            "parameters": f.parameters, "return_type": f.return_type, "body": f.body,
            "table_function": f.table_function, "deterministic": f.deterministic, "version": f.version,
            "id": f.id}


def create_function(ms: Any, r: Request) -> Answer:
    ctx = SparkCtx.of(r)
    f = ms.create_function(table_name(ctx, r), _definition(r["definition"]), replace=bool(r.get("replace")),
                           if_not_exists=bool(r.get("if_not_exists")))
    return {"function": function_answer(f)}


def drop_function(ms: Any, r: Request) -> Answer:
    ctx = SparkCtx.of(r)
    try:
        ms.drop_function(table_name(ctx, r))
    except (NoSuchFunction, NoSuchNamespace):
        if r.get("if_exists"):
            return {"dropped": False}
        raise
    return {"dropped": True}


def load_function(ms: Any, r: Request) -> Answer:
    """``loadFunction``: the function as stored (one small transaction)."""
    ctx = SparkCtx.of(r)
    try:
        f = ms.get_function(table_name(ctx, r))
    except NoSuchNamespace as e:  # Spark reports an unknown function, whatever part is missing
        raise NoSuchFunction(str(e), function=f"{r['namespace'][-1] if r['namespace'] else ''}.{r['name']}") from e
    return {"function": function_answer(f)}


def matches(pattern: str | None, name: str) -> bool:
    """Spark's SHOW ... LIKE pattern (``StringUtils.filterPattern``): ``*`` any characters, ``|`` alternatives,
    case-insensitive."""
    if pattern is None:
        return True
    for alt in pattern.split("|"):
        regex = ".*".join(re.escape(p) for p in alt.strip().split("*"))
        if re.fullmatch(regex, name, re.IGNORECASE):
            return True
    return False


def list_functions(ms: Any, r: Request) -> Answer:
    """``listFunctions`` and SHOW USER FUNCTIONS: the names (``functions``: qualified as Spark shows them)."""
    ctx = SparkCtx.of(r)
    db = database_of(r["namespace"])
    found = [f for f in ms.list_functions((ctx.catalog, db)) if matches(r.get("pattern"), f.name)]
    return {"names": [f.name for f in found], "functions": [f"{ctx.spark_catalog}.{db}.{f.name}" for f in found]}


def describe_lines(spark_catalog: str, f: FunctionInfo, extended: bool) -> list[str]:
    """What Spark's DESCRIBE FUNCTION [EXTENDED] prints for the same function in the session catalog."""
    qualified = f"{spark_catalog}.{f.database}.{f.name}"
    if f.kind == "CLASS":
        lines = [f"Function: {qualified}", f"Class: {f.class_name}", "Usage: N/A."]
        if extended:
            lines.append(f"Extended Usage:\n    No example/argument for {f.name}.\n")
        return lines
    returns = _returns(f)
    rows: list[tuple[str, str | list[str]]] = [
        ("Function", qualified), ("Type", "TABLE" if f.table_function else "SCALAR"),
        ("Input", _columns(f.parameters, extended)),
        ("Returns", _columns(returns, extended) if f.table_function else returns)]
    if extended:
        if f.comment:
            rows.append(("Comment", f.comment))
        rows.append(("Deterministic", "false" if f.deterministic is False else "true"))
        rows.append(("Data Access", "CONTAINS SQL"))
        rows.append(("Create Time", f.created_at.strftime("%a %b %d %H:%M:%S UTC %Y")))
        rows.append(("Body", f.body))
    width = max(len(k) for k, _ in rows) + 2
    lines = []
    for k, v in rows:
        for i, text in enumerate(v if isinstance(v, list) else [v]):
            lines.append(f"{k + ':' if i == 0 else '':<{width}}{text}")
    return lines


def _columns(ddl: str, comments: bool) -> str | list[str]:
    """A parameter or RETURNS TABLE column list as Spark prints it: one column a line, names and types
    aligned (types padded), ``'comment'`` after the type in EXTENDED; the text as written if it does not
    parse here."""
    from ..errors import InvalidArgument
    from ..model.schema import parse_ddl

    if not ddl.strip():
        return ""
    try:
        fields = parse_ddl(ddl).fields
    except InvalidArgument:
        return ddl
    names = max(len(c.name) for c in fields)
    types = max(len(c.data_type.ddl()) for c in fields)
    return [f"{c.name:<{names}} {c.data_type.ddl():<{types}}"
            + (f" '{c.comment}'" if comments and c.comment is not None else "") for c in fields]


def _returns(f: FunctionInfo) -> str:
    text = f.return_type.strip()
    if f.table_function:
        text = re.sub(r"(?is)^table\s*\(?(.*?)\)?\s*$", r"\1", text)
    return text


def describe_function(ms: Any, r: Request) -> Answer:
    """DESCRIBE FUNCTION [EXTENDED]; an unknown function is Spark's ``UNRESOLVED_ROUTINE``, as when Spark
    resolves the name itself."""
    ctx = SparkCtx.of(r)
    try:
        f = ms.get_function(table_name(ctx, r))
    except (NoSuchFunction, NoSuchNamespace) as e:
        name = [*r["namespace"], r["name"]]
        raise NoSuchFunction(str(e), function=".".join(name), spark=SparkError("UNRESOLVED_ROUTINE", {
            "routineName": spark_id(*name),
            "searchPath": f"[{spark_id('system', 'builtin')}, {spark_id('system', 'session')}, "
                          f"{spark_id(ctx.spark_catalog, *r['namespace'])}]"})) from e
    return {"lines": describe_lines(ctx.spark_catalog, f, bool(r.get("extended")))}


OPS = {"create_function": create_function, "drop_function": drop_function, "load_function": load_function,
       "list_functions": list_functions, "describe_function": describe_function}
