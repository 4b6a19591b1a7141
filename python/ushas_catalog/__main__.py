"""``python -m ushas_catalog`` is the ``ushas`` CLI (``python -m ushas_catalog jar`` prints the shim jar)."""
from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
