"""Row filters and column masks (docs/governance.md, "Row filters and column masks"): set and dropped
on a table, each call one commit of the table (a new version, its history entry, a change-feed event),
kept in the table's ``TableProperties`` record (``row_filter``, ``column_masks``), so a past version
(``as_of``) and ``restore`` see the policy of that version. Spark applies them on every read
(``io.ushas.spark.RowPolicies``); the expressions are checked with Spark in the procedure path
(``set_row_filter`` / ``set_column_mask``), their columns here."""
from __future__ import annotations

from typing import Any

from .. import records as rec
from ..errors import InvalidPolicy, RowPolicyRefused
from ..governance.principals import principals
from ..kv import Transaction
from ..model.names import NameLike, TableName
from ..model.objects import TableInfo
from ..model.row_policies import check_exempt, check_expression, find_column, for_reader, without_masked_statistics
from ..model.schema import struct_from_proto
from .base import MetastoreBase
from .commits import Mutation
from .infos import table_info
from .values import copy_record


class RowPolicyOps(MetastoreBase):
    """``set_row_filter``, ``drop_row_filter``, ``set_column_mask``, ``drop_column_mask``."""

    def set_row_filter(self, name: NameLike, expression: str, exempt: str | None = None) -> TableInfo:
        """Only rows for which ``expression`` (a Spark SQL boolean expression over the table's columns;
        ``current_user()`` and ``is_member('role:x')`` are the reader's) is true are read through the
        catalog, except by holders of ``exempt`` (``role:NAME``, ``group:NAME``, ``user:NAME``).
        Replaces the table's filter."""
        text, who = check_expression(expression, "the row filter"), check_exempt(exempt)

        def change(props: rec.TableProperties, columns: list[str]) -> str:
            props.row_filter.CopyFrom(rec.RowFilter(expression=text, exempt=who))
            return "SET ROW FILTER"

        return self._change_policy(name, change, {"expression": text, "exempt": who})

    def drop_row_filter(self, name: NameLike) -> TableInfo:
        """Removes the table's row filter (:class:`InvalidPolicy` if it has none)."""
        def change(props: rec.TableProperties, columns: list[str]) -> str:
            if not props.HasField("row_filter"):
                raise InvalidPolicy(f"table {TableName.parse(name)} has no row filter")
            props.ClearField("row_filter")
            return "DROP ROW FILTER"

        return self._change_policy(name, change, {})

    def set_column_mask(self, name: NameLike, column: str, expression: str, exempt: str | None = None) -> TableInfo:
        """``column`` is read as ``expression`` (Spark SQL over the table's columns, cast to the column's
        type) through the catalog, except by holders of ``exempt``. Replaces the column's mask."""
        text, who = check_expression(expression, "the column mask"), check_exempt(exempt)
        detail = {"expression": text, "exempt": who}

        def change(props: rec.TableProperties, columns: list[str]) -> str:
            col = find_column(columns, column)
            detail["column"] = col
            kept = [m for m in props.column_masks if m.column.lower() != col.lower()]
            del props.column_masks[:]
            props.column_masks.extend([*kept, rec.ColumnMask(column=col, expression=text, exempt=who)])
            return "SET COLUMN MASK"

        return self._change_policy(name, change, detail)

    def drop_column_mask(self, name: NameLike, column: str) -> TableInfo:
        """Removes the mask of ``column`` (:class:`InvalidPolicy` if it has none)."""
        detail: dict[str, str] = {}

        def change(props: rec.TableProperties, columns: list[str]) -> str:
            kept = [m for m in props.column_masks if m.column.lower() != str(column).strip().lower()]
            if len(kept) == len(props.column_masks):
                raise InvalidPolicy(f"column {column!r} of {TableName.parse(name)} has no mask")
            detail["column"] = next(m.column for m in props.column_masks if m not in kept)
            del props.column_masks[:]
            props.column_masks.extend(kept)
            return "DROP COLUMN MASK"

        return self._change_policy(name, change, detail)

    def _change_policy(self, name: NameLike, change: Any, detail: dict[str, str]) -> TableInfo:
        tn = TableName.parse(name)

        def fn(tr: Transaction) -> TableInfo:
            t = self.resolver.table(tr, tn)
            schema = t.store("TableSchema").load(tr, ())
            storage = t.store("TableStorage").load(tr, ())
            old = t.store("TableProperties").load(tr, ())
            props = copy_record(old)
            columns = [f.name for f in struct_from_proto(schema.schema).fields]
            operation = change(props, columns)
            t.store("TableProperties").save(tr, (), props)
            ref = copy_record(t.ref)
            self._commit(tr, Mutation("table", str(tn), t.path, operation, t.ref.version + 1, ref,
                                      previous={"TableProperties": old}, changed=("TableProperties",),
                                      detail=dict(detail)))
            return table_info(tn, t.id, ref, schema, storage, props)

        return self.run(fn)


def keep_policies(old: rec.TableProperties, new: rec.TableProperties) -> None:
    """Carries the row filter and column masks of ``old`` into ``new`` (changing them needs their own calls,
    and MANAGE): a replace or a restore never drops them. A masked column the new schema lacks makes reads
    fail, never read unmasked."""
    new.ClearField("row_filter")
    if old.HasField("row_filter"):
        new.row_filter.CopyFrom(old.row_filter)
    del new.column_masks[:]
    new.column_masks.extend(old.column_masks)


