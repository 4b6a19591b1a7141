"""Storing computed statistics (``CALL ushas.system.analyze_table``): table properties (row count and
column statistics under Spark's ``spark.sql.statistics.*`` keys) and partitions' row counts, in ONE
commit, ``ANALYZE TABLE`` (a new version: history shows when statistics were computed)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from google.protobuf.message import Message

from .. import records as rec
from ..errors import InvalidArgument
from ..kv import Transaction
from ..model.names import NameLike, TableName
from .base import MetastoreBase
from .commits import Mutation
from .values import check_props, copy_record

#: the partition property ANALYZE sets with the row count it counted (as Spark's Hive catalog stores it):
#: a write's own row count is not a statistic DESCRIBE shows
PARTITION_ROWS = "spark.sql.statistics.numRows"


class StatisticsOps(MetastoreBase):
    """``set_statistics``: one commit of table properties and partition row counts."""

    def set_statistics(self, name: NameLike, set_properties: Mapping[str, str], remove_properties: Sequence[str] = (),
                       partition_rows: Sequence[tuple[Mapping[str, Any], int]] = (), *,
                       size_property: str | None = None, detail: Mapping[str, Any] | None = None) -> int:
        """Sets ``set_properties``, removes ``remove_properties`` (prefixes ending in ``.`` remove every key
        under them) and sets the row count of the partitions of ``partition_rows`` (full specs); with
        ``size_property``, that property is set to the bytes recorded for those partitions. Returns the
        new version."""
        tn = TableName.parse(name)
        check_props(dict(set_properties), "table properties")

        def fn(tr: Transaction) -> int:
            t = self.resolver.table(tr, tn)
            old_props = t.store("TableProperties").load(tr, ())
            props = copy_record(old_props)
            v = t.ref.version + 1
            replaced: list[tuple[tuple[Any, ...], rec.Partition]] = []
            scheme = None
            keyed: list[tuple[tuple[Any, ...], int]] = []
            found: dict[tuple[Any, ...], rec.Partition | None] = {}
            if partition_rows:
                scheme = self.resolver.scheme(tr, t)
                if not scheme.columns:
                    raise InvalidArgument(f"{tn} is not partitioned", table=str(tn))
                store, history = t.partitions(scheme), t.partition_history(scheme)
                keyed = [(scheme.key(spec), rows) for spec, rows in partition_rows]
                found = {key: store.load(tr, key) for key, _ in keyed}  # every read before the first write
            for key in list(props.properties):
                if any(key == r or (r.endswith(".") and key.startswith(r)) for r in remove_properties):
                    del props.properties[key]
            props.properties.update(set_properties)
            known = [r.bytes for r in found.values() if r is not None and r.HasField("bytes")]
            if size_property is not None and known:  # unknown (no partition recorded its bytes): not set
                props.properties[size_property] = str(sum(known))
            previous: dict[str, Message] = {}
            if props != old_props:
                t.store("TableProperties").save(tr, (), props)
                previous["TableProperties"] = old_props
            if keyed:
                for key, rows in keyed:
                    old = found[key]
                    if old is None or (old.HasField("rows") and old.rows == rows
                                       and old.properties.get(PARTITION_ROWS) == str(rows)):
                        continue
                    new = copy_record(old)
                    new.rows = rows
                    new.properties[PARTITION_ROWS] = str(rows)  # counted by ANALYZE, not by a write
                    store.save(tr, key, new)
                    history.save(tr, (v,) + key, rec.PartitionChange(action=rec.PartitionChange.REPLACED,
                                                                     previous=old), new=True)
                    replaced.append((key, new))
            changed = tuple(previous) + (("TablePartition",) if replaced else ())
            self._commit(tr, Mutation("table", str(tn), t.path, "ANALYZE TABLE", v, copy_record(t.ref),
                                      previous=previous, changed=changed,
                                      detail={"partitions": len(replaced), **dict(detail or {})},
                                      partition_scheme=scheme))
            return v

        return self.run(fn)


__all__ = ["StatisticsOps"]
