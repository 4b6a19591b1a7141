// Ushas Catalog UI, shared helpers: DOM building (text only: data is never parsed as markup),
// the API client, humanized times, tables, tags, CSV export.
"use strict";

const U = (() => {
  const main = () => document.getElementById("main");

  // An element: attributes (on* = listeners), children as nodes or text. Every string becomes a
  // text node, so a name like "<img onerror=...>" is shown as those characters.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else if (v !== null && v !== undefined && v !== false) e.setAttribute(k, v === true ? "" : v);
    }
    append(e, children);
    return e;
  }

  function append(e, children) {
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  // ``node`` holding just ``children`` (null / false ones left out: never the text "null")
  function fill(node, ...children) {
    node.replaceChildren();
    return append(node, children);
  }

  const SVG_NS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else if (v !== null && v !== undefined) e.setAttribute(k, v);
    }
    for (const c of children.flat()) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }

  const enc = encodeURIComponent;

  class ApiError extends Error {
    constructor(status, code, message) { super(message); this.status = status; this.code = code; }
  }

  async function api(path, options) {
    const { csrf, ...rest } = options || {};
    const opts = { headers: { Accept: "application/json" }, credentials: "same-origin", ...rest };
    opts.headers = { ...opts.headers };
    if (opts.body !== undefined && typeof opts.body !== "string") {
      opts.body = JSON.stringify(opts.body);
      opts.headers["Content-Type"] = "application/json";
    }
    if (opts.method && opts.method !== "GET") opts.headers["X-CSRF-Token"] = csrf || "";
    const r = await fetch(path, opts);
    const type = r.headers.get("Content-Type") || "";
    let body = null;
    if (type.includes("json")) body = await r.json();
    else if (r.status !== 204) {
      await r.text();
      if (!r.ok) throw new ApiError(r.status, "HTTP", `${r.status} ${r.statusText || "error"} for ${path}`);
      throw new ApiError(r.status, "HTTP", `the service answered ${path} with ${type || "no content type"}, not JSON`);
    }
    if (!r.ok) {
      const e = (body && body.error) || {};
      throw new ApiError(r.status, e.code || e.type || "HTTP", e.message || `${r.status} ${r.statusText}`);
    }
    return body;
  }

  // ---- times -----------------------------------------------------------------------------------
  function toMs(t) {
    if (t === null || t === undefined || t === "") return null;
    if (typeof t === "number") return t;
    const ms = Date.parse(t);
    return Number.isNaN(ms) ? null : ms;
  }

  const UNITS = [["year", 365 * 864e5], ["month", 30 * 864e5], ["week", 7 * 864e5], ["day", 864e5],
    ["hour", 36e5], ["minute", 6e4], ["second", 1e3]];

  function ago(t, now) {
    const ms = toMs(t);
    if (ms === null) return "";
    const diff = (now || Date.now()) - ms;
    const abs = Math.abs(diff);
    if (abs < 45e3) return diff >= 0 ? "just now" : "in a few seconds";
    for (const [unit, size] of UNITS) {
      if (abs >= size) {
        const n = Math.round(abs / size);
        const text = `${n} ${unit}${n === 1 ? "" : "s"}`;
        return diff >= 0 ? `${text} ago` : `in ${text}`;
      }
    }
    return "just now";
  }

  function exact(t) {
    const ms = toMs(t);
    if (ms === null) return "";
    const d = new Date(ms);
    const pad = (n, w = 2) => String(n).padStart(w, "0");
    const off = -d.getTimezoneOffset();
    const zone = off === 0 ? "UTC" : `UTC${off > 0 ? "+" : "-"}${pad(Math.floor(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`;
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:` +
      `${pad(d.getSeconds())} ${zone}`;
  }

  // "3 hours ago", with the exact time on hover.
  function when(t) {
    const ms = toMs(t);
    if (ms === null) return el("span", { class: "muted" }, "—");
    return el("time", { datetime: new Date(ms).toISOString(), title: exact(ms), class: "when" }, ago(ms));
  }

  function duration(ms) {
    if (ms === null || ms === undefined || Number.isNaN(ms)) return "—";
    if (ms < 1000) return `${Math.round(ms)} ms`;
    if (ms < 60e3) return `${(ms / 1000).toFixed(ms < 10e3 ? 2 : 1)} s`;
    const m = Math.floor(ms / 60e3), s = Math.round((ms % 60e3) / 1000);
    if (m < 60) return `${m} min ${s} s`;
    return `${Math.floor(m / 60)} h ${m % 60} min`;
  }

  // ---- tables ------------------------------------------------------------------------------------
  // A table with a header row; ``rows`` are arrays of cells (text or nodes).
  function table(columns, rows, attrs) {
    return el("table", attrs || {},
      el("thead", {}, el("tr", {}, columns.map((c) => el("th", {}, c)))),
      el("tbody", {}, rows.map((r) => el("tr", {}, r.map((cell) => el("td", {}, cell))))));
  }

  // A key / value table: the key is the row's header, no (blank) header row.
  function kv(pairs, attrs) {
    return el("table", { class: "kv", ...(attrs || {}) },
      el("tbody", {}, pairs.filter((p) => p).map(([k, v]) => el("tr", {}, el("th", { scope: "row" }, k), el("td", {}, v)))));
  }

  function tag(text, extra) { return el("span", { class: "tag", ...(extra || {}) }, text); }

  function muted(text) { return el("span", { class: "muted" }, text); }

  function link(hash, text, attrs) { return el("a", { href: "#" + hash, ...(attrs || {}) }, text); }

  // The page of a catalog table or view from its three-part name (parts may hold dots only when
  // given as an array).
  function relationHash(parts) { return "/t/" + parts.map(enc).join("/"); }

  // The parts of a dotted name as the API writes it: a part holding a dot, a space or a backtick
  // is quoted with backticks (a backtick inside doubled): shop.sales.`a.b`
  function splitName(name) {
    const parts = [];
    let cur = "", quoted = false;
    const s = String(name);
    for (let i = 0; i < s.length; i++) {
      const ch = s[i];
      if (quoted) {
        if (ch === "`" && s[i + 1] === "`") { cur += "`"; i++; } else if (ch === "`") quoted = false; else cur += ch;
      } else if (ch === "`") quoted = true;
      else if (ch === ".") { parts.push(cur); cur = ""; } else cur += ch;
    }
    parts.push(cur);
    return parts;
  }

  function errorBox(e) { return el("p", { class: "error", role: "alert" }, String((e && e.message) || e)); }

  // ---- CSV ---------------------------------------------------------------------------------------
  function csvCell(v) {
    let s = v === null || v === undefined ? "" : String(v);
    if (/^[=+\-@\t\r]/.test(s)) s = "'" + s; // no formula injection when opened in a spreadsheet
    return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  }

  function toCsv(header, rows) {
    return [header, ...rows].map((r) => r.map(csvCell).join(",")).join("\r\n") + "\r\n";
  }

  function download(filename, text, type) {
    const blob = new Blob([text], { type: type || "text/csv;charset=utf-8" });
    const a = el("a", { href: URL.createObjectURL(blob), download: filename, hidden: true });
    document.body.append(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  }

  // ---- text highlighting (search matches) ---------------------------------------------------------
  // ``text`` with every occurrence of a term wrapped in <mark>; built from text nodes only.
  function highlight(text, terms) {
    const s = String(text ?? "");
    const words = (terms || []).map((t) => String(t).toLowerCase().replace(/\*/g, "")).filter((t) => t.length > 0);
    if (!words.length) return [s];
    const lower = s.toLowerCase();
    const out = [];
    let i = 0;
    while (i < s.length) {
      let best = -1, len = 0;
      for (const w of words) {
        const j = lower.indexOf(w, i);
        if (j >= 0 && (best < 0 || j < best || (j === best && w.length > len))) { best = j; len = w.length; }
      }
      if (best < 0) { out.push(s.slice(i)); break; }
      if (best > i) out.push(s.slice(i, best));
      out.push(el("mark", {}, s.slice(best, best + len)));
      i = best + len;
    }
    return out;
  }

  function setPage(title, ...children) {
    document.title = title ? `${title} · Ushas Catalog` : "Ushas Catalog";
    fill(main(), children);
  }

  return { el, append, fill, svg, enc, api, ApiError, ago, exact, when, toMs, duration, table, kv, tag, muted,
    link, relationHash, splitName, errorBox, toCsv, csvCell, download, highlight, setPage, main };
})();
