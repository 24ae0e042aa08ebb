// The organiser view. Plain script, no build, nothing loaded from elsewhere.
// Data from the server only reaches the page through textContent (never as HTML).
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const EXPORT_NAMES = {
    jsonl: "JSON lines (annotations.jsonl)",
    labelstudio: "Label Studio (labelstudio.json)",
    halueval: "HaluEval general (general_data.json)",
  };
  const PARTIAL_NAME = "HaluEval general, partly labelled items too (general_data_partial.json)";
  let timer = null;

  const api = apiCall;  // api.js

  function cell(text) {
    const td = document.createElement("td");
    td.textContent = text === null || text === undefined ? "" : String(text);
    return td;
  }

  function votesText(votes) {
    return votes.map((v) => v.annotator + ": " + v.label).join(", ");
  }

  function fill(tableId, emptyId, rows) {
    $(tableId).querySelector("tbody").replaceChildren(...rows);
    $(tableId).hidden = rows.length === 0;
    $(emptyId).hidden = rows.length > 0;
  }

  function render(data) {
    const all = data.overall;
    $("org-overall").textContent =
      all.complete + " of " + all.items + " items complete · " + all.labels + " of " +
      all.target + " labels · " + data.per_item + " annotators per item";

    fill("org-annotators", "org-no-annotators", data.annotators.map((a) => {
      const tr = document.createElement("tr");
      tr.dataset.annotator = a.annotator;
      tr.append(cell(a.annotator), cell(a.labelled), cell(a.yes), cell(a.no),
        cell(a.in_progress), cell(a.available), cell(a.last || "—"));
      return tr;
    }));

    $("org-tie-count").textContent = String(data.tie_count);
    fill("org-ties", "org-no-ties", data.ties.map((t) => {
      const tr = document.createElement("tr");
      tr.dataset.item = t.item_id;
      const action = document.createElement("td");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "extra-place";
      button.textContent = "Ask one more annotator";
      button.addEventListener("click", () => addPlace(t.item_id, button));
      action.append(button);
      tr.append(cell(t.item_id), cell(t.query), cell(votesText(t.votes)), action);
      return tr;
    }));

    $("org-disagreement-count").textContent = String(data.disagreement_count);
    fill("org-disagreements", "org-no-disagreements", data.disagreements.map((d) => {
      const tr = document.createElement("tr");
      tr.dataset.item = d.item_id;
      tr.append(cell(d.item_id), cell(d.query), cell(d.yes), cell(d.no),
        cell(votesText(d.votes)), cell(d.free_places));
      return tr;
    }));
    const shown = data.disagreements.length;
    $("org-truncated").hidden = shown >= data.disagreement_count;
    $("org-truncated").textContent = "Showing the first " + shown + "; export for the rest.";

    $("org-exports").replaceChildren(...data.exports.map((e) => {
      const li = document.createElement("li");
      const a = document.createElement("a");
      a.href = e.url;
      a.setAttribute("download", e.file);
      a.dataset.format = e.format;
      if (e.partial) {
        // what partial means, next to its link: the full download leaves these items out
        a.dataset.partial = "1";
        a.textContent = PARTIAL_NAME;
        const why = document.createElement("span");
        why.className = "muted";
        why.textContent = " — also the items with fewer than " + data.per_item +
          " labels, each record with its number of labels (n_labels)";
        li.append(a, why);
        return li;
      }
      a.textContent = EXPORT_NAMES[e.format] || e.format;
      li.append(a);
      return li;
    }));
    $("org-updated").textContent = "updated " + new Date().toLocaleTimeString();
  }

  async function refresh() {
    try {
      render(await api("GET", "/api/organiser/overview"));
    } catch (e) {
      if (e.status === 401) showLogin("");
      else $("org-updated").textContent = "not updated: " + e.message;
    }
  }

  async function addPlace(itemId, button) {
    button.disabled = true;
    try {
      await api("POST", "/api/organiser/extra-place", { item_id: itemId });
      await refresh();
    } catch (e) {
      button.disabled = false;
      $("org-updated").textContent = "not done: " + e.message;
    }
  }

  function showLogin(message) {
    if (timer) clearInterval(timer);
    timer = null;
    $("org-view").hidden = true;
    $("org-who").hidden = true;
    $("org-login").hidden = false;
    $("org-login-error").textContent = message;
    $("org-token").focus();
  }

  async function showView(tokenRequired) {
    $("org-login").hidden = true;
    $("org-view").hidden = false;
    $("org-who").hidden = false;
    $("org-logout").hidden = !tokenRequired;
    await refresh();
    if (!timer) timer = setInterval(() => { if (!document.hidden) refresh(); }, 20000);
  }

  async function login(ev) {
    ev.preventDefault();
    try {
      await api("POST", "/api/organiser/login", { token: $("org-token").value });
      $("org-token").value = "";
      await showView(true);
    } catch (e) {
      $("org-login-error").textContent = "Cannot open the organiser view: " + e.message;
    }
  }

  async function logout() {
    try {
      await api("POST", "/api/organiser/logout", {});
    } finally {
      showLogin("");
    }
  }

  async function start() {
    $("org-login-form").addEventListener("submit", login);
    $("org-logout").addEventListener("click", logout);
    $("org-refresh").addEventListener("click", refresh);
    let session;
    try {
      session = await api("GET", "/api/organiser/session");
    } catch (e) {
      $("org-unavailable").hidden = false;
      $("org-unavailable-text").textContent = "The server cannot be reached: " + e.message;
      return;
    }
    if (session.organiser) await showView(session.token_required);
    else if (session.available) showLogin("");
    else {
      $("org-unavailable").hidden = false;
      $("org-unavailable-text").textContent =
        "This server has no organiser token. Make the tokens file with " +
        "'halugen annotate tokens' (it holds one under \"@organiser\") and restart the server.";
    }
  }

  document.addEventListener("DOMContentLoaded", start);
})();
