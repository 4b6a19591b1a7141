"""Column lineage from SQL text, without Spark, through sqlglot.

Size (over 600 lines): one :class:`StatementLineage` walk whose scope handlers share its state
(ids, intermediate nodes, the scope map); split apart they would pass that state around.

``sql_lineage(sql, schema=..., dialect="spark")`` parses one statement (a query, ``INSERT …
SELECT`` or ``CREATE TABLE … AS SELECT``), qualifies it against the table schemas
(:mod:`lineage.sql_schema`) with :func:`sqlglot.optimizer.qualify.qualify`, and walks its scopes
once, bottom-up, into the same :class:`~lineage.model.LineageResult` the Spark plan resolver
returns (``producer="sqlglot"``):

- every computed projection is an intermediate node ``name#id`` (ids unique within the result)
  whose :class:`~lineage.model.Derivation` lists its inputs as DIRECT steps (IDENTITY,
  TRANSFORMATION, AGGREGATION) and column-scoped INDIRECT steps (CONDITIONAL for the conditions
  of CASE / IF, WINDOW for PARTITION BY / ORDER BY of a window, FILTER for an aggregate's
  ``FILTER (WHERE …)``); a projection that is a bare column keeps the column's node (as Spark
  keeps an attribute's exprId);
- leaves are dataset columns: catalog tables, ``VALUES`` and table functions (``range(…)``);
- row-level INDIRECT dependencies are kept once per clause as
  :class:`~lineage.model.IndirectDependency`: WHERE / HAVING / QUALIFY (FILTER), JOIN … ON /
  USING (JOIN), GROUP BY (GROUP_BY), ORDER BY / SORT BY / CLUSTER BY (SORT), INTERSECT / EXCEPT
  (FILTER). A clause of a query whose rows make the result (the outer query, its FROM sources,
  set-operation branches, the subqueries of its predicates) affects the whole output
  (``scope=None``); a clause inside a subquery of a projection only affects that projection
  (``scope`` = the projection's node).

Bad input raises typed errors: :class:`~ushas_catalog.errors.InvalidArgument` (unparsable SQL,
several statements, a statement without column lineage, an unknown column or dialect) and
:class:`~ushas_catalog.errors.NoSuchTable` (a table no schema source knows).
"""
from __future__ import annotations

import itertools
from typing import Any, Iterator, Sequence

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import OptimizeError, ParseError, SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, build_scope
from sqlglot.schema import MappingSchema as SqlglotSchema

from ushas_catalog.errors import InvalidArgument, NoSuchTable

from .model import (
    ColumnNode,
    Dataset,
    Derivation,
    EdgeKind,
    EdgeSubtype,
    IndirectDependency,
    LineageResult,
    Step,
    Unresolved,
)
from .sql_refs import (
    Ref,
    RefGenerator,
    ScopeInfo,
    SqlWrite,
    children_of,
    columns_in_scope,
    conditional,
    has_aggregate,
    spark_name,
    steps_of,
    then_subtype,
    values_query,
)
from .sql_schema import SchemaLike, SchemaSource, TableName, as_schema_source, candidate_names

DEFAULT_DIALECT = "spark"
PRODUCER = "sqlglot"

# placeholders for the missing catalog / database of a table, so that every table handed to
# sqlglot has three parts (its schema must have one depth); never shown to users
_NO_CATALOG = "ushas_no_catalog"
_NO_DATABASE = "ushas_no_database"
_META_NAME = "ushas_output_name"
_META_USING = "ushas_using"  # on a SELECT: USING / NATURAL join column -> join side
_NATURAL = "*"

#: clause of a SELECT -> (subtype, operator) of the row-level dependency it creates
_CLAUSES: tuple[tuple[str, EdgeSubtype, str], ...] = (
    ("where", EdgeSubtype.FILTER, "Filter"),
    ("group", EdgeSubtype.GROUP_BY, "Aggregate"),
    ("having", EdgeSubtype.FILTER, "Filter"),
    ("qualify", EdgeSubtype.FILTER, "Filter"),
    ("order", EdgeSubtype.SORT, "Sort"),
    ("sort", EdgeSubtype.SORT, "Sort"),
    ("cluster", EdgeSubtype.SORT, "Sort"),
)

#: window functions that pick one row's value (sqlglot types some of them as aggregates)
_OFFSET_FUNCTIONS: tuple[type[exp.Expr], ...] = (exp.Lag, exp.Lead, exp.FirstValue, exp.LastValue, exp.NthValue)

