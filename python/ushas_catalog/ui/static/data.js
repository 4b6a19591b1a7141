// Ushas Catalog UI: the calls it makes to the service's REST API (/api/v1, described by
// /api/v1/openapi.json). Every name goes into the URL percent-encoded, one path segment each, so
// a table named "a/b" or "x?y#z" reaches the right object.
"use strict";

const Data = (() => {
  const { api, enc } = U;
  const V1 = "/api/v1";
  const rel = (c, d) => `${V1}/catalogs/${enc(c)}/databases/${enc(d)}`;
  const qs = (params) => {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) {
      if (v === null || v === undefined || v === "") continue;
      if (Array.isArray(v)) v.forEach((x) => p.append(k, x)); else p.append(k, String(v));
    }
    const s = p.toString();
    return s ? "?" + s : "";
  };
  // the query parameters that name an object for /metadata: catalog, database, table, column
  const objectParams = (o) => ({ catalog: o.catalog, database: o.database, table: o.table, column: o.column });

  let session = { access: "read", auth_required: false, csrf: null };

  return {
    qs,
    get session() { return session; },
    async loadSession() {
      try { session = await api(`${V1}/session`); } catch (e) { session = { access: "read", auth_required: false, csrf: null }; }
      return session;
    },
    async signIn(token) { session = await api(`${V1}/session`, { method: "POST", body: { token } }); return session; },
    async signOut() { await api(`${V1}/session`, { method: "DELETE", csrf: session.csrf }); return this.loadSession(); },
    info: () => api(`${V1}/info`),
    catalogs: () => api(`${V1}/catalogs`),
    catalog: (c) => api(`${V1}/catalogs/${enc(c)}`),
    databases: (c, offset) => api(`${V1}/catalogs/${enc(c)}/databases${qs({ offset, limit: 200 })}`),
    database: (c, d) => api(rel(c, d)),
    relations: (c, d, offset) => api(`${rel(c, d)}/relations${qs({ offset, limit: 200 })}`),
    table: (c, d, n) => api(`${rel(c, d)}/tables/${enc(n)}`),
    view: (c, d, n) => api(`${rel(c, d)}/views/${enc(n)}`),
    tableHistory: (c, d, n) => api(`${rel(c, d)}/tables/${enc(n)}/history${qs({ limit: 200 })}`),
    viewHistory: (c, d, n) => api(`${rel(c, d)}/views/${enc(n)}/history`),
    asOf: (c, d, n, version) => api(`${rel(c, d)}/tables/${enc(n)}/as-of${qs({ version })}`),
    partitions: (c, d, n, offset, limit) => api(`${rel(c, d)}/tables/${enc(n)}/partitions${qs({ offset, limit })}`),
    metadata: (o) => api(`${V1}/metadata${qs(objectParams(o))}`),
    metadataHistory: (o) => api(`${V1}/metadata/history${qs({ ...objectParams(o), limit: 100 })}`),
    setOwner: (o, owner) => api(`${V1}/metadata/owner${qs(objectParams(o))}`, { method: "PUT", body: { owner }, csrf: session.csrf }),
    setDescription: (o, description) => api(`${V1}/metadata/description${qs(objectParams(o))}`,
      { method: "PUT", body: { description }, csrf: session.csrf }),
    addTags: (o, tags) => api(`${V1}/metadata/tags${qs(objectParams(o))}`, { method: "POST", body: { tags }, csrf: session.csrf }),
    removeTag: (o, tag) => api(`${V1}/metadata/tags${qs({ ...objectParams(o), tag })}`, { method: "DELETE", csrf: session.csrf }),
    search: (params) => api(`${V1}/search${qs(params)}`),
    datasets: (kind) => api(`${V1}/lineage/datasets${qs({ kind, limit: 1000 })}`),
    graph: (node, opts) => api(`${V1}/lineage/graph${qs({ node, ...opts })}`),
    tableGraph: (node, opts) => api(`${V1}/lineage/tables${qs({ node, ...opts })}`),
    impact: (node, opts) => api(`${V1}/lineage/impact${qs({ node, ...(opts || {}) })}`),
    runs: (params) => api(`${V1}/runs${qs(params)}`),
    run: (id) => api(`${V1}/runs/${enc(id)}`),
  };
})();
