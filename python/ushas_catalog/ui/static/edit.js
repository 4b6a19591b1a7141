// Ushas Catalog UI: inline editing (owner, description, tags) through the API's metadata
// endpoints. A write needs write access (a write token, or the local service) and carries the
// session's CSRF token; the service validates and records history exactly as the CLI does.
"use strict";

const Edit = (() => {
  const { el } = U;

  const canWrite = () => Data.session.access === "write";
  const readOnlyTitle = () => "sign in with a write token (ushas tokens create --write) to edit";

  // "saved" fades after a few seconds; an error stays until the next try
  function status(box, text, error) {
    const note = text ? el("span", { class: error ? "edit-error" : "edit-ok", role: error ? "alert" : "status" }, text) : "";
    box.replaceChildren(note);
    if (note && !error) setTimeout(() => note.remove(), 4000);
  }

  // A value shown as text with a pencil; editing swaps in an input (Enter saves, Escape cancels).
  // ``save(newValue)`` returns a promise; on success ``after`` refreshes whatever shows the value.
  function field(opts) {
    const { value, placeholder, multiline, save, name } = opts;
    const wrap = el("span", { class: "editable", "data-field": name });
    const msg = el("span", { class: "edit-msg" });
    const show = (v) => {
      const text = v === null || v === undefined || v === "" ? el("span", { class: "muted placeholder" }, placeholder || "—") : v;
      const btn = el("button", { type: "button", class: "pencil", title: canWrite() ? `edit ${name}` : readOnlyTitle(),
        "aria-label": `edit ${name}`, disabled: !canWrite(), onclick: () => edit(v) }, "✎");
      wrap.replaceChildren(el("span", { class: "value" }, text), btn, msg);
    };
    const edit = (v) => {
      const input = multiline
        ? el("textarea", { rows: 3, class: "edit-input", "aria-label": name })
        : el("input", { type: "text", class: "edit-input", "aria-label": name, size: 28 });
      input.value = v || "";
      const ok = el("button", { type: "button", class: "save" }, "save");
      const cancel = el("button", { type: "button", class: "cancel", onclick: () => show(v) }, "cancel");
      const go = async () => {
        ok.disabled = true;
        const nv = input.value.trim();
        try {
          await save(nv === "" ? null : nv);
          show(nv);
          status(msg, "saved");
          if (opts.after) opts.after(nv);
        } catch (e) {
          ok.disabled = false;
          status(msg, e.message, true);
        }
      };
      ok.addEventListener("click", go);
      input.addEventListener("keydown", (ev) => {
        if (ev.key === "Escape") show(v);
        else if (ev.key === "Enter" && (!multiline || ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); go(); }
      });
      wrap.replaceChildren(input, ok, cancel, msg);
      input.focus();
    };
    show(value);
    return wrap;
  }

  // Tag chips: × removes one, "+ tag" adds (comma-separated for several).
  function tags(opts) {
    const { target, name } = opts;
    let current = [...(opts.tags || [])].sort();
    const wrap = el("span", { class: "tags-edit", "data-field": name || "tags" });
    const msg = el("span", { class: "edit-msg" });
    const draw = () => {
      const chips = current.map((t) => el("span", { class: "tag", "data-tag": t }, t,
        canWrite() ? el("button", { type: "button", class: "untag", title: `remove tag ${t}`, "aria-label": `remove tag ${t}`,
          onclick: () => remove(t) }, "×") : null));
      const add = el("button", { type: "button", class: "add-tag", title: canWrite() ? "add a tag" : readOnlyTitle(),
        disabled: !canWrite(), onclick: () => adding() }, "+ tag");
      wrap.replaceChildren(...(chips.length ? chips : [el("span", { class: "muted" }, opts.empty ?? "")]), add, msg);
    };
    const remove = async (t) => {
      try { await Data.removeTag(target, t); current = current.filter((x) => x !== t); draw(); status(msg, "removed"); }
      catch (e) { status(msg, e.message, true); }
    };
    const adding = () => {
      const input = el("input", { type: "text", class: "tag-input", size: 14, placeholder: "tag, tag…", "aria-label": "new tags" });
      const go = async () => {
        const list = input.value.split(",").map((s) => s.trim()).filter(Boolean);
        if (!list.length) { draw(); return; }
        try {
          await Data.addTags(target, list);
          current = [...new Set([...current, ...list])].sort();
          draw();
          status(msg, "saved");
        } catch (e) { status(msg, e.message, true); }
      };
      input.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter") { ev.preventDefault(); go(); } else if (ev.key === "Escape") draw();
      });
      const add = wrap.querySelector(".add-tag");
      add.replaceWith(input, el("button", { type: "button", class: "save", onclick: go }, "add"));
      input.focus();
    };
    draw();
    return wrap;
  }

  return { field, tags, canWrite };
})();
