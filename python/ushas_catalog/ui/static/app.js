// Ushas Catalog UI: hash routes over the /api endpoints; the lineage graph is hand-drawn SVG.
"use strict";

const main = document.getElementById("main");
const crumbs = document.getElementById("crumbs");
const tooltip = document.getElementById("tooltip");

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined) e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

async function api(path) {
  const r = await fetch(path);
  const body = await r.json();
  if (!r.ok) throw new Error(body.error ? `${body.error.type}: ${body.error.message}` : r.statusText);
  return body;
}

const enc = encodeURIComponent;

function link(hash, text) { return el("a", { href: "#" + hash }, text); }

function setCrumbs(...parts) {
  crumbs.replaceChildren(link("/", "catalogs"));
  for (const [hash, text] of parts) crumbs.append(" / ", hash ? link(hash, text) : text);
}

function table(columns, rows) {
  return el("table", {},
    el("tr", {}, columns.map((c) => el("th", {}, c))),
    rows.map((r) => el("tr", {}, r.map((cell) => el("td", {}, cell)))));
}

function showError(e) { main.replaceChildren(el("p", { class: "error" }, String(e.message || e))); }

// ---- browse ---------------------------------------------------------------------------------
async function showCatalogs() {
  setCrumbs();
  const cats = await api("/api/catalogs");
  main.replaceChildren(el("h2", {}, "Catalogs"),
    cats.length ? table(["catalog", "comment", "owner", "created"],
      cats.map((c) => [link(`/c/${enc(c.name)}`, c.name), c.comment || "", c.owner || "", c.created_at]))
      : el("p", {}, "No catalogs yet."));
}

async function showCatalog(c) {
  setCrumbs([null, c]);
  const dbs = await api(`/api/catalogs/${enc(c)}/databases`);
  main.replaceChildren(el("h2", {}, `Catalog ${c}`),
    table(["database", "comment", "location", "owner"],
      dbs.map((d) => [link(`/d/${enc(c)}/${enc(d.name)}`, d.name), d.comment || "", d.location || "", d.owner || ""])));
}

async function showDatabase(c, d) {
  setCrumbs([`/c/${enc(c)}`, c], [null, d]);
  const rels = await api(`/api/databases/${enc(c)}/${enc(d)}/relations`);
  main.replaceChildren(el("h2", {}, `Database ${c}.${d}`),
    rels.length ? table(["name", "kind", "created"],
      rels.map((r) => [link(`/t/${enc(c)}/${enc(d)}/${enc(r.name)}`, r.name), r.kind, r.created_at]))
      : el("p", {}, "No tables or views."));
}

function schemaRows(schema) {
  return schema.fields.map((f) => [f.name, typeof f.type === "string" ? f.type : JSON.stringify(f.type),
    f.nullable ? "yes" : "no", (f.metadata && f.metadata.comment) || ""]);
}

function metadataBlock(md) {
  if (!md) return el("p", { class: "muted" }, "no metadata");
  const tags = [], props = [];
  const walk = (scoped, where) => {
    if (!scoped) return;
    for (const t of scoped.tags || []) tags.push(el("span", { class: "tag" }, t + where));
    for (const [k, v] of Object.entries(scoped.properties || {})) props.push([k + where, v]);
  };
  for (const scope of ["user", "system", "USER", "SYSTEM"]) walk(md[scope], "");
  if (md.columns) for (const [col, m] of Object.entries(md.columns)) {
    for (const scope of ["user", "system", "USER", "SYSTEM"]) walk(m[scope], ` (${col})`);
  }
  return el("div", {}, el("div", { id: "tags" }, tags.length ? tags : el("span", { class: "muted" }, "no tags")),
    props.length ? table(["metadata", "value"], props) : null);
}

