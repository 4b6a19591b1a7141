"""Metadata tables and system tables: catalog data read with Spark SQL.

``ushas.db.t.<name>`` (``history``, ``schemas``, ``partitions``, ``files``, ``changes``, ``lineage``)
are the metadata tables of table ``db.t``; ``ushas.system.<name>`` (``tables``, ``columns``,
``partitions``, ``tags``, ``properties``, ``changes``, ``runs``, ``dataset_access``,
``column_lineage``, ``table_lineage``, ``usage``) the system tables of the catalog's project
(docs/sql-tables.md). The shim's ``io.ushas.spark.UshasRowsTable`` is the Spark side: it sends
Spark's pushed predicates as filter JSON and reads the rows in pages (:mod:`.ops`); here each
table is a :class:`~.columns.TableDef` whose source yields rows from a continuation token, reading
only the key ranges the filters select (:mod:`.filters`).
"""