_SET_OPERATORS: dict[type[exp.Expr], str] = {
    exp.Union: "Union",
    exp.Intersect: "Intersect",
    exp.Except: "Except",
}


def sql_lineage(sql: str, schema: SchemaLike = None, *, dialect: str = DEFAULT_DIALECT,
                catalog: str | None = None, database: str | None = None) -> LineageResult:
    """Column lineage of one SQL statement.

    ``schema``: a :class:`~lineage.sql_schema.SchemaSource` (e.g. the metastore through
    :class:`~lineage.sql_schema.MetastoreSchema`) or a mapping ``{table: {column: type}}``
    (optionally nested by database and catalog). ``catalog`` / ``database``: the session's
    current catalog and database, used for names written with fewer parts.
    """
    statement = parse_statement(sql, dialect)
    return StatementLineage(statement, as_schema_source(schema), _dialect(dialect),
                            catalog.lower() if catalog else None,
                            database.lower() if database else None).result()


def parse_statement(sql: str, dialect: str = DEFAULT_DIALECT) -> exp.Expr:
    """Parse exactly one statement or raise :class:`InvalidArgument`."""
    if not isinstance(sql, str) or not sql.strip():
        raise InvalidArgument("no SQL statement given")
    dialect_obj = _dialect(dialect)
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect_obj) if s is not None]
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        where = f" at line {first.get('line')}, column {first.get('col')}" if first.get("line") else ""
        detail = _parse_error_detail(first) or str(exc).splitlines()[0]
        raise InvalidArgument(f"cannot parse SQL ({dialect}){where}: {detail}") from None
    except SqlglotError as exc:
        raise InvalidArgument(f"cannot parse SQL ({dialect}): {exc}") from None
    if len(statements) != 1:
        raise InvalidArgument(f"expected one SQL statement, got {len(statements)}")
    return statements[0]


def _parse_error_detail(error: dict[str, Any]) -> str:
    description = str(error.get("description") or "")
    if " but got <Token" in description:  # sqlglot prints its token object: show the text instead
        expected = description.split(" but got <Token")[0]
        near = error.get("highlight")
        description = f"{expected}, near {near!r}" if near and "SENTINEL" not in description \
            else f"{expected}, at the end of the statement"
    return description


def _dialect(dialect: str | Dialect) -> Dialect:
    try:
        return Dialect.get_or_raise(dialect)
    except ValueError as exc:
        raise InvalidArgument(f"unknown SQL dialect {dialect!r}: {exc}") from None


