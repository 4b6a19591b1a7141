"""``python -m ushas_catalog.bridge``: the process the Spark shim launches in config-only mode
(``Bridge.java``); the bridge itself is :mod:`ushas_catalog.spark.bridge`."""
import sys

from .spark.bridge import Backend, handle, main  # noqa: F401 - the names the shim and users knew here

if __name__ == "__main__":
    sys.exit(main())
