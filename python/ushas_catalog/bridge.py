"""``python -m ushas_catalog.bridge``: the process the Spark shim launches in config-only mode
(``Bridge.java``); the bridge itself is :mod:`ushas_catalog.spark.bridge`."""
import sys

from .spark.bridge import main

if __name__ == "__main__":
    sys.exit(main())
