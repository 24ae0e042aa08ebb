// The view page: a list of a store's seeds with filters, and one seed's story.
// Data enters the DOM as text only (textContent, never markup): a record may hold anything.
// Plain script, no build; api.js (apiCall) is loaded first.
"use strict";

const PAGE = 200;
const FILTERS = [
  ["run", "f-run"], ["task", "f-task"], ["outcome", "f-outcome"], ["pattern", "f-pattern"],
  ["guard", "f-guard"], ["verify", "f-verify"], ["cost_min", "f-cost-min"],
  ["cost_max", "f-cost-max"], ["q", "q"],
];

const state = {
  seeds: [],      // the rows shown
  total: 0,
  selected: -1,   // index into seeds
  open: false,    // the detail view is shown
  request: 0,     // the latest list request; older answers are dropped
};

const $ = (id) => document.getElementById(id);

// An element with a class and text; nothing else is ever set from data.
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function money(usd) {
  const x = Number(usd) || 0;
  if (x === 0) return "$0";
  return "$" + (x < 0.01 ? x.toFixed(6) : x.toFixed(4));
}

function showError(message) {
  $("error").textContent = message || "";
}

function setSource(live) {
  const badge = $("source");
  badge.textContent = live ? "live: a run holds the store" : "store file";
  badge.classList.toggle("live", !!live);
}

// -- filters ----------------------------------------------------------------------------
function fillSelect(select, items, label) {
  const keep = select.value;
  while (select.options.length > 1) select.remove(1);
  for (const item of items) {
    const option = el("option", null, label(item));
    option.value = item.name !== undefined ? item.name : item.run_id;
    select.append(option);
  }
  select.value = [...select.options].some((o) => o.value === keep) ? keep : "";
}

async function loadFacets() {
  const f = await apiCall("GET", "/api/facets");
  setSource(f.live);
  fillSelect($("f-run"), f.runs, (r) => `${r.created} ${r.model} (${r.tasks}, ${r.status})`);
  fillSelect($("f-task"), f.tasks, (t) => `${t.name} (${t.n})`);
  fillSelect($("f-outcome"), f.outcomes, (o) => `${o.name} (${o.n})`);
  fillSelect($("f-pattern"), f.patterns, (p) => `${p.name} (${p.n})`);
  fillSelect($("f-guard"), f.guards, (g) => `${g.name} (${g.n})`);
  // no verify stage wrote to this store: no verify filter
  $("f-verify-label").hidden = !f.verify;
  fillSelect($("f-verify"), (f.verify || []).map((name) => ({ name })), (v) => v.name);
  $("f-cost-min").placeholder = money(f.cost.min);
  $("f-cost-max").placeholder = money(f.cost.max);
}

function query() {
  const params = new URLSearchParams();
  for (const [name, id] of FILTERS) {
    const value = $(id).value.trim();
    if (value && !(name === "verify" && $("f-verify-label").hidden)) params.set(name, value);
  }
  return params;
}

// -- the list ---------------------------------------------------------------------------
async function loadList(append) {
  const params = query();
  params.set("limit", String(PAGE));
  params.set("offset", String(append ? state.seeds.length : 0));
  const ticket = ++state.request;
  let data;
  try {
    data = await apiCall("GET", "/api/seeds?" + params.toString());
  } catch (e) {
    if (ticket === state.request) showError(e.message);
    return;
  }
  if (ticket !== state.request) return;
  showError("");
  setSource(data.live);
  const keep = append ? state.selected : 0;
  state.seeds = append ? state.seeds.concat(data.seeds) : data.seeds;
  state.total = data.total;
  renderList();
  select(Math.min(keep, state.seeds.length - 1), false);
}

