// Ushas Catalog UI: hash routes, the search box, the sign-in state. Pages are in pages.js
// (browse, table, search, runs, impact) and lineage-page.js; the API calls in data.js.
"use strict";

(() => {
  const { el, enc } = U;
  const tooltip = document.getElementById("tooltip");

  const routes = [
    [/^\/?$/, () => Pages.home()],
    [/^\/c\/([^/]+)$/, (m) => Pages.catalog(m[1])],
    [/^\/d\/([^/]+)\/([^/]+)$/, (m) => Pages.database(m[1], m[2])],
    [/^\/t\/([^/]+)\/([^/]+)\/([^/]+)$/, (m, p) => Pages.relation(m[1], m[2], m[3], p)],
    [/^\/search$/, (m, p) => Pages.search(p)],
    [/^\/runs$/, (m, p) => Pages.runs(p)],
    [/^\/run\/([^/]+)$/, (m) => Pages.run(m[1])],
    [/^\/impact\/([^/]+)$/, (m, p) => Pages.impact(m[1], p)],
    [/^\/lineage$/, (m, p) => LineagePage.index(p)],
    [/^\/lineage\/([^/]+)$/, (m, p) => LineagePage.graphPage(m[1], p)],
  ];

  async function route() {
    tooltip.hidden = true;
    const hash = location.hash.replace(/^#/, "") || "/";
    const q = hash.indexOf("?");
    const path = q < 0 ? hash : hash.slice(0, q);
    const params = new URLSearchParams(q < 0 ? "" : hash.slice(q + 1));
    for (const a of document.querySelectorAll("header nav a")) {
      a.classList.toggle("active", path.startsWith(a.getAttribute("href").slice(1)) && a.getAttribute("href") !== "#/");
    }
    U.main().replaceChildren(el("p", { class: "loading" }, "loading…"));
    if (path !== "/search") document.getElementById("search").value = "";
    for (const [re, page] of routes) {
      const m = path.match(re);
      if (!m) continue;
      let parts;
      try { parts = m.map((x, i) => (i === 0 ? x : decodeURIComponent(x))); } catch (e) { break; }
      try { await page(parts, params); } catch (e) {
        if (e.status === 401) { // a service reachable from other machines: reads need a token too
          U.setPage("Sign in", el("div", { class: "empty", id: "needs-token" },
            el("p", {}, "This service needs a token to show its catalog: sign in with a token of ",
              el("code", {}, "ushas tokens create --read"), " (or --write to edit)."),
            el("button", { type: "button", onclick: () => { const b = document.getElementById("sign-in"); if (b) b.click(); } }, "sign in")));
        } else U.setPage("Error", U.errorBox(e));
      }
      return;
    }
    U.setPage("Not found", U.errorBox(`no page ${hash}`));
  }

  document.getElementById("search-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const q = document.getElementById("search").value.trim();
    if (q) location.hash = `/search?q=${enc(q)}`;
  });

  // Reads are open on a loopback service; every write needs a write token (docs/service.md):
  // "sign in to edit" exchanges one for a session cookie and a CSRF token.
  function showSession() {
    const box = document.getElementById("session");
    const s = Data.session;
    if (s.access === "write") {
      box.replaceChildren(el("span", { class: "who", id: "who" }, "signed in · can edit"),
        el("button", { type: "button", id: "sign-out", onclick: async () => { await Data.signOut(); showSession(); route(); } }, "sign out"));
      return;
    }
    const msg = el("span", { class: "edit-error", role: "alert" });
    const input = el("input", { type: "password", id: "token", placeholder: "write token", "aria-label": "access token", size: 16, autocomplete: "off" });
    const form = el("form", { class: "signin", hidden: true, onsubmit: async (ev) => {
      ev.preventDefault();
      try { await Data.signIn(input.value.trim()); input.value = ""; showSession(); route(); }
      catch (e) { msg.textContent = e.message; }
    } }, input, el("button", { type: "submit", id: "sign-in-submit" }, "sign in"));
    const open = el("button", { type: "button", id: "sign-in", title: "paste a token of: ushas tokens create --write",
      onclick: () => { open.hidden = true; form.hidden = false; input.focus(); } }, s.auth_required && s.access === "none" ? "sign in" : "sign in to edit");
    const label = s.access === "read" || !s.auth_required ? "read-only" : "signed out";
    box.replaceChildren(el("span", { class: "who", id: "who" }, label), open, form, msg);
  }

  window.addEventListener("hashchange", route);
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "/" && !/INPUT|TEXTAREA|SELECT/.test(document.activeElement.tagName)) { ev.preventDefault(); document.getElementById("search").focus(); }
  });
  document.body.append(Lineage.defs());
  Data.info().then((i) => { document.getElementById("store").textContent = `${i.store} store · project ${i.project}`; }).catch(() => {});
  Data.loadSession().then(() => { showSession(); route(); });
})();
