// Ushas Catalog UI: the lineage pages: every captured dataset, the graph around a dataset or a
// column (as of a chosen time), the graph of one run's column edges.
"use strict";

const LineagePage = (() => {
  const { el, enc, link, when, table, muted, setPage } = U;
  const tooltip = () => document.getElementById("tooltip");

  function tip(text, ev) {
    const t = tooltip();
    if (!text) { t.hidden = true; return; }
    t.hidden = false;
    t.textContent = text;
    t.style.left = Math.min(ev.clientX + 14, window.innerWidth - 420) + "px";
    t.style.top = ev.clientY + 14 + "px";
  }

  async function index(params) {
    Pages.crumbs([null, "Lineage"]);
    const kind = params.get("kind") || "";
    const page = await Data.datasets(kind);
    const ds = Array.isArray(page) ? page : page.items;
    const select = el("select", { id: "dataset-kind", onchange: (ev) => {
      location.hash = ev.target.value ? `/lineage?kind=${enc(ev.target.value)}` : "/lineage"; } },
    [["", "all kinds"], ["table", "tables of this catalog"], ["view", "views of this catalog"], ["external table", "other catalogs' / Hive tables"], ["path", "paths"]]
      .map(([v, text]) => el("option", { value: v, selected: v === kind }, text)));
    setPage("Lineage", Pages.heading("Lineage", "Datasets with lineage"),
      el("div", { class: "controls" }, el("label", {}, "show ", select),
        el("span", { class: "muted" }, `${page.total ?? ds.length} dataset${(page.total ?? ds.length) === 1 ? "" : "s"}`)),
      ds.length ? table(["Dataset", "Kind", "Last access", ""], ds.map((d) => [
        link(`/lineage/${enc(d.name)}`, d.name, { class: "strong" }),
        el("span", { class: "kind" }, d.kind + (d.dataset && d.dataset.format ? ` (${d.dataset.format})` : "")),
        el("span", {}, d.last_access ? d.last_access + " " : "", when(d.last_access_ms)),
        el("span", { class: "row-links" }, link(`/runs?dataset=${enc(d.name)}`, "runs"),
          d.kind === "table" && !d.dropped && U.splitName(d.name).length === 3 ? link(U.relationHash(U.splitName(d.name)), "table page") : null,
          d.dropped ? el("span", { class: "chip" }, "dropped") : null)]),
      { class: "grid", id: "datasets" })
        : Pages.empty(kind ? "No captured dataset of this kind." : "No lineage captured yet: run Spark with the lineage listener."));
  }

  // datetime-local value (the browser's zone) <-> the API's ISO time
  const toIso = (local) => (local ? new Date(local).toISOString() : "");

  function graphPage(node, params) {
    Pages.crumbs([`/lineage`, "Lineage"], [null, node]);
    const state = { direction: params.get("direction") || "both", depth: params.get("depth") || "3",
      asof: params.get("asof") || "", since: params.get("since") || "" };
    const dir = el("select", { id: "direction", "aria-label": "direction" }, ["both", "upstream", "downstream"].map((d) =>
      el("option", { value: d, selected: d === state.direction }, d)));
    const depth = el("input", { id: "depth", type: "number", min: 1, max: 20, value: state.depth, "aria-label": "depth" });
    const asof = el("input", { id: "asof", type: "datetime-local", value: state.asof, step: 1, "aria-label": "as of" });
    const since = el("input", { id: "since", type: "datetime-local", value: state.since, step: 1, "aria-label": "since" });
    const go = () => {
      const p = new URLSearchParams({ direction: dir.value, depth: depth.value });
      if (asof.value) p.set("asof", asof.value);
      if (since.value) p.set("since", since.value);
      location.hash = `/lineage/${enc(node)}?${p}`;
    };
    const graphBox = el("div", { id: "graph", class: "graph" }, "loading…");
    const side = el("aside", { id: "details", class: "details" }, el("p", { class: "muted" }, "Click a table to show its columns, a column to trace it, an edge for its runs."));
    const info = el("span", { class: "muted", id: "graph-info" });
    const model = new Lineage.Model();
    const view = { current: null };
    const expandAll = (on) => { for (const d of model.datasets.values()) d.expanded = on; view.current.draw(true); };
    setPage(`Lineage of ${node}`, Pages.heading("Lineage", node, el("div", { class: "actions" },
      U.splitName(node).length >= 2 ? link(`/impact/${enc(node)}${state.asof ? "?asof=" + enc(state.asof) : ""}`, "Impact", { class: "button", id: "open-impact" }) : null,
      link(`/runs?dataset=${enc(node)}`, "Runs", { class: "button" }))),
      el("form", { class: "controls", onsubmit: (ev) => { ev.preventDefault(); go(); } },
        el("label", {}, "direction ", dir), el("label", {}, "depth ", depth),
        el("label", { title: "the lineage known at that time: runs after it are left out" }, "as of ", asof),
        el("label", { title: "only runs after this time" }, "since ", since),
        el("button", { type: "submit", id: "apply" }, "Apply"),
        state.asof || state.since ? el("button", { type: "button", onclick: () => { asof.value = ""; since.value = ""; go(); } }, "now") : null,
        el("span", { class: "spacer" }),
        el("button", { type: "button", id: "expand-all", onclick: () => expandAll(true) }, "show all columns"),
        el("button", { type: "button", id: "collapse-all", onclick: () => expandAll(false) }, "tables only")),
      el("div", { class: "legend", id: "legend" },
        el("span", { class: "legend-direct" }, el("i", {}), "direct: the value flows (identity, transformation, aggregation)"),
        el("span", { class: "legend-indirect" }, el("i", {}), "indirect: decides which rows (filter, join, group by, sort, window)"),
        el("span", { class: "legend-whole" }, el("i", {}), "(whole dataset): an indirect edge on every column"),
        el("span", { class: "legend-count" }, el("b", { class: "n-direct" }, "3"), " · ", el("b", { class: "n-indirect" }, "1"),
          " on a table edge: its direct · indirect column edges"),
        info),
      el("div", { class: "graph-layout" }, graphBox, side));
    const opts = { direction: state.direction, depth: state.depth, until: toIso(state.asof), since: toIso(state.since) };

    const select = (sel) => details(side, model, sel, state);
    const expandColumn = async (ds, col) => {
      try {
        const known = new Set(model.datasets.keys());
        model.merge(await Data.graph(`${ds}.${col}`, { ...opts, direction: "both", depth: 1 }));
        model.datasets.get(ds).expanded = true;
        for (const d of model.datasets.values()) if (!known.has(d.name)) d.expanded = true; // what it brought in
        view.current.draw(true);
      } catch (e) { info.textContent = String(e.message || e); }
    };
    Promise.all([Data.graph(node, opts), Data.tableGraph(node, opts).catch(() => null)]).then(([res, tables]) => {
      model.merge(res);
      const startNode = res.nodes.find((n) => n.id === res.start);
      model.start = res.start;
      model.startDataset = startNode ? startNode.dataset : res.start;
      if (tables) for (const t of tables.nodes) {
        const d = model.datasets.get(t.name);
        if (d) d.info = t;
      }
      const start = model.datasets.get(model.startDataset);
      if (start) start.expanded = true;
      if (startNode && startNode.column !== null) model.selected = { ds: startNode.dataset, col: startNode.column };
      // a small graph shows every column at once
      const cols = [...model.datasets.values()].reduce((n, d) => n + d.columns.size, 0);
      if (model.datasets.size <= 5 && cols <= 40) for (const d of model.datasets.values()) d.expanded = true;
      view.current = new Lineage.View(graphBox, model, { tooltip: tip, onSelect: select, onExpandColumn: expandColumn });
      view.current.draw(true);
      info.textContent = `${model.datasets.size} datasets, ${model.edges.size} column edges` +
        (model.truncated ? " — more beyond this depth (double-click a column to load more)" : "") +
        (state.asof ? ` — as of ${U.exact(new Date(state.asof).getTime())}` : "");
      if (model.selected) select({ column: model.selected });
    }).catch((e) => graphBox.replaceChildren(U.errorBox(e)));
  }

  function edgeLine(e, dir) {
    const other = dir === "in" ? e.source : e.target;
    return el("li", {}, el("span", { class: `etype ${e.kind}` }, e.subtype.toLowerCase()), " ",
      dir === "in" ? "← " : "→ ", Lineage.label(other), e.expression ? el("div", {}, el("code", {}, e.expression)) : null);
  }

  function details(side, model, sel, state) {
    if (!sel) { U.fill(side, el("p", { class: "muted" }, "Nothing selected.")); return; }
    const asof = state.asof ? `?asof=${enc(state.asof)}` : "";
    if (sel.dataset) {
      const d = model.datasets.get(sel.dataset);
      const parts = U.splitName(sel.dataset);
      const info = d.info || {};
      const isTable = (info.kind ? info.kind === "table" : parts.length === 3) && !info.dropped;
      U.fill(side, el("h3", {}, sel.dataset),
        el("p", {}, el("span", { class: "chip" }, info.kind || "dataset"), info.dropped ? el("span", { class: "chip" }, "dropped") : null),
        el("ul", { class: "links" },
          isTable && parts.length === 3 ? el("li", {}, link(U.relationHash(parts), "table page")) : null,
          el("li", {}, link(`/lineage/${enc(sel.dataset)}`, "center the graph here")),
          el("li", {}, link(`/runs?dataset=${enc(sel.dataset)}`, "runs that read or wrote it"))),
        el("p", { class: "muted" }, `${d.columns.size} columns with lineage`));
      return;
    }
    if (sel.column) {
      const c = sel.column;
      const name = Lineage.label(c);
      const ins = [...model.edges.values()].filter((e) => e.target.ds === c.ds && e.target.col === c.col);
      const outs = [...model.edges.values()].filter((e) => e.source.ds === c.ds && e.source.col === c.col);
      U.fill(side, el("h3", {}, name),
        el("ul", { class: "links" },
          c.col !== null ? el("li", {}, link(`/impact/${enc(name)}${asof}`, "impact: everything downstream", { id: "side-impact" })) : null,
          c.col !== null ? el("li", {}, link(`/lineage/${enc(name)}`, "center the graph here")) : null),
        el("h4", {}, `From (${ins.length})`), ins.length ? el("ul", { class: "edges" }, ins.map((e) => edgeLine(e, "in"))) : muted("a source here"),
        el("h4", {}, `To (${outs.length})`), outs.length ? el("ul", { class: "edges" }, outs.map((e) => edgeLine(e, "out"))) : muted("nothing downstream here"));
      return;
    }
    if (sel.edge) {
      const e = sel.edge;
      U.fill(side, el("h3", {}, `${e.subtype.toLowerCase()} (${e.kind.toLowerCase()})`),
        el("p", {}, Lineage.label(e.target), el("br"), "← ", Lineage.label(e.source)),
        e.expression ? el("pre", { class: "sql" }, e.expression) : null,
        el("h4", {}, `Runs (${e.runs.length})`),
        el("ul", { class: "links", id: "edge-runs" }, e.runs.slice(-20).reverse().map((r) => el("li", {}, link(`/run/${enc(r)}`, r.slice(0, 8) + "…")))),
        e.latest_ms ? el("p", { class: "muted" }, "latest ", when(e.latest_ms)) : null);
    }
  }

  // A table page's Lineage tab: its tables upstream and downstream (two levels), boxes closed.
  async function preview(pane, name) {
    const res = await Data.graph(name, { direction: "both", depth: 2 });
    const model = new Lineage.Model();
    model.merge(res);
    model.start = res.start;
    model.startDataset = name;
    const side = el("aside", { class: "details" }, el("p", { class: "muted" }, "Click a table to show its columns."));
    const inner = el("div", { class: "graph small", id: "graph" });
    const up = new Set(), down = new Set();
    for (const e of model.edges.values()) {
      if (e.target.ds === name && e.source.ds !== name) up.add(e.source.ds);
      if (e.source.ds === name && e.target.ds !== name) down.add(e.target.ds);
    }
    U.fill(pane, el("p", { class: "controls" },
      el("span", {}, `${up.size} table${up.size === 1 ? "" : "s"} upstream, ${down.size} downstream (two levels)`),
      link(`/lineage/${enc(name)}`, "open the full graph", { class: "button", id: "full-graph" })),
    el("div", { class: "graph-layout" }, inner, side));
    const v = new Lineage.View(inner, model, { tooltip: tip, onSelect: (sel) => details(side, model, sel, {}), onExpandColumn: () => {} });
    v.draw(true);
  }

  // One run's column edges as a graph: the run's inputs on the left, its outputs on the right.
  function runGraph(box, res) {
    const names = [...res.inputs, ...res.outputs].map((d) => d.name).sort((a, b) => b.length - a.length);
    const split = (id) => {
      for (const n of names) {
        if (id === n) return { id, dataset: n, column: null };
        if (id.startsWith(n + ".")) return { id, dataset: n, column: id.slice(n.length + 1) };
      }
      const i = id.lastIndexOf(".");
      return { id, dataset: id.slice(0, i), column: id.slice(i + 1) };
    };
    const nodes = new Map();
    for (const e of res.edges) for (const id of [e.source, e.target]) if (!nodes.has(id)) nodes.set(id, split(id));
    const model = new Lineage.Model();
    model.merge({ nodes: [...nodes.values()], edges: res.edges.map((e) => ({ ...e, runs: [res.run.run_id], latest_ms: res.run.end_ms })) });
    for (const d of model.datasets.values()) d.expanded = true;
    const side = el("aside", { class: "details" }, el("p", { class: "muted" }, "Click a column to trace it."));
    const inner = el("div", { class: "graph small" });
    U.fill(box, el("div", { class: "graph-layout" }, inner, side));
    box.classList.remove("graph", "small");
    const v = new Lineage.View(inner, model, { tooltip: tip, onSelect: (sel) => details(side, model, sel, {}), onExpandColumn: () => {} });
    v.draw(true);
  }

  return { index, graphPage, runGraph, preview, tip };
})();
