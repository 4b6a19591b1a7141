// Ushas Catalog UI: the lineage graph. Tables are boxes laid out by dagre (vendor/dagre.min.js,
// a layered / Sugiyama layout: every edge goes left to right, rank by rank, through dummy points
// between the boxes, never through one). A table expands to its columns; column edges then run
// from column to column along their tables' edge. Direct edges are solid, indirect ones (filter,
// join, group by, ...) dashed; an indirect edge into "(whole dataset)" ends on the table's top row.
// Zoom with the wheel or the buttons, pan by dragging the background.
"use strict";

const Lineage = (() => {
  // the smallest zoom "fit" picks: the graph's smallest text is 11 px (style.css), so it stays 11 px on screen
  const MIN_FIT_ZOOM = 1;
  const { el, svg } = U;
  const W = 270, HEAD = 40, ROW = 22, PAD = 6, RANKSEP = 140;
  const WHOLE = "\u0000whole";

  // The graph state of one view: datasets (boxes), column edges, what is expanded / selected.
  class Model {
    constructor() {
      this.datasets = new Map(); // name -> {name, columns: Set, whole: bool, expanded, info}
      this.edges = new Map(); // key -> edge {source:{ds,col}, target:{ds,col}, kind, subtype, expression, runs, latest_ms}
      this.start = null;
      this.startDataset = null;
      this.truncated = false;
      this.selected = null; // {ds, col}
    }

    dataset(name) {
      if (!this.datasets.has(name)) this.datasets.set(name, { name, columns: new Set(), whole: false, expanded: false });
      return this.datasets.get(name);
    }

    // Merge an answer of the lineage API (normalized: nodes {id, dataset, column}, edges by id).
    merge(res) {
      const byId = new Map(res.nodes.map((n) => [n.id, n]));
      for (const n of res.nodes) {
        const d = this.dataset(n.dataset);
        if (n.column === null || n.column === undefined) d.whole = d.whole || false;
        else d.columns.add(n.column);
      }
      for (const e of res.edges) {
        const s = byId.get(e.source), t = byId.get(e.target);
        if (!s || !t) continue;
        const src = { ds: s.dataset, col: s.column ?? null }, tgt = { ds: t.dataset, col: t.column ?? null };
        if (src.col === null) this.dataset(src.ds).whole = true;
        if (tgt.col === null) this.dataset(tgt.ds).whole = true;
        const key = `${t.id}\u0001${s.id}\u0001${e.subtype}`;
        this.edges.set(key, { key, source: src, target: tgt, kind: e.kind, subtype: e.subtype,
          expression: e.expression || "", runs: e.runs || [], latest_ms: e.latest_ms ?? null });
      }
      this.truncated = this.truncated || !!res.truncated;
    }

    rows(d) { // the rows of an expanded box: "(whole dataset)" first when it has edges, then columns
      const cols = [...d.columns].sort((a, b) => a.localeCompare(b));
      return d.whole ? [WHOLE, ...cols] : cols;
    }

    // Edges between datasets (one per ordered pair), with the column edges they stand for.
    tableEdges() {
      const out = new Map();
      for (const e of this.edges.values()) {
        if (e.source.ds === e.target.ds) continue;
        const key = `${e.source.ds}\u0001${e.target.ds}`;
        if (!out.has(key)) out.set(key, { key, source: e.source.ds, target: e.target.ds, edges: [] });
        out.get(key).edges.push(e);
      }
      return [...out.values()];
    }

    // The column edges on the path through ``node`` (upstream and downstream), for highlighting.
    pathOf(node) {
      const id = (n) => `${n.ds}\u0001${n.col}`;
      const out = new Map(), into = new Map(); // node id -> edges leaving / entering it
      for (const e of this.edges.values()) {
        for (const [map, n] of [[out, e.source], [into, e.target]]) {
          const k = id(n);
          if (!map.has(k)) map.set(k, []);
          map.get(k).push(e);
        }
      }
      const on = new Set();
      for (const forward of [true, false]) {
        const seen = new Set([id(node)]);
        const queue = [node];
        while (queue.length) {
          const cur = queue.shift();
          for (const e of (forward ? out : into).get(id(cur)) || []) {
            on.add(e.key);
            const to = forward ? e.target : e.source;
            if (!seen.has(id(to))) { seen.add(id(to)); queue.push(to); }
          }
        }
      }
      return on;
    }
  }

  function boxHeight(model, d) { return HEAD + (d.expanded ? model.rows(d).length * ROW + PAD : 0); }

  // dagre's layout of the boxes: positions (top-left) and each table edge's points.
  function layout(model) {
    const g = new dagre.graphlib.Graph({ multigraph: false });
    g.setGraph({ rankdir: "LR", nodesep: 28, ranksep: RANKSEP, edgesep: 14, marginx: 24, marginy: 24 });
    g.setDefaultEdgeLabel(() => ({}));
    for (const d of model.datasets.values()) g.setNode(d.name, { width: W, height: boxHeight(model, d) });
    for (const te of model.tableEdges()) g.setEdge(te.source, te.target, { weight: te.edges.length, minlen: 1 });
    dagre.layout(g);
    const boxes = new Map();
    for (const name of g.nodes()) {
      const n = g.node(name);
      boxes.set(name, { x: n.x - n.width / 2, y: n.y - n.height / 2, w: n.width, h: n.height, rank: n.rank });
    }
    const points = new Map();
    for (const e of g.edges()) points.set(`${e.v}\u0001${e.w}`, g.edge(e).points || []);
    const size = g.graph();
    return { boxes, points, width: size.width || 400, height: size.height || 200 };
  }

  // Where a column's edges attach on its box: the right side for outgoing, the left for incoming.
  function port(model, lay, ref, out) {
    const b = lay.boxes.get(ref.ds);
    const d = model.datasets.get(ref.ds);
    const x = out ? b.x + b.w : b.x;
    if (!d.expanded) return { x, y: b.y + HEAD / 2 };
    const rows = model.rows(d);
    const i = rows.indexOf(ref.col === null ? WHOLE : ref.col);
    return { x, y: i < 0 ? b.y + HEAD / 2 : b.y + HEAD + i * ROW + ROW / 2 };
  }

  // A smooth path through points that advance left to right (dagre's edge points).
  function curve(pts) {
    let d = `M${pts[0].x},${pts[0].y}`;
    for (let i = 1; i < pts.length; i++) {
      const a = pts[i - 1], b = pts[i];
      const dx = Math.max(24, Math.abs(b.x - a.x) / 2);
      d += ` C${a.x + dx},${a.y} ${b.x - dx},${b.y} ${b.x},${b.y}`;
    }
    return d;
  }

  function edgePoints(model, lay, te, e) {
    const mid = (lay.points.get(`${te.source}\u0001${te.target}`) || []).slice(1, -1);
    const a = port(model, lay, e ? e.source : { ds: te.source, col: null }, true);
    const b = port(model, lay, e ? e.target : { ds: te.target, col: null }, false);
    if (!e || !model.datasets.get(te.source).expanded) a.y = lay.boxes.get(te.source).y + HEAD / 2;
    if (!e || !model.datasets.get(te.target).expanded) b.y = lay.boxes.get(te.target).y + HEAD / 2;
    // dagre's middle points keep the edge out of the boxes; a back edge (a cycle) goes around.
    if (b.x <= a.x) return [a, { x: a.x + 40, y: Math.min(a.y, b.y) - 60 }, { x: b.x - 40, y: Math.min(a.y, b.y) - 60 }, b];
    // keep dagre's dummy points (edges spanning several ranks pass between the boxes of the
    // ranks they cross); the single middle point of a one-rank edge would knot every column edge
    // of a table pair into one spot
    // A kept point is a dummy node in the column of a rank between; the edge passes that column
    // level with it, from its left side to its right (the boxes of that rank are above or below).
    const through = mid.filter((p) => p.x > a.x + RANKSEP * 0.9 && p.x < b.x - RANKSEP * 0.9)
      .flatMap((p) => [{ x: p.x - W / 2 - 6, y: p.y }, { x: p.x + W / 2 + 6, y: p.y }]);
    return [a, ...through, b];
  }

  const label = (n) => (n.col === null ? `${n.ds} (whole dataset)` : `${n.ds}.${n.col}`);

  // The view: controls are the caller's; this draws into ``box`` and reports selection to ``onSelect``.
  class View {
    constructor(box, model, hooks) {
      this.box = box;
      this.model = model;
      this.hooks = hooks; // {onSelect(sel), onExpandColumn(ds, col), tooltip}
      this.zoom = 1; this.tx = 0; this.ty = 0;
      this.svg = svg("svg", { class: "lineage", role: "img", "aria-label": "lineage graph" });
      this.world = svg("g", { class: "world" });
      this.svg.append(this.world);
      this.box.replaceChildren(this.svg, this.zoomControls());
      this.pan();
      // keyboard: Tab to a box header or a column, Enter opens / traces it
      this.svg.addEventListener("keydown", (ev) => {
        const target = ev.target.closest && ev.target.closest("g.head, g.col");
        if (target && (ev.key === "Enter" || ev.key === " ")) {
          ev.preventDefault();
          target.dispatchEvent(new MouseEvent("click", { bubbles: true }));
        }
      });
    }

    zoomControls() {
      const b = (text, title, fn, id) => el("button", { type: "button", title, id, onclick: fn }, text);
      return el("div", { class: "zoom" },
        b("+", "zoom in", () => this.zoomBy(1.25), "zoom-in"),
        b("−", "zoom out", () => this.zoomBy(0.8), "zoom-out"),
        b("fit", "fit the graph to the window", () => this.fit(), "zoom-fit"));
    }

    apply() { this.world.setAttribute("transform", `translate(${this.tx},${this.ty}) scale(${this.zoom})`); }

    zoomBy(f, cx, cy) {
      const r = this.svg.getBoundingClientRect();
      const x = cx ?? r.width / 2, y = cy ?? r.height / 2;
      const z = Math.min(3, Math.max(0.15, this.zoom * f));
      this.tx = x - ((x - this.tx) * z) / this.zoom;
      this.ty = y - ((y - this.ty) * z) / this.zoom;
      this.zoom = z;
      this.apply();
    }

    // fit the area the graph uses (not the layout's canvas) to the window, but never below the zoom at
    // which its smallest text (11 px) stays 11 px: a bigger graph opens readable at its top left and pans
    fit() {
      const r = this.svg.getBoundingClientRect();
      if (!this.lay || !r.width) return;
      let used = null;
      try { used = this.world.getBBox(); } catch (e) { used = null; }
      if (!used || !used.width) used = { x: 0, y: 0, width: this.lay.width, height: this.lay.height };
      const z = Math.min(1.2, (r.width - 20) / used.width, (r.height - 20) / used.height);
      this.zoom = Math.max(MIN_FIT_ZOOM, z);
      const w = used.width * this.zoom, h = used.height * this.zoom;
      this.tx = (w <= r.width - 20 ? (r.width - w) / 2 : 10) - used.x * this.zoom;
      this.ty = (h <= r.height - 20 ? Math.max(10, (r.height - h) / 2) : 10) - used.y * this.zoom;
      this.apply();
    }

    pan() {
      let drag = null;
      this.svg.addEventListener("pointerdown", (ev) => {
        if (ev.target.closest && ev.target.closest(".box, .gedge-g")) return;
        drag = { x: ev.clientX, y: ev.clientY, tx: this.tx, ty: this.ty };
        this.svg.setPointerCapture(ev.pointerId);
        this.svg.classList.add("dragging");
      });
      this.svg.addEventListener("pointermove", (ev) => {
        if (!drag) return;
        this.tx = drag.tx + ev.clientX - drag.x; this.ty = drag.ty + ev.clientY - drag.y; this.apply();
      });
      const end = () => { drag = null; this.svg.classList.remove("dragging"); };
      this.svg.addEventListener("pointerup", end);
      this.svg.addEventListener("pointercancel", end);
      this.svg.addEventListener("wheel", (ev) => {
        ev.preventDefault();
        const r = this.svg.getBoundingClientRect();
        this.zoomBy(ev.deltaY < 0 ? 1.1 : 1 / 1.1, ev.clientX - r.left, ev.clientY - r.top);
      }, { passive: false });
    }

    draw(refit) {
      const model = this.model;
      this.hooks.tooltip(null); // the element under the pointer may go
      const lay = this.lay = layout(model);
      this.edgeEls = [];
      const edgeLayer = svg("g", { class: "edges" });
      const boxLayer = svg("g", { class: "boxes" });
      for (const te of model.tableEdges()) {
        const s = model.datasets.get(te.source), t = model.datasets.get(te.target);
        if (s.expanded && t.expanded) {
          for (const e of te.edges) edgeLayer.append(this.edgePath(edgePoints(model, lay, te, e), [e]));
        } else {
          // one edge between the boxes (solid when a value flows, dashed when it only decides
          // rows), labelled with its column edges
          const pts = edgePoints(model, lay, te, null);
          edgeLayer.append(this.edgePath(pts, te.edges));
          const direct = te.edges.filter((e) => e.kind === "DIRECT").length, indirect = te.edges.length - direct;
          // "3 · 1": direct (green) and indirect (amber) column edges, the tooltip says which is which
          const parts = [];
          if (direct) parts.push(svg("tspan", { class: "n-direct" }, String(direct)));
          if (direct && indirect) parts.push(svg("tspan", {}, " · "));
          if (indirect) parts.push(svg("tspan", { class: "n-indirect" }, String(indirect)));
          const chars = String(direct || "").length + String(indirect || "").length + (direct && indirect ? 3 : 0);
          const w = chars * 7 + 14;
          const mid = pts.length % 2 ? pts[(pts.length - 1) / 2]
            : { x: (pts[pts.length / 2 - 1].x + pts[pts.length / 2].x) / 2, y: (pts[pts.length / 2 - 1].y + pts[pts.length / 2].y) / 2 };
          edgeLayer.append(svg("g", { class: "elabel", transform: `translate(${mid.x - w / 2},${mid.y - 24})` },
            svg("rect", { width: w, height: 18, rx: 9 }), svg("text", { x: w / 2, y: 13, "text-anchor": "middle" }, parts),
            svg("title", {}, `${direct} direct, ${indirect} indirect column edges`)));
        }
      }
      for (const d of model.datasets.values()) boxLayer.append(this.boxOf(d, lay.boxes.get(d.name)));
      this.world.replaceChildren(edgeLayer, boxLayer);
      this.svg.setAttribute("data-width", Math.round(lay.width));
      this.restyle();
      if (refit) requestAnimationFrame(() => this.fit());
    }

    edgePath(pts, es) {
      const e0 = es[0];
      const kind = es.some((e) => e.kind === "DIRECT") ? "DIRECT" : "INDIRECT";
      const cls = `gedge ${kind}`;
      const single = es.length === 1;
      const path = svg("path", { class: cls, d: curve(pts), "marker-end": `url(#arrow-${kind})`,
        "data-edge": single ? `${label(e0.target)} <- ${label(e0.source)}` : `${e0.target.ds} <- ${e0.source.ds}`,
        "data-kind": kind });
      const text = single
        ? `${e0.subtype} (${kind.toLowerCase()})\n${label(e0.target)} ← ${label(e0.source)}` +
          `${e0.expression ? "\n" + e0.expression : ""}\n${e0.runs.length} run${e0.runs.length === 1 ? "" : "s"}` +
          `${e0.latest_ms ? ", latest " + U.ago(e0.latest_ms) : ""}\nclick for the runs`
        : `${es.length} column edges ${e0.source.ds} → ${e0.target.ds}\n` +
          es.slice(0, 12).map((e) => `${e.target.col ?? "(whole dataset)"} ← ${e.source.col ?? "(whole dataset)"}  ${e.subtype}`).join("\n") +
          (es.length > 12 ? `\n… ${es.length - 12} more` : "") + "\nclick to expand both tables";
      // a wide transparent twin takes the pointer: a 2 px line is hard to hover
      const hit = svg("path", { class: "ghit", d: path.getAttribute("d") });
      const g = svg("g", { class: "gedge-g" }, hit, path);
      this.edgeEls.push([path, es.map((e) => e.key)]);
      g.addEventListener("mousemove", (ev) => this.hooks.tooltip(text, ev));
      g.addEventListener("mouseleave", () => this.hooks.tooltip(null));
      g.addEventListener("click", () => {
        if (single) this.hooks.onSelect({ edge: e0 });
        else { this.model.datasets.get(e0.source.ds).expanded = true; this.model.datasets.get(e0.target.ds).expanded = true; this.draw(); }
      });
      return g;
    }

    // Selection: the selected column, the edges on its upstream and downstream paths lit, the
    // others dimmed.
    restyle() {
      const model = this.model;
      const lit = model.selected ? model.pathOf(model.selected) : null;
      const onPath = new Set();
      if (lit) for (const e of model.edges.values()) if (lit.has(e.key)) {
        onPath.add(`${e.source.ds}\u0001${e.source.col}`); onPath.add(`${e.target.ds}\u0001${e.target.col}`);
      }
      for (const [path, keys] of this.edgeEls) {
        const on = lit ? keys.some((k) => lit.has(k)) : null;
        path.classList.toggle("lit", on === true);
        path.classList.toggle("dim", on === false);
      }
      for (const row of this.world.querySelectorAll("g.col")) {
        const ref = `${row.dataset.ds}\u0001${row.dataset.col === undefined ? null : row.dataset.col}`;
        const sel = model.selected && `${model.selected.ds}\u0001${model.selected.col}` === ref;
        row.classList.toggle("selected", !!sel);
        row.classList.toggle("lit", !sel && onPath.has(ref));
      }
    }

    boxOf(d, b) {
      const model = this.model;
      const isStart = d.name === model.startDataset;
      const g = svg("g", { class: `box${isStart ? " start" : ""}${d.expanded ? " expanded" : ""}`,
        transform: `translate(${b.x},${b.y})`, "data-dataset": d.name });
      g.append(svg("rect", { class: "frame", width: b.w, height: b.h, rx: 6 }));
      const head = svg("g", { class: "head", "data-node": d.name, tabindex: 0,
        onclick: () => { d.expanded = !d.expanded; this.draw(); this.hooks.onSelect({ dataset: d.name }); } },
        svg("rect", { width: b.w, height: HEAD, rx: 6 }),
        svg("text", { x: 10, y: 17, class: "dsname" }, clip(shortName(d.name), 34)),
        svg("text", { x: 10, y: 32, class: "dsfull" }, clip(d.name, 44)),
        svg("text", { x: b.w - 12, y: 17, class: "chev", "text-anchor": "end" }, d.expanded ? "▾" : `${d.columns.size} ▸`),
        svg("title", {}, `${d.name}\n${d.expanded ? "click to collapse" : "click to show its columns"}`));
      g.append(head);
      if (d.expanded) {
        model.rows(d).forEach((col, i) => {
          const ref = { ds: d.name, col: col === WHOLE ? null : col };
          const isStartCol = model.start && model.start === `${d.name}.${col}`;
          const row = svg("g", { class: `col${col === WHOLE ? " whole" : ""}${isStartCol ? " start" : ""}`,
            transform: `translate(0,${HEAD + i * ROW})`, "data-ds": d.name, "data-col": col === WHOLE ? null : col, "data-node": col === WHOLE ? d.name : `${d.name}.${col}`, tabindex: 0,
            onclick: (ev) => {
              ev.stopPropagation();
              const sel = model.selected && model.selected.ds === ref.ds && model.selected.col === ref.col;
              model.selected = sel ? null : ref;
              this.restyle(); // no redraw: the row stays the same element (a double-click sees both clicks)
              this.hooks.onSelect(sel ? null : { column: ref });
            },
            ondblclick: (ev) => { ev.stopPropagation(); if (col !== WHOLE) this.hooks.onExpandColumn(d.name, col); } },
          svg("rect", { x: 1, width: b.w - 2, height: ROW }),
          svg("text", { x: 12, y: 15 }, col === WHOLE ? "(whole dataset)" : clip(col, 38)),
          svg("title", {}, col === WHOLE ? `${d.name} as a whole: filters, joins, group by … that decide which rows`
            : `${d.name}.${col}\nclick to trace it, double-click to load more lineage from it`));
          g.append(row);
        });
      }
      return g;
    }
  }

  function shortName(name) {
    if (name.includes("://") || name.startsWith("file:") || name.startsWith("/")) {
      const parts = name.replace(/\/+$/, "").split("/");
      return parts[parts.length - 1] || name;
    }
    const parts = U.splitName(name);
    return parts.length >= 3 ? parts.slice(-2).join(".") : name;
  }

  function clip(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + "…" : s; }

  // Arrow heads, one per edge kind (defs live in their own small svg so the view can redraw).
  function defs() {
    const mk = (kind) => svg("marker", { id: `arrow-${kind}`, viewBox: "0 0 10 10", refX: 9, refY: 5,
      markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse", class: `arrow ${kind}` }, svg("path", { d: "M0,0 L10,5 L0,10 z" }));
    return svg("svg", { class: "defs", width: 0, height: 0, "aria-hidden": "true" }, svg("defs", {}, mk("DIRECT"), mk("INDIRECT")));
  }

  return { Model, View, defs, WHOLE, shortName, label };
})();
