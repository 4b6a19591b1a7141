"""``ushas serve``'s REST API v1 (``/api/v1/...``) and OpenLineage receiver, as a Flask blueprint
the UI's app mounts (:func:`.api.register_api`). The contract is :mod:`.spec` (the OpenAPI
document served at ``/api/v1/openapi.json``); one module per resource group: :mod:`.catalog_api`,
:mod:`.search_api`, :mod:`.metadata_api`, :mod:`.changes_api`; the lineage reads and runs, the
remote capture's ingest and the OpenLineage receiver are the lineage extension's routes (``lineage.plugin``,
registered through :mod:`ushas_catalog.extensions`); access control in :mod:`.auth` over the tokens of
:mod:`.tokens`. docs/service.md is the user's guide."""