async function showRelation(c, d, n) {
  setCrumbs([`/c/${enc(c)}`, c], [`/d/${enc(c)}/${enc(d)}`, d], [null, n]);
  const base = `/api/relations/${enc(c)}/${enc(d)}/${enc(n)}`;
  const t = await api(base);
  const full = t.full_name;
  const parts = [el("h2", {}, `${t.kind === "VIEW" ? "View" : "Table"} ${full}`)];
  if (t.lineage) parts.push(el("p", {}, link(`/lineage/${enc(full)}`, "lineage graph"), " · ",
    link(`/runs/${enc(full)}`, "runs")));
  const facts = t.kind === "VIEW"
    ? [["owner", t.owner || ""], ["version", t.version], ["created", t.created_at]]
    : [["format", t.format], ["location", t.location || ""], ["external", t.external ? "yes" : "no"],
       ["partitioned by", t.partition_columns.join(", ") || "—"], ["owner", t.owner || ""],
       ["comment", t.comment || ""], ["version", t.version], ["updated", t.updated_at]];
  parts.push(table(["", ""], facts));
  parts.push(el("h3", {}, "Schema"), table(["column", "type", "nullable", "comment"], schemaRows(t.schema)));
  if (t.kind === "VIEW") parts.push(el("h3", {}, "SQL"), el("pre", { class: "sql" }, t.sql));
  parts.push(el("h3", {}, "Properties"),
    Object.keys(t.properties).length ? table(["key", "value"], Object.entries(t.properties)) : el("p", { class: "muted" }, "none"));
  parts.push(el("h3", {}, "Tags and metadata"), metadataBlock(t.metadata));
  const partBox = el("div", { id: "partitions" });
  if (t.kind !== "VIEW" && t.partition_columns.length) parts.push(el("h3", {}, "Partitions"), partBox);
  const histBox = el("div", { id: "history" });
  parts.push(el("h3", {}, "History"), histBox);
  main.replaceChildren(...parts);
  if (t.kind !== "VIEW" && t.partition_columns.length) loadPartitions(base, partBox, 0);
  const hist = await api(`${base}/history`);
  histBox.replaceChildren(table(["version", "operation", "user", "when", "detail"],
    hist.map((h) => [h.version, h.operation, h.user, h.committed_at, JSON.stringify(h.detail)])));
}

async function loadPartitions(base, box, offset) {
  const limit = 20;
  const page = await api(`${base}/partitions?offset=${offset}&limit=${limit}`);
  const nav = el("div", { class: "controls" },
    el("button", { disabled: offset === 0 ? "" : null, onclick: () => loadPartitions(base, box, Math.max(0, offset - limit)) }, "◀ previous"),
    el("span", { class: "muted" }, `partitions ${offset + 1}–${offset + page.partitions.length}`),
    el("button", { id: "next-partitions", disabled: page.has_more ? null : "", onclick: () => loadPartitions(base, box, offset + limit) }, "next ▶"));
  box.replaceChildren(nav, table(["partition", "location", "files", "bytes", "rows"],
    page.partitions.map((p) => [Object.entries(p.spec).map(([k, v]) => `${k}=${v}`).join("/"),
      p.location || "", p.files ?? "", p.bytes ?? "", p.rows ?? ""])));
}

// ---- search -----------------------------------------------------------------------------------
async function showSearch(q) {
  setCrumbs([null, `search “${q}”`]);
  const res = await api(`/api/search?q=${enc(q)}`);
  const rows = res.hits.map((h) => {
    const rel = h.relation || h.name;
    const p = rel.split(".");
    const target = p.length === 3 ? link(`/t/${p.map(enc).join("/")}`, h.name) : h.name;
    return [target, h.type, h.match, h.matches.map((m) => `${m.field}: ${m.matched}`).join("; ")];
  });
  main.replaceChildren(el("h2", {}, `Search: ${q}`),
    el("p", { class: "muted" }, `${res.total} hits (${res.source}: tags, properties, column names)`),
    rows.length ? table(["name", "type", "match", "matched"], rows) : el("p", {}, "No hits."));
}

// ---- runs -------------------------------------------------------------------------------------
async function showRuns(name) {
  setCrumbs([`/lineage/${enc(name)}`, name], [null, "runs"]);
  const res = await api(`/api/runs?dataset=${enc(name)}`);
  main.replaceChildren(el("h2", {}, `Runs of ${name}`),
    table(["access", "ended", "status", "job", "kind", "user", "SQL"],
      res.runs.map((r) => [r.access, new Date(r.end_ms).toISOString(), r.status,
        r.job || `${r.application_name || r.application_id}.execution_${r.execution_id}`, r.kind || "",
        r.user, r.sql || ""])));
}

