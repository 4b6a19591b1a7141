"""The metastore's operations, split by object (catalogs and databases, tables, table data, views,
partitions, history and as-of, drops / undrop / purge, project) over one resolver and one commit hook.
:class:`ushas_catalog.metastore.Metastore` is the facade that composes them."""
