"""The web UI: a Flask app (:mod:`.app`) serving JSON endpoints over the metastore, search and
the lineage store, and a single page (``static/``: hand-written HTML, CSS and JS with an SVG
lineage graph; no build step). ``ushas ui`` runs it through :func:`.server.serve`."""
