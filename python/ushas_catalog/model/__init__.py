"""Values every layer shares, with no storage: names, schemas, schema changes, partitions, data files
and the dataclasses the metastore returns."""