function listItem(seed, index) {
  const li = el("li", "seed " + seed.outcome);
  li.id = "seed-" + index;
  li.setAttribute("role", "option");
  li.dataset.index = String(index);
  li.append(el("span", "preview", seed.preview || seed.seed_id || seed.seed_key));
  const tags = el("span", "tags");
  tags.append(el("span", "tag task", seed.task));
  tags.append(el("span", "tag outcome", seed.outcome));
  if (seed.pattern) tags.append(el("span", "tag pattern", seed.pattern));
  if (seed.reason) tags.append(el("span", "tag reason", seed.reason));
  for (const g of seed.guards) if (g !== seed.reason) tags.append(el("span", "tag guard", g));
  if (seed.verify) tags.append(el("span", "tag verify " + seed.verify, "verify: " + seed.verify));
  tags.append(el("span", "tag cost", money(seed.cost_usd)));
  li.append(tags);
  li.addEventListener("click", () => { select(index, false); openSelected(); });
  return li;
}

function renderList() {
  const list = $("list");
  list.replaceChildren(...state.seeds.map(listItem));
  $("count").textContent = `${state.total} seed${state.total === 1 ? "" : "s"}`;
  $("more").hidden = state.seeds.length >= state.total;
  if (!state.seeds.length) list.append(el("li", "empty", "No seed matches these filters."));
}

function select(index, scroll = true) {
  const items = $("list").querySelectorAll("li.seed");
  if (!items.length) { state.selected = -1; return; }
  index = Math.max(0, Math.min(index, items.length - 1));
  if (state.selected >= 0 && items[state.selected]) {
    items[state.selected].removeAttribute("aria-selected");
  }
  state.selected = index;
  items[index].setAttribute("aria-selected", "true");
  $("list").setAttribute("aria-activedescendant", items[index].id);
  if (scroll) items[index].scrollIntoView({ block: "nearest" });
}

// -- one seed ---------------------------------------------------------------------------
async function openSelected() {
  const seed = state.seeds[state.selected];
  if (!seed) return;
  const params = new URLSearchParams({ run: seed.run_id, task: seed.task, key: seed.seed_key });
  let story;
  try {
    story = await apiCall("GET", "/api/seed?" + params.toString());
  } catch (e) {
    showError(e.message);
    return;
  }
  if (state.seeds[state.selected] !== seed) return;  // moved on meanwhile
  setSource(story.live);
  renderStory(story);
  state.open = true;
  $("list-view").hidden = true;
  $("detail-view").hidden = false;
  $("d-position").textContent = `${state.selected + 1} of ${state.total}`;
  window.scrollTo(0, 0);
  $("back").focus({ preventScroll: true });
}

function closeStory() {
  state.open = false;
  $("detail-view").hidden = true;
  $("list-view").hidden = false;
  select(state.selected);
  $("list").focus({ preventScroll: true });
}

async function step(delta) {
  const next = state.selected + delta;
  if (next >= state.seeds.length && state.seeds.length < state.total) await loadList(true);
  if (next < 0 || next >= state.seeds.length) return;
  select(next, !state.open);
  if (state.open) await openSelected();
}

function pieces(node, parts) {
  node.replaceChildren(...parts.map(([text, changed]) =>
    changed ? el("mark", "changed", text) : document.createTextNode(text)));
}

function metaItem(list, label, value, className) {
  if (value === null || value === undefined || value === "") return;
  const li = el("li", className);
  li.append(el("span", "label", label + " "), el("span", "value", value));
  list.append(li);
}

