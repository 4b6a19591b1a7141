// Ushas Catalog UI: the catalog browser, the table page, search, runs.
"use strict";

const Pages = (() => {
  const { el, enc, link, when, kv, table, tag, muted, setPage, relationHash, errorBox } = U;

  function crumbs(...parts) {
    const nav = document.getElementById("crumbs");
    nav.replaceChildren(link("/", "Catalogs"));
    for (const [hash, text] of parts) nav.append(el("span", { class: "sep" }, "›"), hash ? link(hash, text) : el("span", {}, text));
  }

  function heading(kind, name, extra) {
    return el("div", { class: "page-head" }, el("span", { class: "kind-badge" }, kind), el("h1", {}, name), extra || null);
  }

  function empty(text) { return el("p", { class: "empty" }, text); }

  // ---- browse ----------------------------------------------------------------------------------
  async function home() {
    crumbs();
    const [cats, runs] = await Promise.all([Data.catalogs(), Data.runs({ limit: 8 }).catch(() => null)]);
    const list = Array.isArray(cats) ? cats : cats.items || [];
    const recent = runs && runs.items && runs.items.length ? el("section", { class: "card" }, el("h2", {}, "Recent runs"),
      runsTable(runs.items, false), el("p", {}, link("/runs", "all runs →"))) : null;
    setPage("", heading("Project", "Catalogs"),
      list.length ? table(["Catalog", "Description", "Owner", "Updated"], list.map((c) => [
        link(`/c/${enc(c.name)}`, c.name, { class: "strong" }), c.comment || muted("—"), c.owner || muted("—"), when(c.updated_at || c.created_at)]),
      { class: "grid", id: "catalogs" }) : empty("No catalogs yet: create one with Spark (CREATE NAMESPACE) or `ushas demo`."),
      recent);
  }

  async function catalog(c) {
    crumbs([null, c]);
    const page = await Data.databases(c);
    const dbs = Array.isArray(page) ? page : page.items;
    setPage(c, heading("Catalog", c),
      dbs.length ? table(["Database", "Description", "Owner", "Location"], dbs.map((d) => [
        link(`/d/${enc(c)}/${enc(d.name)}`, d.name, { class: "strong" }), d.comment || muted("—"), d.owner || muted("—"),
        d.location ? el("code", {}, d.location) : muted("—")]), { class: "grid", id: "databases" })
        : empty("No databases in this catalog."));
  }

  async function database(c, d) {
    crumbs([`/c/${enc(c)}`, c], [null, d]);
    const page = await Data.relations(c, d);
    const rels = Array.isArray(page) ? page : page.items;
    setPage(`${c}.${d}`, heading("Database", `${c}.${d}`),
      el("p", { class: "muted" }, `${page.total ?? rels.length} tables and views`),
      rels.length ? table(["Name", "Kind", "Created"], rels.map((r) => [
        link(relationHash([c, d, r.name]) + (r.kind === "VIEW" ? "?view=1" : ""), r.name, { class: "strong" }),
        el("span", { class: `kind ${r.kind.toLowerCase()}` }, r.kind === "VIEW" ? "view" : "table"), when(r.created_at)]),
      { class: "grid", id: "relations" }) : empty("No tables or views."));
  }

  // ---- table page ------------------------------------------------------------------------------
  const CHANGED = { TableSchema: "schema", TableStorage: "storage", TableProperties: "properties",
    TablePartition: "partitions", ViewRecord: "definition", TableReference: "reference" };

  function humanOp(op) { const s = String(op || "").toLowerCase(); return s.charAt(0).toUpperCase() + s.slice(1); }

  // One change of an ALTER (a TableChange as JSON) in words: "add column channel string".
  function changeText(c) {
    if (!c || typeof c !== "object" || !c.type) return summarize(c);
    const words = String(c.type).replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase();
    const bits = [words];
    if (c.fieldNames) bits.push(c.fieldNames.join("."));
    for (const [k, v] of Object.entries(c)) {
      if (["type", "fieldNames", "position"].includes(k) || v === null || v === undefined) continue;
      if (k === "nullable" && v === true) continue;
      if (k === "nullable") { bits.push("NOT NULL"); continue; }
      if (k === "dataType" || k === "newDataType") { bits.push(typeText(v)); continue; }
      if (k === "comment" || k === "newComment") { bits.push(`“${v}”`); continue; }
      bits.push(typeof v === "object" ? JSON.stringify(v) : String(v));
    }
    return bits.join(" ");
  }

  // A commit's detail as short phrases ("format parquet", "partition by dt", "added 45"), not JSON.
  function phrases(detail, prefix) {
    const out = [];
    for (const [k, v] of Object.entries(detail || {})) {
      const key = (prefix ? prefix + " " : "") + k.replace(/_/g, " ");
      if (v === null || v === undefined || v === "" || (Array.isArray(v) && !v.length)) continue;
      if (k === "changes" && Array.isArray(v)) out.push(...v.map(changeText));
      else if (Array.isArray(v)) out.push(`${key}: ${v.map((x) => (typeof x === "object" ? summarize(x) : x)).join(", ")}`);
      else if (typeof v === "object") out.push(...phrases(v, key));
      else if (typeof v === "boolean") out.push(v ? key : `not ${key}`);
      else out.push(`${key} ${v}`);
    }
    return out;
  }

  function summarize(o) {
    if (o && typeof o === "object") {
      if (o.name && o.type) return `${o.name} ${typeof o.type === "string" ? o.type : "struct"}`;
      return Object.entries(o).map(([k, v]) => `${k}=${typeof v === "object" ? JSON.stringify(v) : v}`).join(" ");
    }
    return String(o);
  }

  function typeText(t) {
    if (typeof t === "string") return t;
    if (!t || typeof t !== "object") return String(t);
    if (t.type === "array") return `array<${typeText(t.elementType)}>`;
    if (t.type === "map") return `map<${typeText(t.keyType)}, ${typeText(t.valueType)}>`;
    if (t.type === "struct") return `struct<${(t.fields || []).map((f) => `${f.name}: ${typeText(f.type)}`).join(", ")}>`;
    return t.type || JSON.stringify(t);
  }

  // What changed between two versions of a table: columns, properties, storage, owner, comment.
  function diff(before, after) {
    const out = [];
    const cols = (t) => new Map(((t && t.schema && t.schema.fields) || []).map((f) => [f.name, f]));
    const b = cols(before), a = cols(after);
    for (const [n, f] of a) {
      if (!b.has(n)) out.push(["+", `column ${n} ${typeText(f.type)}`]);
      else {
        const o = b.get(n);
        if (typeText(o.type) !== typeText(f.type)) out.push(["~", `column ${n}: ${typeText(o.type)} → ${typeText(f.type)}`]);
        if (o.nullable !== f.nullable) out.push(["~", `column ${n}: ${f.nullable ? "now nullable" : "now NOT NULL"}`]);
        const oc = (o.metadata || {}).comment || "", nc = (f.metadata || {}).comment || "";
        if (oc !== nc) out.push(oc ? ["~", `column ${n} description: “${oc}” → “${nc}”`] : ["+", `column ${n} description “${nc}”`]);
      }
    }
    for (const n of b.keys()) if (!a.has(n)) out.push(["−", `column ${n}`]);
    const pb = (before && before.properties) || {}, pa = (after && after.properties) || {};
    for (const [k, v] of Object.entries(pa)) {
      if (!(k in pb)) out.push(["+", `property ${k} = ${v}`]);
      else if (pb[k] !== v) out.push(["~", `property ${k}: ${pb[k]} → ${v}`]);
    }
    for (const k of Object.keys(pb)) if (!(k in pa)) out.push(["−", `property ${k}`]);
    for (const k of ["format", "location", "owner", "comment"]) {
      const o = before ? before[k] : undefined, n = after ? after[k] : undefined;
      if (before && (o ?? "") !== (n ?? "")) out.push(["~", `${k}: ${o ?? "—"} → ${n ?? "—"}`]);
    }
    const parts = (t) => ((t && t.partition_columns) || []).join(", ");
    if (before && parts(before) !== parts(after)) out.push(["~", `partitioned by: ${parts(before) || "—"} → ${parts(after) || "—"}`]);
    return out;
  }

  function diffList(lines) {
    return el("ul", { class: "diff" }, lines.map(([sign, text]) =>
      el("li", { class: sign === "+" ? "add" : sign === "−" ? "del" : "chg" }, el("span", { class: "sign" }, sign), text)));
  }

  async function historyBlock(c, d, n, isView) {
    const hist = isView ? await Data.viewHistory(c, d, n) : await Data.tableHistory(c, d, n);
    const items = (Array.isArray(hist) ? hist : hist.items || []).slice().sort((x, y) => y.version - x.version);
    const list = el("ol", { class: "timeline", id: "history-list" });
    const cache = new Map();
    const version = async (v) => {
      if (v < 1) return null;
      if (!cache.has(v)) cache.set(v, Data.asOf(c, d, n, v).catch(() => null));
      return cache.get(v);
    };
    for (const h of items) {
      const what = (h.changed || []).map((x) => CHANGED[x] || x);
      const changes = el("div", { class: "changes" });
      const li = el("li", { "data-version": h.version },
        el("div", { class: "commit" }, el("span", { class: "version" }, `v${h.version}`), el("strong", {}, humanOp(h.operation)),
          el("span", { class: "muted" }, " by ", h.user || "?", " · "), when(h.committed_at),
          what.length ? el("span", { class: "changed" }, what.map((w) => el("span", { class: "chip" }, w))) : null),
        phrases(h.detail).length ? el("div", { class: "detail" }, phrases(h.detail).join(" · ")) : null,
        changes);
      list.append(li);
      if (!isView && h.version > 1 && (h.changed || []).some((x) => x !== "TablePartition")) {
        Promise.all([version(h.version - 1), version(h.version)]).then(([b, a]) => {
          if (!a || !b) return;
          const lines = diff(b, a);
          changes.replaceChildren(lines.length ? diffList(lines) : "");
        });
      }
    }
    return items.length ? list : empty("No history.");
  }

  // Who changed the owner, description, tags, properties: USER metadata first; the SYSTEM
  // entries (write times, counters the catalog keeps) behind a toggle.
  async function metadataHistoryBlock(target) {
    let res;
    try { res = await Data.metadataHistory(target); } catch (e) { return errorBox(e); }
    const items = (Array.isArray(res) ? res : res.items || []).slice().reverse();
    if (!items.length) return empty("No metadata changes yet.");
    const value = (key, v) => (/_at$/.test(key) && U.toMs(v) !== null ? U.exact(v) : v);
    const entry = (m) => {
      const where = m.column ? ` on column ${m.column}` : "";
      let text;
      if (m.action === "tag") text = [`added tag `, tag(m.key), where];
      else if (m.action === "untag") text = [`removed tag `, tag(m.key), where];
      else if (m.action === "unset") text = [`removed ${m.key}${where}`, m.old ? ` (was “${value(m.key, m.old)}”)` : ""];
      else text = [`set ${m.key}${where} `, m.old ? el("del", {}, value(m.key, m.old)) : null, m.old ? " → " : "", el("ins", {}, value(m.key, m.new ?? ""))];
      return el("li", { class: m.scope === "SYSTEM" ? "system" : "" }, el("div", { class: "commit" }, el("strong", {}, m.user || "?"), " ", text,
        el("span", { class: "muted" }, " · "), when(m.at), m.scope === "SYSTEM" ? el("span", { class: "chip" }, "system") : null));
    };
    const user = items.filter((m) => m.scope !== "SYSTEM"), system = items.filter((m) => m.scope === "SYSTEM");
    const list = el("ol", { class: "timeline", id: "metadata-history" }, user.map(entry));
    const box = el("div", {}, user.length ? list : empty("No owner, description or tag changes yet."));
    if (system.length) {
      const toggle = el("button", { type: "button", id: "show-system", onclick: () => {
        list.append(...system.map(entry)); toggle.remove(); if (!user.length) box.replaceChildren(list); } },
      `show ${system.length} system change${system.length === 1 ? "" : "s"} (write times, counters)`);
      box.append(el("p", {}, toggle));
    }
    return box;
  }

  async function partitionsBlock(c, d, n, box, offset) {
    const limit = 20;
    const page = await Data.partitions(c, d, n, offset, limit);
    const items = page.items || page.partitions || [];
    const total = page.total;
    U.fill(box, 
      el("div", { class: "controls" },
        el("button", { type: "button", disabled: offset === 0, onclick: () => partitionsBlock(c, d, n, box, Math.max(0, offset - limit)) }, "◀ previous"),
        el("span", { class: "muted" }, items.length ? `${offset + 1}–${offset + items.length}${total !== undefined ? ` of ${total}` : ""}` : "none"),
        el("button", { type: "button", id: "next-partitions", disabled: !page.has_more, onclick: () => partitionsBlock(c, d, n, box, offset + limit) }, "next ▶")),
      table(["Partition", "Location", "Files", "Bytes", "Rows", "Updated"], items.map((p) => [
        Object.entries(p.spec).map(([k, v]) => `${k}=${v}`).join("/"), p.location ? el("code", {}, p.location) : muted("—"),
        p.files ?? "", p.bytes ?? "", p.rows ?? "", when(p.updated_at || p.created_at)]), { class: "grid" }));
  }

  function tabs(defs, initial) {
    const bar = el("div", { class: "tabs", role: "tablist" });
    const panes = el("div", { class: "panes" });
    const loaded = new Set();
    const select = (id) => {
      for (const b of bar.children) b.setAttribute("aria-selected", b.dataset.tab === id ? "true" : "false");
      for (const p of panes.children) p.hidden = p.dataset.tab !== id;
      const def = defs.find((x) => x.id === id);
      if (def && def.load && !loaded.has(id)) {
        loaded.add(id);
        const pane = [...panes.children].find((p) => p.dataset.tab === id);
        Promise.resolve(def.load(pane)).catch((e) => U.fill(pane, errorBox(e)));
      }
    };
    for (const t of defs) {
      bar.append(el("button", { type: "button", role: "tab", id: `tab-${t.id}`, "data-tab": t.id, onclick: () => select(t.id) }, t.label));
      panes.append(el("div", { role: "tabpanel", "data-tab": t.id, id: `pane-${t.id}` }, t.content || "loading…"));
    }
    select(initial || defs[0].id);
    return el("div", { class: "tabbed" }, bar, panes);
  }

  async function relation(c, d, n, params) {
    crumbs([`/c/${enc(c)}`, c], [`/d/${enc(c)}/${enc(d)}`, d], [null, n]);
    let t, isView = params.get("view") === "1";
    try {
      t = isView ? await Data.view(c, d, n) : await Data.table(c, d, n);
    } catch (e) {
      if (e.status !== 404) throw e;
      isView = !isView;
      try {
        t = isView ? await Data.view(c, d, n) : await Data.table(c, d, n);
      } catch (e2) { // neither: say so, not "view … does not exist" for a mistyped table's URL
        if (e2.status === 404 && e2.code !== "NoSuchNamespace" && e2.code !== "NoSuchCatalog") {
          e2.message = `no table or view ${c}.${d}.${n}`;
        }
        throw e2;
      }
    }
    const target = { catalog: c, database: d, table: n };
    const full = t.full_name || `${c}.${d}.${n}`;
    const md = t.metadata || {};
    const user = md.USER || { tags: [], properties: {} };
    const reload = () => relation(c, d, n, params);
    const owner = Edit.field({ name: "owner", value: t.owner, placeholder: "no owner", save: (v) => Data.setOwner(target, v ?? "") });
    const description = Edit.field({ name: "description", value: t.comment, placeholder: "add a description", multiline: true,
      save: (v) => Data.setDescription(target, v) });
    const tagsEdit = Edit.tags({ target, tags: user.tags, name: "tags", empty: "" });
    const facts = isView
      ? [["Owner", owner], ["Created", when(t.created_at)], ["Updated", when(t.updated_at)], ["Version", String(t.version)]]
      : [["Owner", owner], ["Format", t.format || "—"], ["Location", t.location ? el("code", {}, t.location) : muted("managed")],
        ["Partitioned by", t.partition_columns.length ? t.partition_columns.join(", ") : muted("not partitioned")],
        ["Created", when(t.created_at)], ["Updated", when(t.updated_at)], ["Version", String(t.version)]];
    const actions = el("div", { class: "actions" },
      t.lineage ? link(`/lineage/${enc(full)}`, "Lineage graph", { class: "button", id: "open-lineage" }) : el("span", { class: "muted" }, "no lineage captured"),
      t.lineage ? link(`/runs?dataset=${enc(full)}`, "Runs", { class: "button" }) : null);
    const colMd = md.columns || {};
    const fields = (t.schema && t.schema.fields) || [];
    const columns = table(["Column", "Type", "Nullable", "Description", "Tags", ""], fields.map((f) => {
      const colTarget = { ...target, column: f.name };
      const cm = (colMd[f.name] && colMd[f.name].USER) || { tags: [] };
      return [el("span", { class: "colname" }, f.name, t.partition_columns && t.partition_columns.includes(f.name) ? el("span", { class: "chip" }, "partition") : null),
        el("code", {}, typeText(f.type)), f.nullable ? "yes" : "no",
        Edit.field({ name: `description of ${f.name}`, value: (f.metadata || {}).comment, placeholder: "—", multiline: false,
          save: (v) => Data.setDescription(colTarget, v) }),
        Edit.tags({ target: colTarget, tags: cm.tags, name: `tags of ${f.name}` }),
        t.lineage ? el("span", { class: "col-links" }, link(`/lineage/${enc(full + "." + f.name)}`, "lineage"), " ",
          link(`/impact/${enc(full + "." + f.name)}`, "impact")) : ""];
    }), { class: "grid", id: "columns" });
    const props = Object.entries(t.properties || {});
    const userProps = Object.entries(user.properties || {});
    const sys = Object.entries((md.SYSTEM && md.SYSTEM.properties) || {});
    const tabDefs = [
      { id: "columns", label: `Columns (${fields.length})`, content: columns },
    ];
    if (isView) tabDefs.push({ id: "sql", label: "SQL", content: el("pre", { class: "sql" }, t.sql) });
    if (!isView && t.partition_columns.length) tabDefs.push({ id: "partitions", label: "Partitions", load: (pane) => partitionsBlock(c, d, n, pane, 0) });
    if (t.lineage) tabDefs.push({ id: "lineage", label: "Lineage", load: (pane) => LineagePage.preview(pane, full) });
    tabDefs.push({ id: "properties", label: "Properties", content: el("div", {},
      el("h3", {}, "Table properties"), props.length ? kv(props) : empty("none"),
      el("h3", {}, "Business metadata"), userProps.length ? kv(userProps) : empty("none"),
      el("h3", {}, "System metadata"), sys.length ? kv(sys.map(([k, v]) => [k, /_at$/.test(k) ? when(v) : v])) : empty("none")) });
    tabDefs.push({ id: "history", label: "History", load: async (pane) => {
      U.fill(pane, el("h3", {}, "Versions"), await historyBlock(c, d, n, isView),
        el("h3", {}, "Owner, description and tag changes"), await metadataHistoryBlock(target));
    } });
    setPage(full,
      heading(isView ? "View" : "Table", full, actions),
      el("div", { class: "summary" },
        el("div", { class: "desc", id: "description" }, description),
        el("div", { class: "tagline", id: "tags" }, el("span", { class: "label" }, "Tags"), tagsEdit),
        kv(facts, { id: "facts" })),
      tabs(tabDefs, params.get("tab") || "columns"));
    void reload;
  }

  // ---- search ----------------------------------------------------------------------------------
  function terms(q) {
    const out = [];
    for (const part of q.split(/\s+/)) {
      if (!part) continue;
      const p = part.replace(/^(tag|key|value|field|name|owner):/i, "");
      for (const x of p.split("=")) if (x) out.push(x.replace(/\*/g, ""));
    }
    return out;
  }

  const FIELD_LABELS = { field: "column", tag: "tag", key: "property", value: "property value", name: "name",
    comment: "description", owner: "owner" };
  function matchLabel(m) {
    const label = FIELD_LABELS[m.field] || m.field;
    return m.column && m.field !== "field" ? `column ${m.column} ${label}` : label;
  }

  const FACETS = [["kind", "Kind", true], ["tag", "Tag", true], ["owner", "Owner", false], ["format", "Format", false]];

  async function search(params) {
    const q = params.get("q") || "";
    document.getElementById("search").value = q;
    crumbs([null, "Search"]);
    if (!q) { setPage("Search", heading("Search", "Search"), empty("Type in the search box: a name, tag:pii, owner=alice, cust*")); return; }
    const filters = {};
    for (const [key, , multi] of FACETS) filters[key] = multi ? params.getAll(key) : params.get(key) || "";
    const res = await Data.search({ q, ...filters, limit: 50, cursor: params.get("cursor") || "" });
    const words = terms(q);
    const go = (next) => {
      const p = new URLSearchParams();
      p.set("q", q);
      for (const [key, , multi] of FACETS) {
        const v = next[key];
        if (multi) (v || []).forEach((x) => p.append(key, x)); else if (v) p.set(key, v);
      }
      location.hash = `/search?${p}`;
    };
    const facetBox = el("aside", { class: "facets", id: "facets" }, FACETS.map(([key, label, multi]) => {
      const counts = Object.entries((res.facets && res.facets[key]) || {}).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
      const chosen = multi ? filters[key] : filters[key] ? [filters[key]] : [];
      for (const c of chosen) if (!counts.some(([v]) => v === c)) counts.unshift([c, 0]);
      if (!counts.length) return null;
      return el("fieldset", { "data-facet": key }, el("legend", {}, label), counts.slice(0, 15).map(([v, n]) => {
        const on = chosen.includes(v);
        const box = el("input", { type: "checkbox", checked: on, value: v, "data-facet-value": `${key}:${v}`,
          onchange: () => {
            const next = { ...filters };
            if (multi) next[key] = on ? filters[key].filter((x) => x !== v) : [...filters[key], v];
            else next[key] = on ? "" : v;
            go(next);
          } });
        return el("label", { class: "facet" }, box, el("span", { class: "fv" }, v), el("span", { class: "count" }, String(n)));
      }));
    }), res.facets_over ? el("p", { class: "muted" }, `facets counted over the first ${res.facets_over} hits`) : null);
    const hits = res.hits.map((h) => {
      const relName = h.relation || (h.type === "COLUMN" ? null : h.name);
      const parts = relName ? U.splitName(relName) : [];
      const href = parts.length === 3 && h.type !== "OBJECT" ? relationHash(parts) + (h.type === "VIEW" ? "?view=1" : "") : null;  // objects: no page yet
      const title = U.highlight(h.name, words);
      return el("li", { class: "hit", "data-name": h.name },
        el("div", { class: "hit-head" }, el("span", { class: `kind ${String(h.type).toLowerCase()}` }, String(h.type).toLowerCase()),
          href ? el("a", { href: "#" + href, class: "hit-name" }, title) : el("span", { class: "hit-name" }, title),
          h.format ? el("span", { class: "chip" }, h.format) : null,
          h.owner ? el("span", { class: "muted" }, " owner ", h.owner) : null),
        h.comment ? el("div", { class: "hit-comment" }, U.highlight(h.comment, words)) : null,
        el("div", { class: "hit-matches" }, (h.matches || []).map((m) => el("span", { class: "match" },
          el("span", { class: "field" }, matchLabel(m)), " ", U.highlight(m.matched, words)))),
        (h.tags || []).length ? el("div", {}, h.tags.map((x) => tag(U.highlight(x, words)))) : null);
    });
    const more = res.next_cursor ? el("button", { type: "button", id: "more-hits", onclick: () => {
      const p = new URLSearchParams(params); p.set("cursor", res.next_cursor); location.hash = `/search?${p}`; } }, "next page ▶") : null;
    setPage(`Search ${q}`, heading("Search", q),
      el("div", { class: "search-layout" }, facetBox,
        el("section", { class: "results" }, el("p", { class: "muted", id: "hit-count" }, `${res.total} hit${res.total === 1 ? "" : "s"}`),
          hits.length ? el("ol", { class: "hits", id: "hits" }, hits) : empty("No hits."), more)));
  }

  // ---- runs ------------------------------------------------------------------------------------
  function statusBadge(s) { return el("span", { class: `status ${String(s).toLowerCase()}` }, s === "COMPLETE" ? "✓ complete" : s === "FAIL" ? "✗ failed" : s); }

  function jobName(r) { return r.job || `${r.application_name || r.application_id} #${r.execution_id}`; }

  function runsTable(items, withAccess) {
    return table([...(withAccess ? ["Access"] : []), "Run", "Status", "Ended", "Duration", "User", "SQL"], items.map((r) => [
      ...(withAccess ? [r.access || ""] : []),
      link(`/run/${enc(r.run_id)}`, jobName(r), { class: "strong" }), statusBadge(r.status), when(r.end_ms),
      U.duration(r.duration_ms ?? r.end_ms - r.start_ms), r.user || "",
      r.sql ? el("code", { class: "sql-snippet", title: r.sql }, r.sql.length > 90 ? r.sql.slice(0, 89) + "…" : r.sql) : muted(r.operation || "")]),
    { class: "grid runs" });
  }

  async function runs(params) {
    const dataset = params.get("dataset") || "";
    crumbs(...(dataset ? [[`/lineage/${enc(dataset)}`, dataset], [null, "runs"]] : [[null, "Runs"]]));
    const page = await Data.runs({ dataset, limit: 50, cursor: params.get("cursor") || "" });
    const next = page.next_cursor ? el("button", { type: "button", id: "more-runs", onclick: () => {
      const p = new URLSearchParams(params); p.set("cursor", page.next_cursor); location.hash = `/runs?${p}`; } }, "older runs ▶") : null;
    setPage(dataset ? `Runs of ${dataset}` : "Runs", heading("Runs", dataset ? `Runs of ${dataset}` : "All runs"),
      page.items.length ? runsTable(page.items, !!dataset) : empty("No runs."), next);
  }

  function datasetLink(ds) {
    const name = ds.name;
    const bits = [link(`/lineage/${enc(name)}`, name, { class: "strong" })];
    if (ds.kind) bits.push(" ", el("span", { class: "chip" }, ds.kind));
    if (ds.partition && Object.keys(ds.partition).length) bits.push(" ", el("span", { class: "muted" }, Object.entries(ds.partition).map(([k, v]) => `${k}=${v}`).join("/")));
    if (ds.path && ds.path !== name) bits.push(el("div", {}, el("code", { class: "muted" }, ds.path)));
    return el("li", {}, bits);
  }

  async function run(id) {
    crumbs([`/runs`, "Runs"], [null, id.slice(0, 8)]);
    const res = await Data.run(id);
    const r = res.run;
    const graphBox = el("div", { id: "graph", class: "graph small" });
    setPage(`Run ${jobName(r)}`, heading("Run", jobName(r), statusBadge(r.status)),
      el("div", { class: "summary" }, kv([
        ["Status", statusBadge(r.status)], ["Started", when(r.start_ms)], ["Ended", when(r.end_ms)],
        ["Duration", el("span", { id: "duration" }, U.duration(r.duration_ms ?? r.end_ms - r.start_ms))],
        ["User", r.user || "—"], ["Application", `${r.application_name || ""} ${r.application_id ? "(" + r.application_id + ")" : ""}`],
        ["Operation", r.operation || "—"], r.producer ? ["Producer", r.producer] : null, ["Run id", el("code", {}, r.run_id)],
        r.error ? ["Error", el("pre", { class: "error-text" }, r.error)] : null], { id: "run-facts" })),
      el("h2", {}, "SQL"), r.sql ? el("pre", { class: "sql", id: "run-sql" }, r.sql) : empty("no SQL text (a DataFrame job or an OpenLineage event)"),
      el("div", { class: "io" },
        el("section", {}, el("h2", {}, `Inputs (${res.inputs.length})`), el("ul", { class: "datasets", id: "inputs" }, res.inputs.map(datasetLink))),
        el("section", {}, el("h2", {}, `Outputs (${res.outputs.length})`), el("ul", { class: "datasets", id: "outputs" }, res.outputs.map(datasetLink)))),
      el("h2", {}, `Column edges (${res.edges.length})`), graphBox,
      res.edges.length ? table(["Target", "", "Source", "Type", "Expression"], res.edges.map((e) => [
        e.target, "←", e.source, el("span", { class: `etype ${e.kind}` }, `${e.subtype.toLowerCase()} (${e.kind.toLowerCase()})`),
        e.expression ? el("code", {}, e.expression) : ""]), { class: "grid", id: "run-edges" }) : empty("No column edges."));
    if (res.edges.length) LineagePage.runGraph(graphBox, res);
  }

  // ---- impact ----------------------------------------------------------------------------------
  async function impact(node, params) {
    crumbs([`/lineage`, "Lineage"], [`/lineage/${enc(node)}`, node], [null, "impact"]);
    const until = params.get("asof") || "";
    const res = await Data.impact(node, { until });
    const items = res.items || [];
    const datasets = new Set(items.map((i) => i.dataset));
    const owners = [...new Set(items.map((i) => i.owner).filter(Boolean))].sort();
    const header = ["column", "dataset", "depth", "owner", "tags", "path"];
    const rows = items.map((i) => [i.name, i.dataset, i.depth, i.owner || "", (i.tags || []).join(";"), (i.path || []).join(" -> ")]);
    const exportBtn = el("button", { type: "button", id: "export-csv", disabled: !items.length,
      onclick: () => U.download(`impact-${node.replace(/[^A-Za-z0-9_.-]+/g, "_")}.csv`, U.toCsv(header, rows)) }, "⬇ Export CSV");
    setPage(`Impact of ${node}`, heading("Impact", node, el("div", { class: "actions" }, exportBtn,
      link(`/lineage/${enc(node)}?direction=downstream&depth=6`, "as a graph", { class: "button" }))),
      el("p", { class: "lead", id: "impact-summary" }, items.length
        ? `${items.length} downstream column${items.length === 1 ? "" : "s"} in ${datasets.size} dataset${datasets.size === 1 ? "" : "s"}` +
          (owners.length ? `; owners to tell: ${owners.join(", ")}` : "; no owners recorded")
        : "Nothing downstream of this column."),
      items.length ? table(["Column", "Depth", "Owner", "Tags", "From"], items.map((i) => [
        el("span", {}, link(`/lineage/${enc(i.name)}`, i.column === null ? `${i.dataset} (whole dataset)` : i.name, { class: "strong" })),
        String(i.depth), i.owner || muted("—"), (i.tags || []).map((x) => tag(x)),
        el("span", { class: "path" }, hopsText(i))]), { class: "grid", id: "impact" }) : null);
  }

  // every step from the start to an impacted column, each with its kind:
  // "a.x —FILTER→ t (every column) · t.y —IDENTITY→" (a dataset-wide hop goes on from the dataset's columns)
  function hopsText(i) {
    if (!i.hops) return (i.path || []).slice(0, -1).join(" → ");
    const parts = [];
    i.hops.forEach((h, k) => {
      if (k === 0) parts.push(h.source);
      else if (h.source !== i.hops[k - 1].target) parts.push("(every column) ·", h.source);
      parts.push(`—${h.subtype}→`);
      if (k < i.hops.length - 1) parts.push(h.target);
    });
    return parts.join(" ");
  }

  return { crumbs, heading, home, catalog, database, relation, search, runs, run, impact, diff, phrases, typeText, empty,
    statusBadge, jobName };
})();
