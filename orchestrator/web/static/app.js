// agora's inbox: keeps the page current from its event stream. Answering
// needs none of this: the forms post without it.
"use strict";
(function () {
  const stream = document.body.dataset.stream;
  if (!stream || !window.EventSource) return;
  const live = document.getElementById("live");
  const logs = new Map(); // round log id -> text followed so far
  let timer = null, pending = false, last = 0;

  // typing: do not swap the form out from under someone's free text.
  function typing() {
    const a = document.activeElement;
    return a && a.tagName === "INPUT" && a.type === "text" && a.value !== "";
  }

  // unsent is what the person has set in the page's forms and not sent
  // yet (a ticked "Always answer this", a chosen option, text in a field
  // not focused), by form (its action, task and round) and control, so that a refresh, which
  // replaces the forms, gives it back instead of losing it.
  function controls(root, fn) {
    root.querySelectorAll("form").forEach(f => {
      const task = f.elements.namedItem("task"), round = f.elements.namedItem("round");
      const form = f.getAttribute("action") + (task ? " " + task.value : "") + (round ? "/" + round.value : "");
      for (const el of f.elements) {
        if (!el.name || el.type === "hidden" || el.type === "submit" || el.tagName === "BUTTON") continue;
        const box = el.type === "checkbox" || el.type === "radio";
        fn(el, box, form + " " + el.name + (box ? "=" + el.value : ""));
      }
    });
  }
  function unsent(root) {
    const state = new Map();
    controls(root, (el, box, key) => {
      if (box ? el.checked !== el.defaultChecked : el.value !== el.defaultValue) state.set(key, box ? el.checked : el.value);
    });
    return state;
  }
  function restore(root, state) {
    controls(root, (el, box, key) => {
      if (!state.has(key)) return;
      if (box) el.checked = state.get(key); else el.value = state.get(key);
    });
  }

  // refresh reads the page again at most once a second, however many
  // tasks change: a batch of a thousand must not flood the server.
  function refresh() {
    if (timer) return;
    const wait = Math.max(150, 1000 - (Date.now() - last));
    timer = setTimeout(() => { timer = null; last = Date.now(); load(); }, wait);
  }

  async function load() {
    if (typing()) { pending = true; return; }
    pending = false;
    const res = await fetch(location.pathname + location.search, { headers: { "X-Agora-Fragment": "1" }, credentials: "same-origin" });
    if (res.status === 401 || res.redirected) { location.reload(); return; }
    if (!res.ok) return;
    const html = await res.text();
    const content = document.getElementById("content");
    const open = new Set([...content.querySelectorAll("details[open] pre")].map(p => p.id));
    const state = unsent(content);
    content.innerHTML = html;
    restore(content, state);
    content.querySelectorAll("details pre").forEach(p => { if (open.has(p.id)) p.parentElement.open = true; });
    follow();
    document.dispatchEvent(new CustomEvent("agora:refreshed"));
  }

  // follow streams each running round's output into its <pre>, found by
  // id on every chunk, so a refresh that replaces the element loses nothing.
  function follow() {
    document.querySelectorAll("pre[data-follow]").forEach(pre => {
      if (logs.has(pre.id)) { pre.textContent = logs.get(pre.id); return; }
      logs.set(pre.id, "");
      const id = pre.id, url = pre.dataset.follow;
      fetch(url, { credentials: "same-origin" }).then(async res => {
        if (!res.ok || !res.body) return;
        const reader = res.body.getReader(), dec = new TextDecoder();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          const text = logs.get(id) + dec.decode(value, { stream: true });
          logs.set(id, text);
          const el = document.getElementById(id);
          if (el) { el.textContent = text; el.scrollTop = el.scrollHeight; }
        }
      }).catch(() => {}).finally(() => { setTimeout(() => logs.delete(id), 5000); });
    });
  }

  // human is the pages' one way of printing a duration (web.human).
  function human(ms) {
    const s = Math.floor(ms / 1000), m = Math.floor(s / 60), h = Math.floor(m / 60);
    if (ms < 1000) return Math.max(0, Math.floor(ms)) + "ms";
    if (s < 60) return s + "s";
    if (m < 60) return m + "m " + (s % 60) + "s";
    if (h < 48) return h + "h " + (m % 60) + "m";
    return Math.floor(h / 24) + "d " + (h % 24) + "h";
  }
  // ticks keeps "in 4m 10s" beside a deadline right while the page stays
  // open; the server wrote it from the same time when it served the page.
  function ticks() {
    document.querySelectorAll(".rel[data-at]").forEach(el => {
      const d = Math.round((Date.parse(el.dataset.at) - Date.now()) / 1000) * 1000;
      el.textContent = d > 0 ? "in " + human(d) : d < 0 ? human(-d) + " ago" : "now";
    });
  }
  setInterval(ticks, 5000);

  document.addEventListener("focusout", () => { if (pending) refresh(); });
  const es = new EventSource(stream, { withCredentials: true });
  es.addEventListener("open", () => { live.hidden = false; live.classList.remove("down"); live.textContent = "live"; });
  es.addEventListener("error", () => { live.hidden = false; live.classList.add("down"); live.textContent = "reconnecting"; });
  // sync: the stream (re)started; whatever changed meanwhile, read it now.
  es.addEventListener("sync", refresh);
  es.addEventListener("change", refresh);
  follow();
})();