// ---- lineage ----------------------------------------------------------------------------------
// Every captured dataset: this catalog's tables (linked to their page), other catalogs' and Hive
// tables, and paths (parquet / csv / ... files read or written by path), filterable by kind.
async function showLineageIndex(params) {
  setCrumbs([null, "lineage"]);
  const kind = params.get("kind") || "";
  const ds = await api("/api/datasets" + (kind ? `?kind=${enc(kind)}` : ""));
  const select = el("select", { id: "dataset-kind", onchange: (ev) => {
    location.hash = ev.target.value ? `/lineage?kind=${enc(ev.target.value)}` : "/lineage"; } },
    [["", "all kinds"], ["table", "tables of this catalog"], ["external table", "other catalogs' / Hive tables"],
     ["path", "paths"]].map(([v, text]) => el("option", { value: v, selected: v === kind ? "" : null }, text)));
  const when = (d) => d.last_access_ms === null ? "" : `${d.last_access} ${new Date(d.last_access_ms).toISOString()}`;
  const tablePage = (d) => {
    const p = d.name.split(".");
    return d.kind === "table" && !d.dropped && p.length === 3 ? link(`/t/${p.map(enc).join("/")}`, "table") : "";
  };
  main.replaceChildren(el("h2", {}, "Datasets with lineage"),
    el("div", { class: "controls" }, el("label", {}, "show ", select),
      el("span", { class: "muted" }, `${ds.length} dataset${ds.length === 1 ? "" : "s"}`)),
    ds.length ? table(["dataset", "kind", "last access", "", "", ""], ds.map((d) => [
      link(`/lineage/${enc(d.name)}`, d.name),
      el("span", { class: "kind" }, d.kind + (d.dataset.format ? ` (${d.dataset.format})` : "")),
      when(d), link(`/runs/${enc(d.name)}`, "runs"), tablePage(d), d.dropped ? "dropped" : ""]))
      : el("p", {}, kind ? "No captured dataset of this kind." : "No lineage captured yet: run Spark with the lineage listener."));
}