function renderStory(story) {
  const seed = story.seed;
  $("d-title").textContent = seed.seed_id || seed.seed_key;
  const meta = $("d-meta");
  meta.replaceChildren();
  metaItem(meta, "task", seed.task);
  metaItem(meta, "outcome", seed.outcome, "outcome " + seed.outcome);
  if (story.sample) {
    metaItem(meta, "pattern", story.sample.pattern);
    metaItem(meta, "kept by", story.sample.selected_by);
    metaItem(meta, "model", story.sample.model);
  }
  if (seed.reason) metaItem(meta, "reason", seed.reason + (seed.detail ? ": " + seed.detail : ""));
  if (story.verify && story.verify.state) {
    metaItem(meta, "verify", story.verify.state + (story.verify.reason ? ": " + story.verify.reason : ""));
  }
  metaItem(meta, "cost", money(story.cost_usd), "cost");
  metaItem(meta, "run", seed.run_id);
  metaItem(meta, "source", seed.source_file ? `${seed.source_file}:${seed.source_line}` : "");

  const diff = story.diff;
  $("d-right-field").textContent = story.right_field ? "(" + story.right_field + ")" : "";
  if (diff) {
    pieces($("d-right"), diff.right);
    pieces($("d-hallucinated"), diff.hallucinated);
    $("d-hallucinated-field").textContent = "(" + diff.hallucinated_field + ")";
    $("d-hallucinated-side").hidden = false;
  } else {
    $("d-right").textContent = story.right || "";
    $("d-hallucinated-side").hidden = true;  // no sample: the candidates say why
  }

  const cands = $("d-candidates");
  cands.replaceChildren(...story.candidates.map((c) => {
    const li = el("li", "candidate " + c.verdict);
    const head = el("div", "candidate-head");
    head.append(el("span", "tag verdict " + c.verdict, c.verdict));
    if (c.pattern) head.append(el("span", "tag pattern", c.pattern));
    if (c.template) head.append(el("span", "tag template", c.template));
    li.append(head, el("p", "text", c.text || "(no text)"), el("p", "why", c.why));
    return li;
  }));
  if (!story.candidates.length) cands.append(el("li", "empty", "No candidate yet."));

  const body = $("d-calls").tBodies[0];
  body.replaceChildren(...story.calls.map((c) => {
    const tr = document.createElement("tr");
    const tokens = `${c.prompt_tokens ?? "–"} / ${c.completion_tokens ?? "–"}`;
    const ms = c.latency_ms === null ? "–" : String(Math.round(c.latency_ms));
    for (const [text, cls] of [[c.stage], [c.status], [tokens], [c.cached_tokens ?? "–", "opt"],
                               [ms, "opt"], [money(c.cost_usd), "num"]]) {
      tr.append(el("td", cls, text));
    }
    return tr;
  }));
  $("d-cost").textContent = `${story.calls.length} call${story.calls.length === 1 ? "" : "s"}, ${money(story.cost_usd)}`;

  const record = $("d-record");
  record.replaceChildren();
  for (const [name, value] of Object.entries(story.record)) {
    record.append(el("dt", null, name), el("dd", "text", typeof value === "string" ? value : JSON.stringify(value)));
  }
}

// -- keys -------------------------------------------------------------------------------
function typing(target) {
  return target instanceof HTMLInputElement || target instanceof HTMLSelectElement ||
    target instanceof HTMLTextAreaElement;
}

document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const key = event.key;
  if (typing(event.target)) {
    if (key === "Escape" || (key === "Enter" && event.target.id === "q")) {
      event.preventDefault();
      event.target.blur();
      $("list").focus({ preventScroll: true });
    }
    return;
  }
  if (key === "Enter" && event.target instanceof HTMLButtonElement) return;  // its own click
  if (state.open) {
    if (key === "Escape" || key === "Backspace") { event.preventDefault(); closeStory(); }
    else if (key === "j") { event.preventDefault(); step(1); }
    else if (key === "k") { event.preventDefault(); step(-1); }
    return;
  }
  if (key === "j" || key === "ArrowDown") { event.preventDefault(); step(1); }
  else if (key === "k" || key === "ArrowUp") { event.preventDefault(); step(-1); }
  else if (key === "Enter") { event.preventDefault(); openSelected(); }
  else if (key === "/") { event.preventDefault(); $("q").focus(); $("q").select(); }
  else if (key === "r") { event.preventDefault(); refresh(); }
});

async function refresh() {
  try {
    await loadFacets();
  } catch (e) {
    showError(e.message);
    return;
  }
  await loadList(false);
}

function start() {
  let timer = null;
  for (const [, id] of FILTERS) {
    const input = $(id);
    if (input instanceof HTMLSelectElement) input.addEventListener("change", () => loadList(false));
    else input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => loadList(false), 250);
    });
  }
  $("filters").addEventListener("submit", (e) => e.preventDefault());
  $("more").addEventListener("click", () => loadList(true));
  $("refresh").addEventListener("click", refresh);
  $("back").addEventListener("click", closeStory);
  $("prev").addEventListener("click", () => step(-1));
  $("next").addEventListener("click", () => step(1));
  refresh();
}

document.addEventListener("DOMContentLoaded", start);
