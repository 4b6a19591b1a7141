"""``set_row_filter``, ``drop_row_filter``, ``set_column_mask``, ``drop_column_mask``: the row filters and
column masks of docs/governance.md (:mod:`ushas_catalog.catalog.row_policies`), as ``ushas row-filter`` /
``ushas column-mask`` do it. A new expression is first parsed and resolved by Spark against the table's
columns (the JVM's ``check_policy``), then stored: one commit of the table."""
from __future__ import annotations

from typing import Any

from ..model.row_policies import check_exempt, check_expression, find_column
from .registry import ACTION, DETAIL, OBJECT, TABLE, VERSION, Call, Outcome, Param, procedure

EXEMPT = Param("exempt", "STRING", "the principal that reads the table unfiltered / unmasked: 'role:NAME', "
                                   "'group:NAME' or 'user:NAME' (NULL: nobody)", "NULL")
COLUMN = Param("column", "STRING", "the column")
RESULT = [ACTION, OBJECT, DETAIL, VERSION]


def _checked(call: Call, name: tuple[str, str, str], kind: str, expression: Any, column: Any = None) -> Outcome | None:
    """Asks the JVM to check the expression first (None: it was checked, store it now)."""
    if call.jvm_result is not None:
        return None
    check_expression(expression, "the row filter" if kind == "filter" else "the column mask")
    check_exempt(call.args.get("exempt"))
    return Outcome.ask_jvm("check_policy", {"checked": True}, namespace=[name[1]], name=name[2], kind=kind,
                           expression=expression, column=column, user=call.ms.caller().user, principals=[])


def _answer(action: str, name: tuple[str, str, str], detail: str, info: Any) -> Outcome:
    return Outcome([[action, ".".join(name), detail, info.version]], refresh=[list(name[1:])])


@procedure("set_row_filter", "Read only the rows for which a SQL boolean expression is true (current_user() and "
                             "is_member('role:x') are the reader's), except for the exempt principal; replaces "
                             "the table's filter; one commit of the table", [
    TABLE, Param("expression", "STRING", "the filter: a SQL boolean expression over the table's columns"), EXEMPT],
    RESULT)
def set_row_filter(call: Call) -> Outcome:
    name, expression = call.table(), call.required("expression")
    asked = _checked(call, name, "filter", expression)
    if asked is not None:
        return asked
    info = call.ms.set_row_filter(".".join(name), expression, call.args.get("exempt"))
    return _answer("SET ROW FILTER", name, expression, info)


@procedure("drop_row_filter", "Remove the table's row filter; one commit of the table", [TABLE], RESULT)
def drop_row_filter(call: Call) -> Outcome:
    name = call.table()
    return _answer("DROP ROW FILTER", name, "", call.ms.drop_row_filter(".".join(name)))


@procedure("set_column_mask", "Read a column as a SQL expression (cast to the column's type; current_user() and "
                              "is_member('role:x') are the reader's), except for the exempt principal; replaces "
                              "the column's mask; one commit of the table", [
    TABLE, COLUMN, Param("expression", "STRING", "the mask: a SQL expression over the table's columns"), EXEMPT],
    RESULT)
def set_column_mask(call: Call) -> Outcome:
    name, column, expression = call.table(), call.required("column"), call.required("expression")
    column = find_column([f.name for f in call.ms.get_table(".".join(name)).schema.fields], column)
    asked = _checked(call, name, "mask", expression, column)
    if asked is not None:
        return asked
    info = call.ms.set_column_mask(".".join(name), column, expression, call.args.get("exempt"))
    return _answer("SET COLUMN MASK", name, f"{column}: {expression}", info)


@procedure("drop_column_mask", "Remove a column's mask; one commit of the table", [TABLE, COLUMN], RESULT)
def drop_column_mask(call: Call) -> Outcome:
    name, column = call.table(), call.required("column")
    return _answer("DROP COLUMN MASK", name, column, call.ms.drop_column_mask(".".join(name), column))
