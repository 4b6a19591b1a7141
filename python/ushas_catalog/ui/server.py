"""Running the UI: one process, one request at a time (the store handles are not shared
between threads), on loopback unless told otherwise."""
from __future__ import annotations

from typing import Callable

from werkzeug.serving import make_server

from .app import create_app


def serve(uri: str, project: str, *, host: str = "127.0.0.1", port: int = 8765,
          announce: Callable[[str], None] | None = None) -> None:
    """Serve until interrupted. ``port`` 0 picks a free port; ``announce`` gets the URL."""
    app = create_app(uri, project)
    server = make_server(host, port, app, threaded=False)
    shown = f"[{host}]" if ":" in host else host
    if announce is not None:
        announce(f"http://{shown}:{server.server_port}/")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        app.config["USHAS"].close()
