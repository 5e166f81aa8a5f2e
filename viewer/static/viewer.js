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

function cell(td, state, note) {
  const id = td.dataset.episode;
  for (const s of STATES) td.classList.toggle("st-" + s, s === state);
  td.title = `${id}: ${state}, ${note}`;
  td.dataset.note = note;
  const link = td.querySelector("a");
  if (link) link.setAttribute("aria-label", `${id}: ${state}`);
}

async function swapSuite(root) {
  // The grid's cells changed (a campaign appeared, or a run added agents or levels): take the
  // server's own rendering of the page's campaign part, without reloading the page.
  const response = await fetch(location.pathname, { headers: { Accept: "text/html" } });
  const doc = new DOMParser().parseFromString(await response.text(), "text/html");
  const fresh = doc.getElementById("suite");
  if (fresh) root.replaceChildren(...[...fresh.childNodes].map((n) => document.importNode(n, true)));
  root.dataset.cells = fresh ? fresh.dataset.cells : root.dataset.cells;
}

function suitePage(root) {
  let swapping = false;
  follow(root.dataset.live, async (data) => {
    if (data.missing) return;
    if (String(data.layout) !== root.dataset.cells) {
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
    const cells = new Map([...root.querySelectorAll("td.cell")].map((td) => [td.dataset.episode, td]));
    for (const [id, [state, note]] of Object.entries(data.states)) {
      const td = cells.get(id);
      if (td) cell(td, state, note);
    }
    const failures = document.getElementById("failures");
    if (failures) {
      const failed = [...cells.values()].filter((td) => td.classList.contains("st-failed"));
      const items = failed.map((td) => {
        const li = document.createElement("li");
        const a = document.createElement("a");
        a.href = "/episodes/" + encodeURIComponent(td.dataset.episode);
        a.textContent = td.dataset.episode;
        li.append(a, ": " + td.dataset.note);
        return li;
      });
      if (!items.length) {
        const li = document.createElement("li");
        li.className = "empty";
        li.textContent = "none";
        items.push(li);
      }
      failures.replaceChildren(...items);
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
