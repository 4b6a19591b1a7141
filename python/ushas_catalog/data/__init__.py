"""The data path: which files a table owns, garbage and purge of data, write fences, location rules,
partition pruning and MSCK-style repair."""
