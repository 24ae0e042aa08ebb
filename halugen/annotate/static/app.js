// The annotation page. Plain script, no build, nothing loaded from elsewhere.
//
// Safety rule: data from the server (queries, responses, names, notes) only ever reaches
// the page through textContent or as text nodes; no HTML string is ever built from it.
//
// Offsets: the server counts Unicode code points of the response (Python string indices);
// the DOM counts UTF-16 units. Everything kept in `state.spans` is in code points and is
// converted at the two edges (reading a selection, drawing the highlights).
//
// A selection snaps to whole words: its edges move out to the word boundaries (Unicode word
// segmentation through Intl.Segmenter, so "fo" inside "for" takes "for" and CJK text is cut
// into words, not runs of characters), both on the screen when the mouse is released and
// in the span that is stored.
"use strict";

(() => {
  const KEY_KINDS = { "1": "unverifiable", "2": "non-factual", "3": "irrelevant" };

  const state = {
    annotator: null,
    item: null,          // the item payload from the server
    label: null,         // "yes" | "no" | null
    spans: [],           // [{start, end, kind}] in code points, in the order they were added
    note: "",
    lastSaved: null,     // the body last acknowledged by the server, as JSON
    wanted: null,        // the body of the latest save asked for, as JSON
    inflight: null,      // the body of the latest save sent and not answered yet, as JSON
    chain: Promise.resolve(),  // saves go one after another, in order
    donePrev: null,      // on the "done" screen: the item behind the ← key
    words: null,         // [[start, end], ...] UTF-16 word ranges of the current response
    guidelinesShown: false,  // opened once for a newcomer (no labels yet)
  };

  const $ = (id) => document.getElementById(id);

  async function api(method, path, body) {
    try {
      return await apiCall(method, path, body);  // api.js
    } catch (e) {
      if (e.status === 401 && path !== "/api/login") {
        showLogin("Your session ended: log in again.");
      }
      throw e;
    }
  }

  // -- code points <-> UTF-16 ---------------------------------------------------------
  function isHigh(c) { return c >= 0xd800 && c <= 0xdbff; }

  function cpToU16(s, cp) {
    let i = 0;
    for (let n = 0; n < cp && i < s.length; n++) {
      i += (isHigh(s.charCodeAt(i)) && i + 1 < s.length) ? 2 : 1;
    }
    return i;
  }

  function u16ToCp(s, u) {
    let n = 0;
    for (let i = 0; i < u && i < s.length; n++) {
      i += (isHigh(s.charCodeAt(i)) && i + 1 < s.length) ? 2 : 1;
    }
    return n;
  }

  // -- words ----------------------------------------------------------------------------
  // Word ranges [start, end) in UTF-16 units; punctuation and spaces are not words.
  function wordRanges(text) {
    const out = [];
    if (typeof Intl !== "undefined" && typeof Intl.Segmenter === "function") {
      const seg = new Intl.Segmenter(undefined, { granularity: "word" });
      for (const s of seg.segment(text)) {
        if (s.isWordLike) out.push([s.index, s.index + s.segment.length]);
      }
      return out;
    }
    // fallback: letters, digits and marks, joined by an apostrophe or a decimal point
    const re = /[\p{L}\p{N}\p{M}_]+(?:['’.,][\p{L}\p{N}\p{M}_]+)*/gu;
    for (const m of text.matchAll(re)) out.push([m.index, m.index + m[0].length]);
    return out;
  }

  // Move [start, end) out to whole words: an edge inside a word goes to that word's edge.
  function snapToWords(start, end) {
    for (const [a, b] of state.words || []) {
      if (a < start && start < b) start = a;
      if (a < end && end < b) end = b;
      if (a >= end) break;
    }
    return [start, end];
  }

  // The (text node, offset) at UTF-16 offset `u` of the response's text.
  function pointAt(u) {
    const el = $("response");
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let seen = 0;
    let node = walker.nextNode();
    let last = null;
    while (node) {
      const len = node.nodeValue.length;
      if (u <= seen + len) return [node, u - seen];
      seen += len;
      last = node;
      node = walker.nextNode();
    }
    return last ? [last, last.nodeValue.length] : [el, 0];
  }

  // On the screen: grow the selection in the response to whole words as the mouse is let go.
  function snapSelection() {
    if (!state.item) return;
    const sel = window.getSelection();
    const got = selectionRange();
    if (!got || !sel) return;
    const [start, end] = snapToWords(got[0], got[1]);
    if (start === got[0] && end === got[1]) return;
    const [n1, o1] = pointAt(start);
    const [n2, o2] = pointAt(end);
    sel.setBaseAndExtent(n1, o1, n2, o2);
  }

  // -- status and progress ------------------------------------------------------------
  function setStatus(kind, text) {
    const el = $("status");
    el.className = kind;
    el.textContent = text;
  }

  function showProgress(p) {
    if (!p) return;
    const mine = p.mine;
    if (!state.guidelinesShown) {
      state.guidelinesShown = true;
      if (mine.labelled === 0) $("guidelines").open = true;  // a newcomer reads them first
    }
    const all = p.overall;
    const bar = $("progress-bar");
    bar.max = Math.max(1, mine.labelled + mine.available);
    bar.value = mine.labelled;
    $("progress-text").textContent =
      "You: " + mine.labelled + " labelled, " + mine.available + " to go · All: " +
      all.complete + " of " + all.items + " items complete (" + all.labels + " of " +
      all.target + " labels)";
  }

  async function refreshProgress() {
    try {
      showProgress(await api("GET", "/api/progress"));
    } catch (e) {
      /* the next save shows the problem */
    }
  }

  // -- drawing ------------------------------------------------------------------------
  function sortedSpans() {
    return [...state.spans].sort((a, b) => a.start - b.start || a.end - b.end);
  }

  function kindClass(kind) {
    return "kind-" + (Object.values(KEY_KINDS).includes(kind) ? kind : "none");
  }

  function renderResponse() {
    // Only text nodes and <mark> elements holding response text: the selection code
    // measures offsets with Range.toString(), which must see exactly the response.
    const el = $("response");
    const text = state.item.response;
    const nodes = [];
    let pos = 0;
    for (const s of sortedSpans()) {
      const a = cpToU16(text, s.start);
      const b = cpToU16(text, s.end);
      if (a > pos) nodes.push(document.createTextNode(text.slice(pos, a)));
      const mark = document.createElement("mark");
      mark.className = "span " + kindClass(s.kind);
      mark.title = s.kind || "untagged";
      mark.textContent = text.slice(a, b);
      nodes.push(mark);
      pos = b;
    }
    if (pos < text.length) nodes.push(document.createTextNode(text.slice(pos)));
    el.replaceChildren(...nodes);
  }

  function renderSpans() {
    const list = $("spans");
    const text = state.item.response;
    const items = sortedSpans().map((s) => {
      const li = document.createElement("li");
      const badge = document.createElement("span");
      badge.className = "badge " + kindClass(s.kind);
      badge.textContent = s.kind || "untagged";
      const quote = document.createElement("q");
      quote.textContent = text.slice(cpToU16(text, s.start), cpToU16(text, s.end));
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "remove";
      remove.textContent = "×";
      remove.title = "remove this span";
      remove.addEventListener("click", () => removeSpan(s));
      li.append(badge, " ", quote, " ", remove);
      return li;
    });
    list.replaceChildren(...items);
    $("no-spans").hidden = items.length > 0;
  }

  function renderLabel() {
    for (const id of ["label-yes", "label-no"]) {
      const button = $(id);
      button.setAttribute("aria-pressed", String(button.dataset.label === state.label));
    }
  }

  function render() {
    renderResponse();
    renderSpans();
    renderLabel();
  }

  function showItem(payload) {
    state.item = payload;
    state.words = wordRanges(payload.response);
    const own = payload.label;
    state.label = own ? own.label : null;
    state.spans = own ? own.spans.map((s) => ({ start: s.start, end: s.end, kind: s.kind })) : [];
    state.note = own && own.note ? own.note : "";
    state.lastSaved = own ? JSON.stringify(body()) : null;
    state.wanted = state.lastSaved;
    state.inflight = null;  // saves of the previous item still finish, in order, on the chain
    state.donePrev = null;
    $("done").hidden = true;
    $("item").hidden = false;
    $("confirm-no").hidden = true;
    $("position").textContent = payload.position;
    $("item-id").textContent = "(" + payload.id + ")";
    $("query").textContent = payload.query;
    $("note").value = state.note;
    render();
    setStatus(own ? "saved" : "", own ? "saved" : "");
    history.replaceState(null, "", "#item=" + encodeURIComponent(payload.id));
    const sel = window.getSelection();
    if (sel) sel.removeAllRanges();
    window.scrollTo(0, 0);
  }

  function showDone(prev) {
    state.item = null;
    state.donePrev = prev || null;
    $("item").hidden = true;
    $("done").hidden = false;
    history.replaceState(null, "", "#done");
  }

  // -- loading ------------------------------------------------------------------------
  async function openNext() {
    const data = await api("GET", "/api/next");
    if (data.done) showDone(data.prev);
    else showItem(data);
    refreshProgress();
  }

  async function openItem(id) {
    try {
      showItem(await api("GET", "/api/item/" + encodeURIComponent(id)));
      refreshProgress();
    } catch (e) {
      if (e.status === 404) await openNext();
      else throw e;
    }
  }

  async function route() {
    const m = /^#item=(.+)$/.exec(location.hash);
    if (m) await openItem(decodeURIComponent(m[1]));
    else await openNext();
  }

  // -- saving -------------------------------------------------------------------------
  function body() {
    return {
      item_id: state.item.id,
      label: state.label,
      spans: sortedSpans().map((s) => ({ start: s.start, end: s.end, kind: s.kind })),
      note: state.note || null,
    };
  }

  // Save the current label; resolves true once the server has it stored.
  function save() {
    if (!state.item || !state.label) return Promise.resolve(false);
    const payload = body();
    const key = JSON.stringify(payload);
    const itemId = state.item.id;
    state.wanted = key;
    if (key === state.lastSaved && state.inflight === null) {
      setStatus("saved", "saved");  // nothing changed since the last save
      return Promise.resolve(true);
    }
    if (key === state.inflight) {
      // on its way already: wait for that save instead of sending it twice
      return state.chain.then(() => state.lastSaved === key);
    }
    state.inflight = key;
    setStatus("saving", "saving…");
    const done = state.chain.then(async () => {
      try {
        const res = await api("POST", "/api/label", payload);
        const current = state.item && state.item.id === itemId;
        if (current) state.lastSaved = key;
        if (current && state.wanted === key) setStatus("saved", "saved");
        showProgress(res.progress);
        return true;
      } catch (e) {
        if (state.item && state.item.id === itemId) setStatus("error", "not saved: " + e.message);
        return false;
      } finally {
        if (state.inflight === key) state.inflight = null;  // a failed save may be retried
      }
    });
    state.chain = done;
    return done;
  }

  // -- editing ------------------------------------------------------------------------
  // The selection inside the response as UTF-16 offsets, whitespace trimmed, or null.
  function selectionRange() {
    const sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
    const range = sel.getRangeAt(0);
    const el = $("response");
    if (!range.intersectsNode(el)) return null;
    const text = state.item.response;
    const measure = document.createRange();
    let start = 0;
    let end = text.length;
    // A range is ordered: an edge outside the element lies before it (start) or after it (end).
    if (el.contains(range.startContainer)) {
      measure.selectNodeContents(el);
      measure.setEnd(range.startContainer, range.startOffset);
      start = measure.toString().length;
    }
    if (el.contains(range.endContainer)) {
      measure.selectNodeContents(el);
      measure.setEnd(range.endContainer, range.endOffset);
      end = measure.toString().length;
    }
    while (start < end && /\s/.test(text[start])) start++;
    while (end > start && /\s/.test(text[end - 1])) end--;
    if (start >= end) return null;
    return [start, end];
  }

  // The selection as code-point offsets, snapped to whole words, or null.
  function selectionOffsets() {
    const got = selectionRange();
    if (!got) return null;
    const [start, end] = snapToWords(got[0], got[1]);
    const text = state.item.response;
    return { start: u16ToCp(text, start), end: u16ToCp(text, end) };
  }

  function tag(kind) {
    if (!state.item) return;
    const sel = selectionOffsets();
    if (!sel) {
      setStatus("error", "Select some text in the response first.");
      return;
    }
    if (state.spans.some((s) => sel.start < s.end && s.start < sel.end)) {
      setStatus("error", "That overlaps a tagged span: remove it first (× or Backspace).");
      return;
    }
    state.spans.push({ start: sel.start, end: sel.end, kind });
    window.getSelection().removeAllRanges();
    state.label = "yes";  // a tagged span means the response is hallucinated
    $("confirm-no").hidden = true;
    render();
    save();
  }

  function removeSpan(span) {
    state.spans = state.spans.filter((s) => s !== span);
    render();
    save();
  }

  function removeLast() {
    if (state.spans.length === 0) return;
    state.spans.pop();
    render();
    save();
  }

  function setLabel(label) {
    if (!state.item) return;
    if (label === "no" && state.spans.length > 0) {
      $("confirm-no").hidden = false;
      $("confirm-clear").focus();
      return;
    }
    $("confirm-no").hidden = true;
    state.label = label;
    renderLabel();
    save();
  }

  function confirmNo(clear) {
    $("confirm-no").hidden = true;
    if (clear) {
      state.spans = [];
      state.label = "no";
      render();
    } else {
      state.label = "yes";
      renderLabel();
    }
    save();
  }

  async function goNext() {
    if (!state.item) return;
    if (!state.label) {
      setStatus("error", "Mark y (hallucinated) or n (not) first.");
      return;
    }
    if (!(await save())) return;
    try {
      if (state.item.next) await openItem(state.item.next);
      else await openNext();
    } catch (e) {
      setStatus("error", e.message);
    }
  }

  async function goPrev() {
    const prev = state.item ? state.item.prev : state.donePrev;
    if (state.item && state.label && !(await save())) return;
    if (!prev) {
      if (state.item) setStatus("", "This is your first item.");
      return;
    }
    try {
      await openItem(prev);
    } catch (e) {
      setStatus("error", e.message);
    }
  }

  // -- guidelines ---------------------------------------------------------------------
  // Laid out as text: "#" lines become headings, "- " lines list items, blank lines end a
  // paragraph. Nothing in the file is read as HTML or markup beyond that.
  function renderGuidelines(text) {
    const out = [];
    let para = null;
    let list = null;
    let item = null;
    const end = () => { para = null; list = null; item = null; };
    for (const raw of text.split("\n")) {
      const line = raw.replace(/\s+$/, "");
      const heading = /^(#{1,6})\s+(.*)$/.exec(line);
      const bullet = /^\s*[-*]\s+(.*)$/.exec(line);
      if (!line.trim()) {
        end();
      } else if (heading) {
        end();
        const h = document.createElement(heading[1].length === 1 ? "h3" : "h4");
        h.textContent = heading[2];
        out.push(h);
      } else if (bullet) {
        para = null;
        if (!list) {
          list = document.createElement("ul");
          out.push(list);
        }
        item = document.createElement("li");
        item.textContent = bullet[1];
        list.append(item);
      } else if (item && /^\s/.test(raw)) {
        item.textContent += " " + line.trim();  // an indented line goes on with the item
      } else {
        list = null;
        item = null;
        if (!para) {
          para = document.createElement("p");
          para.textContent = line.trim();
          out.push(para);
        } else {
          para.textContent += " " + line.trim();
        }
      }
    }
    $("guidelines-text").replaceChildren(...out);
  }

  function toggleGuidelines() {
    state.guidelinesShown = true;  // the annotator decides from now on
    $("guidelines").open = !$("guidelines").open;
  }

  async function loadGuidelines() {
    try {
      const g = await api("GET", "/api/guidelines");
      renderGuidelines(g.text);
      $("guidelines-source").textContent =
        g.source === "default" ? "halugen's default guidelines" : "From " + g.source;
    } catch (e) {
      $("guidelines-source").textContent = "The guidelines cannot be loaded: " + e.message;
    }
  }

  // -- login --------------------------------------------------------------------------
  function showLogin(message) {
    state.annotator = null;
    state.item = null;
    $("work").hidden = true;
    $("who").hidden = true;
    $("login").hidden = false;
    $("login-error").textContent = message || "";
    $("login-name").focus();
  }

  // The guidelines and the progress come first, so the page does not move under the
  // mouse once the item is there (a newcomer gets the guidelines opened).
  async function showWork(name) {
    state.annotator = name;
    state.guidelinesShown = false;
    $("annotator-name").textContent = name;
    $("who").hidden = false;
    $("login").hidden = true;
    $("work").hidden = false;
    // the login field keeps the focus while hidden: let go, so the shortcuts work at once
    if (document.activeElement instanceof HTMLElement) document.activeElement.blur();
    await Promise.all([loadGuidelines(), refreshProgress()]);
  }

  async function login(ev) {
    ev.preventDefault();
    const name = $("login-name").value;
    const token = $("login-token").value;
    try {
      const res = await api("POST", "/api/login", { annotator: name, token: token || null });
      await showWork(res.annotator);
      await route();
    } catch (e) {
      $("login-error").textContent = "Cannot log in as “" + name + "”: " + e.message;
    }
  }

  async function logout() {
    try {
      await api("POST", "/api/logout", {});
    } finally {
      history.replaceState(null, "", location.pathname);
      showLogin("");
    }
  }

  // -- keys ---------------------------------------------------------------------------
  function onKey(ev) {
    if (!state.annotator || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const t = ev.target;
    if (t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement ||
        (t instanceof HTMLElement && t.isContentEditable)) {
      if (ev.key === "Escape") t.blur();  // back to the shortcuts
      return;
    }
    const key = ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
    if (!$("confirm-no").hidden) {
      if (key === "c") confirmNo(true);
      else if (key === "k" || key === "Escape" || key === "y") confirmNo(false);
      else return;
      ev.preventDefault();
      return;
    }
    if (key in KEY_KINDS) tag(KEY_KINDS[key]);
    else if (key === "y") setLabel("yes");
    else if (key === "n") setLabel("no");
    else if (key === "Backspace") removeLast();
    else if (key === "Enter" || key === "ArrowRight") goNext();
    else if (key === "ArrowLeft") goPrev();
    else if (key === "g") toggleGuidelines();
    else return;
    ev.preventDefault();
  }

  // -- start --------------------------------------------------------------------------
  async function start() {
    $("login-form").addEventListener("submit", login);
    $("logout").addEventListener("click", logout);
    for (const button of document.querySelectorAll("button.tag")) {
      // keep the text selection when the button is pressed
      button.addEventListener("mousedown", (ev) => ev.preventDefault());
      button.addEventListener("click", () => tag(button.dataset.kind));
    }
    $("label-yes").addEventListener("click", () => setLabel("yes"));
    $("label-no").addEventListener("click", () => setLabel("no"));
    $("confirm-clear").addEventListener("click", () => confirmNo(true));
    $("confirm-keep").addEventListener("click", () => confirmNo(false));
    $("prev").addEventListener("click", goPrev);
    $("next").addEventListener("click", goNext);
    $("note").addEventListener("input", () => { state.note = $("note").value; });
    $("note").addEventListener("change", () => { state.note = $("note").value; save(); });
    document.addEventListener("keydown", onKey);
    // after the browser has updated the selection for this release of the mouse
    document.addEventListener("pointerup", () => setTimeout(snapSelection, 0));

    let session;
    try {
      session = await api("GET", "/api/session");
    } catch (e) {
      showLogin("The server cannot be reached: " + e.message);
      return;
    }
    $("login-token-row").hidden = !session.tokens_required;
    if (session.annotator) {
      await showWork(session.annotator);
      try {
        await route();
      } catch (e) {
        setStatus("error", e.message);
      }
    } else {
      showLogin("");
    }
  }

  document.addEventListener("DOMContentLoaded", start);
})();
