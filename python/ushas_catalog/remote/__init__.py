"""Remote mode's client side (docs/service.md, "Remote mode"): the HTTP client, the value codec and the
remote metastore. Below the catalog layer: it imports only errors (decoded values' classes are looked up
by name, from an allow-list of packages)."""