def refuse_row_removal(tr: Transaction, ms: Any, table: Any, name: Any, operation: str) -> None:
    """The removal rule (docs/governance.md, "Writes"): an operation that removes rows of ``table`` (a
    resolved table: its ``TableProperties``) is refused to a governed caller whose reads go through the
    table's row filter, since it would remove rows the caller cannot see; the filter's exempt principal's
    members remove as anyone. Read in the operation's transaction (one record, the caller's principals: one
    point read). Restore, repair's drop, DROP PARTITION, overwrites and TRUNCATE call it; so should every
    operation that removes rows (DELETE, UPDATE, MERGE)."""
    caller = ms.caller()
    if not caller.authorization:
        return
    props = table.store("TableProperties").load(tr, ())
    if props is None or not props.HasField("row_filter"):
        return
    exempt = props.row_filter.exempt
    if exempt and exempt in principals(tr, ms.layout, ms.project, caller.user):
        return
    raise RowPolicyRefused(f"{operation} of table {name} is refused: its row filter hides rows from user "
                           f"{caller.user}, which it would remove (append instead, or have a member of the "
                           f"filter's exempt principal do it)", table=str(name), user=caller.user)


def policy_of_reader(ms: Any, info: TableInfo) -> dict[str, Any] | None:
    """The row filter and masks the caller of ``ms`` reads ``info`` through (None: none; see
    ``model.row_policies.for_reader``); the store's administrator (the CLI without ``--user``, an ungoverned
    Python API) reads the raw table. A share's reader holds no principal of the owner project."""
    from ..governance.identity import current

    if not info.column_masks and info.row_filter is None:
        return None
    if hasattr(ms, "caller") and not ms.caller().authorization and current() is None:
        return None
    user = ms.caller().user if hasattr(ms, "caller") else str(getattr(ms, "user", ""))
    held = ms.principals_of() if hasattr(ms, "principals_of") else frozenset({f"user:{user}"})
    return for_reader(info.row_filter, info.column_masks, user, held)


def as_reader_sees(ms: Any, info: TableInfo) -> TableInfo:
    """``info`` as the caller of ``ms`` may see it (docs/governance.md, "Metadata follows the data's policy"):
    without the statistics of the columns masked for it, and, under the row filter, without any column's
    statistics or the row counts (computed over rows it cannot see). What the CLI, the REST API and Spark's
    DESCRIBE show."""
    import dataclasses

    policy = policy_of_reader(ms, info)
    if policy is None:
        return info
    return dataclasses.replace(info, properties=without_masked_statistics(dict(info.properties), policy))


def filtered_for_reader(ms: Any, info: TableInfo) -> bool:
    """Whether the caller of ``ms`` reads ``info`` through its row filter."""
    policy = policy_of_reader(ms, info)
    return policy is not None and bool(policy.get("row_filter"))


def filters_rows_of(ms: Any, name: NameLike) -> bool:
    """Whether the caller of ``ms`` reads table ``name`` through its row filter (:func:`filtered_for_reader`);
    a table it cannot load any more (dropped meanwhile) counts as filtered: nothing of it is shown."""
    from ..errors import NotFound
    from ..governance.identity import current

    if not ms.caller().authorization and current() is None:
        return False
    try:
        info = ms.get_table(name)
    except NotFound:
        return True
    return filtered_for_reader(ms, info)


def refuse_partition_metadata(ms: Any, info: TableInfo, what: str) -> None:
    """Partition values, their row counts and file paths are row data (docs/governance.md, "Metadata
    follows the data's policy"): a reader under the table's row filter is refused them (SHOW PARTITIONS,
    DESCRIBE … PARTITION, the ``partitions`` and ``files`` metadata tables, the CLI, the REST API, a
    share's reader), since the catalog cannot tell without Spark which of them the filter hides."""
    if filtered_for_reader(ms, info):
        user = ms.caller().user if hasattr(ms, "caller") else str(getattr(ms, "user", ""))
        full = f"{info.catalog}.{info.database}.{info.name}"
        raise RowPolicyRefused(f"{what} of table {full} is refused: its row filter hides rows from user "
                               f"{user}, and partitions, their counts and files describe those rows (ask a "
                               f"member of the filter's exempt principal)", table=full, user=user)


def main_policies(tr: Transaction, table_path: Any) -> rec.TableProperties | None:
    """In a branch's transaction, ``main``'s current ``TableProperties`` of the table at ``table_path`` when
    it has a row filter or a column mask: a policy on ``main`` holds in every branch, whenever the branch was
    made, and the branch cannot drop or weaken it (changing it needs MANAGE on ``main``'s table). None: not
    a branch, the table is not in ``main`` any more, or ``main`` sets no policy on it (the branch's own then
    apply)."""
    from ..records.store import RecordStore
    from .branch_view import main_transaction

    main = main_transaction(tr)
    if main is None:
        return None
    props = RecordStore.at(table_path.add("TableProperties")).load(main, ())
    if props is None or not (props.HasField("row_filter") or props.column_masks):
        return None
    return props