function showLineage(node, params) {
  setCrumbs([`/lineage`, "lineage"], [null, node]);
  const state = { direction: params.get("direction") || "both", depth: params.get("depth") || "2",
    since: params.get("since") || "", until: params.get("until") || "" };
  const dir = el("select", { id: "direction" }, ["both", "upstream", "downstream"].map((d) =>
    el("option", { value: d, selected: d === state.direction ? "" : null }, d)));
  const depth = el("input", { id: "depth", type: "number", min: 1, max: 20, value: state.depth });
  const since = el("input", { id: "since", type: "datetime-local", value: state.since });
  const until = el("input", { id: "until", type: "datetime-local", value: state.until });
  const go = () => {
    const p = new URLSearchParams({ direction: dir.value, depth: depth.value, since: since.value, until: until.value });
    location.hash = `/lineage/${enc(node)}?${p}`;
  };
  const graphBox = el("div", { id: "graph" }, "loading…");
  const info = el("p", { class: "muted", id: "graph-info" });
  main.replaceChildren(el("h2", {}, `Lineage of ${node}`),
    el("div", { class: "controls" },
      el("label", {}, "direction ", dir), el("label", {}, "depth ", depth),
      el("label", {}, "since ", since), el("label", {}, "until ", until),
      el("button", { id: "apply", onclick: go }, "apply"), link(`/runs/${enc(node)}`, "runs of this dataset")),
    el("div", { class: "legend" }, el("span", { class: "legend-direct" }, "— direct (identity / transformation / aggregation)"),
      el("span", { class: "legend-indirect" }, "- - indirect (filter / join / group by / sort / window / conditional)"),
      el("span", {}, "click a column to expand it; hover an edge for its expression")),
    info, graphBox);
  const graph = { nodes: new Map(), edges: new Map(), start: null };
  const query = (n, d) => `/api/lineage?node=${enc(n)}&direction=${state.direction}&depth=${d}` +
    `&since=${enc(state.since)}&until=${enc(state.until)}`;
  const merge = (res, anchorLevel) => {
    for (const n of res.nodes) {
      const level = anchorLevel + n.level;
      if (!graph.nodes.has(n.id)) graph.nodes.set(n.id, { ...n, level });
    }
    for (const e of res.edges) graph.edges.set(`${e.target}|${e.source}|${e.subtype}`, e);
  };
  const expand = async (id) => {
    const n = graph.nodes.get(id);
    if (!n || n.expanded) return;
    n.expanded = true;
    try { merge(await api(query(id, 1)), n.level); draw(); } catch (e) { info.textContent = String(e.message || e); }
  };
  const draw = () => {
    info.textContent = `${graph.nodes.size} columns, ${graph.edges.size} edges`;
    graphBox.replaceChildren(renderGraph(graph, expand));
  };
  api(query(node, state.depth)).then((res) => {
    graph.start = res.start;
    merge(res, 0);
    for (const n of graph.nodes.values()) if (n.id === res.start) n.expanded = true;
    draw();
    if (res.truncated) info.textContent += " — more beyond this depth: click a column at the edge to expand";
  }).catch((e) => graphBox.replaceChildren(el("p", { class: "error" }, String(e.message || e))));
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// Layered layout: one column of boxes per level (upstream left, downstream right), boxes of a
// level grouped by dataset; edges are cubic curves from source (left) to target (right).
function renderGraph(graph, expand) {
  const W = 230, H = 38, GAPX = 90, GAPY = 12;
  const levels = new Map();
  for (const n of graph.nodes.values()) {
    if (!levels.has(n.level)) levels.set(n.level, []);
    levels.get(n.level).push(n);
  }
  const order = [...levels.keys()].sort((a, b) => a - b);
  const pos = new Map();
  let height = 0;
  order.forEach((level, i) => {
    const list = levels.get(level).sort((a, b) => (a.dataset + "\0" + (a.column || "")).localeCompare(b.dataset + "\0" + (b.column || "")));
    list.forEach((n, j) => pos.set(n.id, { x: 20 + i * (W + GAPX), y: 20 + j * (H + GAPY) }));
    height = Math.max(height, 40 + list.length * (H + GAPY));
  });
  const width = 40 + order.length * (W + GAPX);
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}` });
  for (const e of graph.edges.values()) {
    const s = pos.get(e.source), t = pos.get(e.target);
    if (!s || !t) continue;
    const x1 = s.x + W, y1 = s.y + H / 2, x2 = t.x, y2 = t.y + H / 2;
    const back = x2 <= x1;
    const c = back ? 80 : (x2 - x1) / 2;
    const path = svg("path", { class: `gedge ${e.kind}`, "data-edge": `${e.target} <- ${e.source}`,
      d: `M${x1},${y1} C${x1 + c},${y1} ${x2 - c},${y2} ${x2},${y2}` });
    const text = `${e.subtype} (${e.kind})\n${e.target} ← ${e.source}\n${e.expression || ""}\nruns: ${e.runs.length}`;
    path.addEventListener("mousemove", (ev) => {
      tooltip.hidden = false; tooltip.textContent = text;
      tooltip.style.left = ev.clientX + 12 + "px"; tooltip.style.top = ev.clientY + 12 + "px";
    });
    path.addEventListener("mouseleave", () => { tooltip.hidden = true; });
    root.append(path);
  }
  for (const n of graph.nodes.values()) {
    const p = pos.get(n.id);
    const cls = "gnode" + (n.id === graph.start ? " start" : "") + (n.column === null ? " dataset-only" : "");
    const g = svg("g", { class: cls, transform: `translate(${p.x},${p.y})`, "data-node": n.id,
      onclick: () => expand(n.id) },
      svg("rect", { width: W, height: H }),
      svg("text", { x: 8, y: 15 }, n.column === null ? "(whole dataset)" : clip(n.column, 32)),
      svg("text", { x: 8, y: 30, class: "ds" }, clip(n.dataset, 40)),
      svg("title", {}, n.expanded ? n.id : `${n.id} — click to expand`));
    root.append(g);
  }
  return root;
}

function clip(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }

// ---- routing ----------------------------------------------------------------------------------
async function route() {
  tooltip.hidden = true;
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, qs] = hash.split("?");
  const params = new URLSearchParams(qs || "");
  const p = path.split("/").filter(Boolean).map(decodeURIComponent);
  main.textContent = "loading…";
  try {
    if (p.length === 0) await showCatalogs();
    else if (p[0] === "c") await showCatalog(p[1]);
    else if (p[0] === "d") await showDatabase(p[1], p[2]);
    else if (p[0] === "t") await showRelation(p[1], p[2], p[3]);
    else if (p[0] === "search") await showSearch(params.get("q") || "");
    else if (p[0] === "runs") await showRuns(p[1]);
    else if (p[0] === "lineage" && p.length > 1) showLineage(p[1], params);
    else if (p[0] === "lineage") await showLineageIndex(params);
    else main.replaceChildren(el("p", { class: "error" }, `no page ${hash}`));
  } catch (e) { showError(e); }
}

document.getElementById("search-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const q = document.getElementById("search").value.trim();
  if (q) location.hash = `/search?q=${enc(q)}`;
});
window.addEventListener("hashchange", route);
api("/api/info").then((i) => { document.getElementById("store").textContent = `${i.store} store · project ${i.project}`; }).catch(() => {});
route();