class StatementLineage:
    """One walk over one parsed statement (build with :func:`sql_lineage`)."""

    def __init__(self, statement: exp.Expr, schema: SchemaSource, dialect: Dialect,
                 catalog: str | None, database: str | None) -> None:
        self.dialect = dialect
        self.schema = schema
        self.catalog = catalog
        self.database = database
        self._ids: Iterator[int] = itertools.count()
        self._derivations: dict[ColumnNode, Derivation] = {}
        self._unresolved: list[Unresolved] = []
        self._scopes: dict[int, ScopeInfo] = {}
        self._datasets: dict[TableName, Dataset] = {}
        self._names: dict[int, str] = {}  # id(exp.Column) -> rendered reference
        self._relations: dict[tuple[int, str], ColumnNode] = {}  # (id(table), column) -> node
        self._pivots: dict[tuple[int, str], ColumnNode] = {}  # (id(pivot), column) -> node
        self._table_columns: dict[TableName, list[str]] = {}
        self._generator = RefGenerator(dialect)
        self._write, query = self._split(statement)
        self._root = self._qualified_scope(query)

    # ---- statement ------------------------------------------------------------------------
    def _split(self, statement: exp.Expr) -> tuple[SqlWrite | None, exp.Query]:
        if isinstance(statement, exp.Query):
            return None, statement
        if isinstance(statement, exp.Insert) and isinstance(statement.expression, exp.Values):
            statement = statement.copy()
            statement.set("expression", values_query(statement.expression))
        if isinstance(statement, exp.Insert) and isinstance(statement.expression, exp.Query):
            target = statement.this
            columns: tuple[str, ...] | None = None
            if isinstance(target, exp.Schema):
                columns = tuple(c.name.lower() for c in target.expressions)
                target = target.this
            if not isinstance(target, exp.Table):
                raise InvalidArgument("INSERT target is not a table")
            static = frozenset(
                e.this.name.lower() for e in (target.args.get("partition") or exp.Partition()).expressions
                if isinstance(e, exp.EQ) and isinstance(e.this, exp.Column))
            dataset, table_columns = self._lookup(target)
            if columns is None:
                columns = tuple(c for c in table_columns if c not in static)
            else:
                unknown = [c for c in columns if c not in table_columns]
                if unknown:
                    raise InvalidArgument(f"INSERT names columns {unknown} that {dataset.name} does not have")
            return SqlWrite(dataset, columns, static, "InsertIntoStatement"), statement.expression
        if (isinstance(statement, exp.Create) and isinstance(statement.expression, exp.Query)
                and str(statement.args.get("kind", "")).upper() in ("TABLE", "VIEW")):
            target = statement.this.this if isinstance(statement.this, exp.Schema) else statement.this
            if not isinstance(target, exp.Table):
                raise InvalidArgument("CREATE … AS SELECT target is not a table")
            kind = str(statement.args.get("kind")).upper()
            operation = "CreateViewCommand" if kind == "VIEW" else (
                "ReplaceTableAsSelect" if statement.args.get("replace") else "CreateTableAsSelect")
            return SqlWrite(self._dataset(self._qualified_name(target)), None, frozenset(), operation), \
                statement.expression
        raise InvalidArgument(
            f"a {statement.key.upper()} statement has no column lineage here: give a query, "
            "INSERT … SELECT or CREATE TABLE … AS SELECT")

    def _qualified_name(self, table: exp.Table) -> TableName:
        written = tuple(p.name.lower() for p in table.parts)
        if len(written) == 1 and self.database:
            written = (self.database, *written)
        if len(written) == 2 and self.catalog:
            written = (self.catalog, *written)
        return written

    def _dataset(self, name: TableName) -> Dataset:
        if name not in self._datasets:
            catalog = name[0] if len(name) == 3 else None
            self._datasets[name] = Dataset.table(catalog, *name[-2 if len(name) >= 2 else -1:])
        return self._datasets[name]

    def _lookup(self, table: exp.Table) -> tuple[Dataset, dict[str, str]]:
        written = tuple(p.name.lower() for p in table.parts)
        if len(written) > 3:
            raise InvalidArgument(f"table name {table.sql(dialect=self.dialect)} has more than three parts")
        for name in candidate_names(written, self.catalog, self.database):
            columns = self.schema.columns(name)
            if columns is not None:
                return self._dataset(self._qualified_name(table)), dict(columns)
        raise NoSuchTable(f"table or view not found: {'.'.join(written)} "
                          "(give its schema, or a three-part name of a catalog table)")

    def _qualified_scope(self, query: exp.Query) -> Scope:
        query = query.copy()
        ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
        nested: dict[str, dict[str, dict[str, dict[str, str]]]] = {}
        for table in list(query.find_all(exp.Table)):
            if not isinstance(table.this, exp.Identifier):
                continue  # a table function: range(…), …
            if not table.args.get("db") and table.name.lower() in ctes:
                continue
            dataset, columns = self._lookup(table)
            catalog = dataset.catalog or _NO_CATALOG
            database = dataset.identifier[0] if len(dataset.identifier) == 2 else _NO_DATABASE
            name = dataset.identifier[-1]
            if not table.args.get("alias"):
                table.set("alias", exp.TableAlias(this=exp.to_identifier(table.name)))
            table.set("this", exp.to_identifier(name))
            table.set("db", exp.to_identifier(database))
            table.set("catalog", exp.to_identifier(catalog))
            nested.setdefault(catalog, {}).setdefault(database, {})[name] = columns
            self._table_columns[(catalog, database, name)] = list(columns)
        self._remember_output_names(query)
        self._remember_using_joins(query)
        self._written_coalesce = {id(c) for c in query.find_all(exp.Coalesce)}
        try:
            qualified = qualify(query, dialect=self.dialect, schema=SqlglotSchema(nested, dialect=self.dialect),
                                validate_qualify_columns=True, identify=False, quote_identifiers=False)
        except OptimizeError as exc:
            raise InvalidArgument(f"cannot resolve the statement: {exc}") from None
        except SqlglotError as exc:
            raise InvalidArgument(f"cannot analyze the statement: {exc}") from None
        root = build_scope(qualified)
        if root is None:
            raise InvalidArgument("the statement has no query to take lineage from")
        return root

    def _remember_output_names(self, query: exp.Query) -> None:
        """Unnamed projections of the result get Spark's kind of name (``sum(x)``), not
        sqlglot's ``_col_0``."""
        select = query
        while isinstance(select, exp.SetOperation):
            select = select.this
        if isinstance(select, exp.Subquery):
            select = select.unnest()
        if not isinstance(select, exp.Select):
            return
        for sel in select.expressions:
            if not isinstance(sel, (exp.Alias, exp.Column, exp.Star)):
                sel.meta[_META_NAME] = spark_name(sel, self.dialect)

    @staticmethod
    def _remember_using_joins(query: exp.Query) -> None:
        """sqlglot rewrites a USING / NATURAL join's column to COALESCE(left, right); Spark
        takes the left side's column (the right's for a RIGHT join, COALESCE only for FULL)."""
        for select in query.find_all(exp.Select):
            sides: dict[str, str] = {}
            for join in select.args.get("joins") or ():
                side = (join.side or "").upper()
                if join.method and join.method.upper() == "NATURAL":
                    sides[_NATURAL] = side
                for identifier in join.args.get("using") or ():
                    sides[identifier.name.lower()] = side
            if sides:
                select.meta[_META_USING] = sides

    def _using_columns(self, coalesce: exp.Coalesce) -> list[exp.Expr] | None:
        """The columns Spark reads for a COALESCE that sqlglot generated for a USING column."""
        if id(coalesce) in self._written_coalesce:
            return None
        args = [coalesce.this, *coalesce.expressions]
        if not all(isinstance(a, exp.Column) for a in args) or len({a.name for a in args}) != 1:
            return None
        select = coalesce.find_ancestor(exp.Select)
        sides = select.meta.get(_META_USING, {}) if select is not None else {}
        side = sides.get(args[0].name.lower(), sides.get(_NATURAL))
        if side is None or side == "FULL":
            return None
        return [args[-1]] if side == "RIGHT" else [args[0]]

    # ---- result ---------------------------------------------------------------------------
    def result(self) -> LineageResult:
        order = list(self._root.traverse())
        for scope in order:
            self._info(scope)
        indirect = self._indirect(order)
        root = self._scopes[id(self._root.expression)]
        outputs = list(root.outputs)
        target: Dataset | None = None
        operation: str | None = None
        if self._write is not None:
            target, operation = self._write.target, self._write.operation
            columns = self._write.columns if self._write.columns is not None else tuple(root.names)
            if len(columns) != len(outputs):
                raise InvalidArgument(f"{operation} into {target.name}: the query gives {len(outputs)} "
                                      f"columns, the target expects {len(columns)} ({', '.join(columns)})")
            written: list[ColumnNode] = []
            for name, source in zip(columns, outputs):
                node = ColumnNode.column(target, name)
                self._derivations[node] = Derivation(operation, f"{name} <- {source}", (Step(source, EdgeSubtype.IDENTITY),))
                written.append(node)
            outputs = written
        return LineageResult(outputs=tuple(outputs), derivations=dict(self._derivations),
                             indirect=tuple(indirect), unresolved=tuple(self._unresolved),
                             target=target, operation=operation, producer=PRODUCER)

    # ---- scopes ---------------------------------------------------------------------------
    def _info(self, scope: Scope) -> ScopeInfo:
        # keyed by the scope's expression: sqlglot gives a recursive CTE's self-reference a scope
        # of its own over the anchor query, which must resolve as the anchor does
        info = self._scopes.get(id(scope.expression))
        if info is None:
            info = ScopeInfo()
            self._scopes[id(scope.expression)] = info  # before filling: guards recursive references
            expression = scope.expression
            if isinstance(expression, exp.SetOperation):
                self._set_operation(scope, info)
            elif isinstance(expression, exp.Select):
                self._select(scope, info)
            elif isinstance(expression, exp.Values):
                self._values(scope, info)
            elif isinstance(expression, (exp.Lateral, exp.Unnest)) or isinstance(expression, exp.UDTF):
                self._generator_source(scope, info)
            else:
                self._unresolved.append(Unresolved(type(expression).__name__, expression.sql(dialect=self.dialect)[:200]))
        return info

    def _new_node(self, name: str) -> ColumnNode:
        return ColumnNode.attribute(name, next(self._ids))

    def _select(self, scope: Scope, info: ScopeInfo) -> None:
        select: exp.Select = scope.expression  # type: ignore[assignment]
        self._pivot_dependencies(scope, info)
        aggregate = bool(select.args.get("group")) or any(
            has_aggregate(s) for s in select.expressions)
        for sel in select.expressions:
            name = sel.alias_or_name
            body = sel.this if isinstance(sel, exp.Alias) else sel
            name = body.meta.get(_META_NAME, name)
            refs = self._refs(body, scope, EdgeSubtype.IDENTITY)
            if (isinstance(body, (exp.Column, exp.Coalesce)) and len(refs) == 1 and refs[0].subtype is EdgeSubtype.IDENTITY
                    and refs[0].node.name == name):
                info.outputs.append(refs[0].node)  # a bare column keeps its node
                info.names.append(name)
                continue
            node = self._new_node(name)
            operator = "Window" if body.find(exp.Window) else ("Aggregate" if aggregate else "Project")
            text = f"{self._render(body)} AS {node}"
            self._derivations[node] = Derivation(operator, text, steps_of(refs), expression_kind="Alias",
                                                 resolved=not self._missing(body))
            info.outputs.append(node)
            info.names.append(name)
        for join in select.args.get("joins") or ():
            on = join.args.get("on")
            if on is not None:
                sources = self._sources(on, scope, EdgeSubtype.JOIN)
                info.deps.append(("Join", EdgeSubtype.JOIN, self._render(on), sources))
        for key, subtype, operator in _CLAUSES:
            clause = select.args.get(key)
            if clause is None:
                continue
            sources = self._sources(clause, scope, subtype, info)
            if sources:
                info.deps.append((operator, subtype, self._render(clause), sources))

    def _set_operation(self, scope: Scope, info: ScopeInfo) -> None:
        expression: exp.SetOperation = scope.expression  # type: ignore[assignment]
        operator = _SET_OPERATORS.get(type(expression), type(expression).__name__)
        branches = [self._info(s) for s in scope.set_operation_scopes]
        if not branches:
            return
        left = branches[0]
        if operator != "Union":
            info.outputs.extend(left.outputs)
            info.names.extend(left.names)
            for branch in branches[1:]:
                info.deps.append((operator, EdgeSubtype.FILTER, operator.upper(), tuple(branch.outputs)))
        else:
            for i, name in enumerate(left.names):
                node = self._new_node(name)
                inputs = [b.outputs[i] for b in branches if i < len(b.outputs)]
                self._derivations[node] = Derivation(
                    operator, f"{operator.lower()}({', '.join(map(str, inputs))}) AS {node}",
                    tuple(Step(n, EdgeSubtype.IDENTITY) for n in inputs),
                    resolved=all(len(b.outputs) == len(left.outputs) for b in branches))
                info.outputs.append(node)
                info.names.append(name)
        order = expression.args.get("order")
        if order is not None:
            sources = self._sources(order, scope, EdgeSubtype.SORT, info)
            if sources:
                info.deps.append(("Sort", EdgeSubtype.SORT, self._render(order), sources))

    def _values(self, scope: Scope, info: ScopeInfo) -> None:
        values: exp.Values = scope.expression  # type: ignore[assignment]
        dataset = Dataset.inline("VALUES")
        alias = values.args.get("alias")
        names = [c.name.lower() for c in alias.columns] if alias is not None and alias.columns else []
        width = len(values.expressions[0].expressions) if values.expressions else 0
        names += [f"col{i + 1}" for i in range(len(names), width)]
        for name in names:
            info.outputs.append(ColumnNode.column(dataset, name))
            info.names.append(name)

    def _generator_source(self, scope: Scope, info: ScopeInfo) -> None:
        """LATERAL VIEW explode(…) t AS a, b (and other table-generating functions)."""
        expression = scope.expression
        function = expression.this if isinstance(expression, exp.Lateral) else expression
        alias = expression.args.get("alias")
        names = [c.name.lower() for c in alias.columns] if alias is not None and alias.columns else ["col"]
        refs = self._refs(function, scope, EdgeSubtype.TRANSFORMATION)
        body = self._render(function)
        for name in names:
            node = self._new_node(name)
            self._derivations[node] = Derivation("Generate", f"{body} AS {node}", steps_of(refs),
                                                 expression_kind="Alias")
            info.outputs.append(node)
            info.names.append(name)

    # ---- expressions ----------------------------------------------------------------------
    def _refs(self, expression: exp.Expr, scope: Scope, subtype: EdgeSubtype,
              info: ScopeInfo | None = None) -> list[Ref]:
        """The column nodes ``expression`` reads, each with the subtype of its path."""
        out: list[Ref] = []
        subqueries = {id(s.expression): s for s in scope.subquery_scopes}
        stack: list[tuple[exp.Expr, EdgeSubtype]] = [(expression, subtype)]
        while stack:
            node, sub = stack.pop()
            if isinstance(node, exp.Column):
                resolved = self._column(node, scope, info)
                if resolved is not None:
                    target, extra = resolved
                    out.append(Ref(target, then_subtype(sub, extra)))
                continue
            if isinstance(node, (exp.Select, exp.SetOperation)):
                inner = subqueries.get(id(node))
                if inner is None:
                    self._unresolved.append(Unresolved("Subquery", node.sql(dialect=self.dialect)[:200]))
                    continue
                if isinstance(node.parent, exp.Exists):
                    continue  # EXISTS reads no value: its own clauses are its dependencies
                out.extend(Ref(n, sub) for n in self._info(inner).outputs)
                continue
            if isinstance(node, exp.Window):
                stack.append((node.this, sub))
                for key in ("partition_by", "order"):
                    for child in children_of(node.args.get(key)):
                        stack.append((child, EdgeSubtype.WINDOW if sub.kind is EdgeKind.DIRECT else sub))
                continue
            if isinstance(node, exp.Coalesce):
                using = self._using_columns(node)
                if using is not None:
                    stack.extend((column, sub) for column in using)
                    continue
            if isinstance(node, exp.Case):
                cond = conditional(sub)
                if node.this is not None:
                    stack.append((node.this, cond))
                for branch in node.args.get("ifs") or ():
                    stack.append((branch.this, cond))
                    stack.append((branch.args["true"], then_subtype(sub, EdgeSubtype.TRANSFORMATION)))
                default = node.args.get("default")
                if default is not None:
                    stack.append((default, then_subtype(sub, EdgeSubtype.TRANSFORMATION)))
                continue
            if isinstance(node, exp.If):
                stack.append((node.this, conditional(sub)))
                for key in ("true", "false"):
                    if node.args.get(key) is not None:
                        stack.append((node.args[key], then_subtype(sub, EdgeSubtype.TRANSFORMATION)))
                continue
            if isinstance(node, exp.Filter):  # aggregate(...) FILTER (WHERE ...)
                stack.append((node.this, sub))
                stack.append((node.expression, EdgeSubtype.FILTER if sub.kind is EdgeKind.DIRECT else sub))
                continue
            if isinstance(node, (exp.Alias, exp.Paren, exp.Ordered, exp.Where, exp.Having, exp.Group,
                                 exp.Order, exp.Qualify, exp.Tuple, exp.Cube, exp.Rollup, exp.GroupingSets,
                                 exp.Cluster, exp.Sort)):
                stack.extend((child, sub) for child in node.iter_expressions())
                continue
            step = (EdgeSubtype.AGGREGATION if isinstance(node, exp.AggFunc) and not isinstance(node, _OFFSET_FUNCTIONS)
                    else EdgeSubtype.TRANSFORMATION)
            stack.extend((child, then_subtype(sub, step)) for child in node.iter_expressions())
        out.reverse()
        return out

    def _sources(self, expression: exp.Expr, scope: Scope, subtype: EdgeSubtype,
                 info: ScopeInfo | None = None) -> tuple[ColumnNode, ...]:
        return tuple(dict.fromkeys(r.node for r in self._refs(expression, scope, subtype, info)))

    def _column(self, column: exp.Column, scope: Scope,
                info: ScopeInfo | None) -> tuple[ColumnNode, EdgeSubtype] | None:
        parts = [p.name.lower() for p in column.parts]
        current: Scope | None = scope
        while current is not None:
            for k in range(len(parts) - 1):
                pivot = next((p for p in current.pivots if p.alias_or_name.lower() == parts[k]
                              and column.find_ancestor(exp.Pivot) is not p), None)
                if pivot is not None:
                    node = self._pivot_column(pivot, parts[k + 1], current)
                    if node is not None:
                        self._names[id(column)] = str(node)
                        return node, EdgeSubtype.TRANSFORMATION if k + 2 < len(parts) else EdgeSubtype.IDENTITY
                source = current.sources.get(parts[k])
                if source is None:
                    continue
                name = parts[k + 1]
                extra = EdgeSubtype.TRANSFORMATION if k + 2 < len(parts) else EdgeSubtype.IDENTITY
                node = self._source_column(source, name)
                if node is None:
                    break
                self._names[id(column)] = str(node)
                return node, extra
            current = current.parent
        if info is not None and len(parts) == 1 and parts[0] in info.names:
            node = info.outputs[info.names.index(parts[0])]  # ORDER BY / HAVING on an output alias
            self._names[id(column)] = str(node)
            return node, EdgeSubtype.IDENTITY
        self._unresolved.append(Unresolved("Column", column.sql(dialect=self.dialect)))
        return None

    # ---- PIVOT / UNPIVOT -------------------------------------------------------------------
    @staticmethod
    def _pivot_source(pivot: exp.Pivot, scope: Scope) -> exp.Table | Scope | None:
        parent = pivot.parent
        return scope.sources.get(parent.alias_or_name.lower()) if parent is not None else None

    def _source_names(self, source: exp.Table | Scope | None) -> list[str]:
        if isinstance(source, Scope):
            return list(self._info(source).names)
        if isinstance(source, exp.Table):
            return list(self._table_columns.get(tuple(p.name for p in source.parts), []))
        return []

    def _pivot_refs(self, expression: exp.Expr, source: exp.Table | Scope | None, scope: Scope,
                    subtype: EdgeSubtype) -> list[Ref]:
        """Refs of a PIVOT / UNPIVOT clause: its columns may be written unqualified."""
        for column in columns_in_scope(expression):
            if not column.table and source is not None:
                node = self._source_column(source, column.name.lower())
                if node is not None:
                    self._names[id(column)] = str(node)
        unqualified = {id(c) for c in columns_in_scope(expression) if not c.table and id(c) in self._names}
        refs: list[Ref] = []
        for column in columns_in_scope(expression):
            if id(column) in unqualified:
                node = self._source_column(source, column.name.lower()) if source is not None else None
                if node is not None:
                    refs.append(Ref(node, subtype))
        qualified = [r for r in self._refs(expression, scope, subtype)
                     if not any(r.node == ref.node for ref in refs)]
        return refs + qualified

    def _pivot_column(self, pivot: exp.Pivot, name: str, scope: Scope) -> ColumnNode | None:
        key = (id(pivot), name)
        if key in self._pivots:
            return self._pivots[key]
        source = self._pivot_source(pivot, scope)
        produced = self._pivot_outputs(pivot, source, scope)
        for out_name, node in produced.items():
            self._pivots[(id(pivot), out_name)] = node
        if name in produced:
            return produced[name]
        return self._source_column(source, name) if source is not None else None

    def _pivot_outputs(self, pivot: exp.Pivot, source: exp.Table | Scope | None,
                       scope: Scope) -> dict[str, ColumnNode]:
        """The columns a PIVOT / UNPIVOT makes (the others pass through from its source)."""
        out: dict[str, ColumnNode] = {}
        fields = [f for f in pivot.fields if isinstance(f, exp.In)]
        if pivot.args.get("unpivot"):
            values = [i.name.lower() for e in pivot.expressions for i in e.find_all(exp.Identifier)]
            for field in fields:
                entries = [e.this if isinstance(e, exp.PivotAlias) or isinstance(e, exp.Alias) else e
                           for e in field.expressions]
                per_value: list[list[Ref]] = [[] for _ in values]
                for entry in entries:
                    columns = entry.expressions if isinstance(entry, exp.Tuple) else [entry]
                    for i, column in enumerate(columns[:len(values)]):
                        per_value[i] += self._pivot_refs(column, source, scope, EdgeSubtype.IDENTITY)
                for value, refs in zip(values, per_value):
                    node = self._new_node(value)
                    self._derivations[node] = Derivation(
                        "Unpivot", f"{self._render(field)} AS {node}", steps_of(refs), expression_kind="Alias")
                    out[value] = node
                label = field.this.name.lower()
                node = self._new_node(label)
                self._derivations[node] = Derivation("Unpivot", f"{label} AS {node}", (), expression_kind="Alias")
                out[label] = node
            return out
        conditions = [r for f in fields for r in self._pivot_refs(f.this, source, scope, EdgeSubtype.CONDITIONAL)]
        aggregates = pivot.expressions
        generated = pivot.args.get("columns") or []
        for i, aggregate in enumerate(aggregates):
            body = aggregate.this if isinstance(aggregate, exp.Alias) else aggregate
            refs = self._pivot_refs(body, source, scope, EdgeSubtype.IDENTITY)
            for column in generated[i::len(aggregates)]:
                node = self._new_node(column.name.lower())
                self._derivations[node] = Derivation(
                    "Pivot", f"{self._render(body)} AS {node}", steps_of(refs + conditions), expression_kind="Alias")
                out[column.name.lower()] = node
        return out

    def _pivot_dependencies(self, scope: Scope, info: ScopeInfo) -> None:
        """A PIVOT groups by every column of its source it does not aggregate or pivot on."""
        for pivot in scope.pivots:
            if pivot.args.get("unpivot"):
                continue
            source = self._pivot_source(pivot, scope)
            used = {c.name.lower() for e in [*pivot.expressions, *pivot.fields] for c in e.find_all(exp.Column)}
            grouped = [n for n in self._source_names(source) if n not in used]
            nodes = tuple(n for n in (self._source_column(source, g) for g in grouped) if n is not None) \
                if source is not None else ()
            if nodes:
                info.deps.append(("Pivot", EdgeSubtype.GROUP_BY, f"GROUP BY {', '.join(map(str, nodes))}", nodes))

    def _source_column(self, source: exp.Table | Scope, name: str) -> ColumnNode | None:
        if isinstance(source, Scope):
            info = self._info(source)
            if name in info.names:
                return info.outputs[info.names.index(name)]
            return None
        if not isinstance(source, exp.Table):
            return None
        key = (id(source), name)
        node = self._relations.get(key)
        if node is None:
            known = self._table_columns.get(tuple(p.name for p in source.parts))
            if known is not None and name not in known:
                return None
            dataset = self._relation_dataset(source)
            node = self._new_node(name)
            self._derivations[node] = Derivation(
                "Relation", f"{dataset.name}.{name}", (Step(ColumnNode.column(dataset, name), EdgeSubtype.IDENTITY),))
            self._relations[key] = node
        return node

    def _relation_dataset(self, table: exp.Table) -> Dataset:
        if not isinstance(table.this, exp.Identifier):  # a table function: range(…)
            return Dataset.inline(table.this.sql(dialect=self.dialect, normalize_functions="lower"))
        parts = tuple(p.name for p in table.parts)
        return self._dataset(tuple(p for p in parts if p not in (_NO_CATALOG, _NO_DATABASE)))

    def _missing(self, expression: exp.Expr) -> bool:
        return any(id(c) not in self._names for c in columns_in_scope(expression))

    def _render(self, expression: exp.Expr) -> str:
        return self._generator.render(expression, self._names)

    # ---- row-level dependencies -----------------------------------------------------------
    def _indirect(self, order: Sequence[Scope]) -> list[IndirectDependency]:
        """Assign each scope's clause dependencies to the whole output or to the projection(s)
        they affect, walking scopes top-down (the reverse of sqlglot's bottom-up traversal)."""
        whole: set[int] = {id(self._root.expression)}
        anchors: dict[int, dict[ColumnNode, None]] = {}
        for scope in reversed(order):
            key = id(scope.expression)
            here_whole = key in whole
            here = anchors.get(key, {})
            info = self._scopes[key]
            children: list[tuple[Scope, ColumnNode | None]] = []
            for source in scope.sources.values():
                if isinstance(source, Scope):
                    children.append((source, None))
            children.extend((s, None) for s in scope.set_operation_scopes)
            for sub in scope.subquery_scopes:
                children.append((sub, self._projection_of(sub, scope, info)))
            for child, projection in children:
                child_key = id(child.expression)
                if projection is None or not here_whole:
                    if here_whole:
                        whole.add(child_key)
                    anchors.setdefault(child_key, {}).update(here)
                else:
                    anchors.setdefault(child_key, {})[projection] = None
                    anchors[child_key].update(here)
        out: list[IndirectDependency] = []
        done: set[int] = set()
        for scope in order:
            key = id(scope.expression)
            info = self._scopes[key]
            if key in done or not info.deps:
                continue
            done.add(key)
            targets: list[ColumnNode | None] = [None] if key in whole else list(anchors.get(key, {}))
            for operator, subtype, text, sources in info.deps:
                for target in targets:
                    out.append(IndirectDependency(operator, subtype, text, sources, target))
        return out

    @staticmethod
    def _projection_of(sub: Scope, scope: Scope, info: ScopeInfo) -> ColumnNode | None:
        """The output node of ``scope`` whose projection holds subquery ``sub``, or None when
        the subquery sits in a clause (WHERE, HAVING, ON, …)."""
        node: exp.Expr | None = sub.expression
        while node is not None and node.parent is not scope.expression:
            node = node.parent
        if node is None or node.arg_key != "expressions" or not isinstance(scope.expression, exp.Select):
            return None
        index = node.index
        if index is None or index >= len(info.outputs):
            return None
        return info.outputs[index]


__all__ = ["sql_lineage", "parse_statement", "StatementLineage", "DEFAULT_DIALECT", "PRODUCER"]
