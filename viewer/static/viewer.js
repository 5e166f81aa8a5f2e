// InquiTree viewer: keyboard navigation on episode pages and live campaign updates.
// Everything that comes from the server is written into the page with textContent or attributes,
// never as markup (the server-rendered fragments swapped in below are escaped by their templates).
"use strict";

const STATES = ["pending", "running", "interrupted", "failed", "limit", "finished"];

function keyboard() {
  // j/k: next/previous turn; n: next engine note; h, f, l, t, v: next hint, result draw,
  // locked subtopic, transition, verdict.
  const turns = [...document.querySelectorAll(".turn[id^='turn-']")];
  if (!turns.length) return;
  const tags = { n: null, h: "hint", f: "draw", l: "locked", t: "transition", v: "verdict" };
  let at = turns.findIndex((t) => "#" + t.id === location.hash);
  const seen = {};
  document.addEventListener("keydown", (e) => {
    if (e.target.closest("input, textarea, select") || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "j" || e.key === "k") {
      at = Math.max(0, Math.min(turns.length - 1, at + (e.key === "j" ? 1 : -1)));
      location.hash = turns[at].id;
    } else if (e.key in tags) {
      const want = tags[e.key];
      const notes = [...document.querySelectorAll(want ? `.engine-note[data-tag='${want}']` : ".engine-note")];
      if (!notes.length) return;
      document.querySelectorAll(".focus").forEach((n) => n.classList.remove("focus"));
      seen[e.key] = ((seen[e.key] ?? -1) + 1) % notes.length;
      const note = notes[seen[e.key]];
      note.classList.add("focus");
      note.scrollIntoView({ block: "center" });
    }
  });
}

function status(text) {
  const el = document.getElementById("live-status");
  if (el) el.textContent = text;
}

function follow(url, onData) {
  const source = new EventSource(url);
  source.onmessage = (e) => {
    onData(JSON.parse(e.data));
    status("live: updated " + new Date().toLocaleTimeString());
  };
  source.onerror = () => status("the viewer is not answering: retrying");
  window.addEventListener("pagehide", () => source.close());
}

const EPISODE = "/episodes/";

function cell(link, state, note) {
  // A grid cell is a link to its episode inside a cell coloured by its state.
  const td = link.parentElement;
  for (const s of STATES) td.classList.toggle("st-" + s, s === state);
  link.title = `${state}: ${note}`;
}

async function swapSuite(root) {
  // The grid's cells changed (a campaign appeared, or a run added agents or levels): take the
  // server's own rendering of the page's campaign part, without reloading the page.
  const response = await fetch(location.pathname + location.search, { headers: { Accept: "text/html" } });
  const doc = new DOMParser().parseFromString(await response.text(), "text/html");
  const fresh = doc.getElementById("suite");
  if (fresh) root.replaceChildren(...[...fresh.childNodes].map((n) => document.importNode(n, true)));
  root.dataset.cells = fresh ? fresh.dataset.cells : root.dataset.cells;
}

function suitePage(root) {
  let swapping = false;
  const failed = new Map(); // episode id -> why, from the stream's first (whole) message on
  let seenAll = false;
  follow(root.dataset.live, async (data) => {
    if (data.missing) return;
    if (!data.diff) { failed.clear(); seenAll = true; }
    for (const [id, [state, note]] of Object.entries(data.states)) {
      if (state === "failed") failed.set(id, note); else failed.delete(id);
    }
    if (String(data.cells) !== root.dataset.cells) {
      if (!swapping) {
        swapping = true;
        try { await swapSuite(root); } finally { swapping = false; }
      }
      return;
    }
    const b = data.brief;
    for (const [key, value] of Object.entries({ status: b.status, progress: b.progress, counts: b.counts,
      elapsed: b.elapsed, eta: b.eta, tokens: b.tokens, cost: b.cost, started: b.started, runs: b.runs })) {
      const el = document.getElementById("s-" + key);
      if (el) el.textContent = String(value);
    }
    const links = new Map(
      [...root.querySelectorAll(`#grid a[href^="${EPISODE}"]`)].map((a) => [a.getAttribute("href").slice(EPISODE.length), a]));
    for (const [id, [state, note]] of Object.entries(data.states)) {
      const link = links.get(id);
      if (link) cell(link, state, note);
    }
    const list = document.getElementById("failures");
    if (list && seenAll) {
      const items = [...failed].map(([id, note]) => {
        const li = document.createElement("li");
        const a = document.createElement("a");
        a.href = EPISODE + encodeURIComponent(id);
        a.textContent = id;
        li.append(a, ": " + note);
        return li;
      });
      if (!items.length) {
        const li = document.createElement("li");
        li.className = "empty";
        li.textContent = "none";
        items.push(li);
      }
      list.replaceChildren(...items);
    }
  });
}

function campaignsTable(table) {
  const fields = ["status", "progress", "counts", "elapsed", "eta", "tokens", "cost"];
  follow(table.dataset.live, (data) => {
    const body = table.tBodies[0];
    const rows = data.campaigns.map((c) => {
      const tr = document.createElement("tr");
      tr.dataset.key = c.key;
      const name = document.createElement("td");
      const a = document.createElement("a");
      a.href = "/suites/" + encodeURIComponent(c.key);
      a.textContent = c.name;
      name.append(a);
      tr.append(name);
      for (const f of fields) {
        const td = document.createElement("td");
        td.textContent = String(c[f]);
        tr.append(td);
      }
      return tr;
    });
    if (rows.length) body.replaceChildren(...rows);
  });
}

document.addEventListener("DOMContentLoaded", () => {
  keyboard();
  const suite = document.getElementById("suite");
  if (suite && suite.dataset.live) suitePage(suite);
  const campaigns = document.getElementById("campaigns");
  if (campaigns && campaigns.dataset.live) campaignsTable(campaigns);
});
