// The Search-o1 page. Two modes, chosen by /api/mode:
//  - serve: ask a question; the chat-completions stream is read as it arrives and drawn as
//    a timeline of thoughts and search cards, then the answer and the run's numbers;
//  - view: browse an evaluation run (items, scores, finish reasons, each item's trace).
// Plain JS, no build step; every piece of server text goes in through textContent.
"use strict";

const $ = (id) => document.getElementById(id);

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

// Query and result blocks are shown as cards, so the thought text drops them (including
// a block still being written, which has no end marker yet).
const BLOCKS = [
  ["<|begin_search_query|>", "<|end_search_query|>"],
  ["<|begin_search_result|>", "<|end_search_result|>"],
  ["<|begin_url|>", "<|end_url|>"],
  ["<|begin_full_page|>", "<|end_full_page|>"],
];

function visibleReasoning(text) {
  let out = text;
  for (const [begin, end] of BLOCKS) {
    let start;
    while ((start = out.indexOf(begin)) >= 0) {
      const stop = out.indexOf(end, start);
      out = stop < 0 ? out.slice(0, start) : out.slice(0, start) + out.slice(stop + end.length);
    }
    out = out.split(end).join("");
  }
  return out.replace(/\n{3,}/g, "\n\n").trim();
}

function fmtSeconds(s) {
  if (s === undefined || s === null) return "–";
  return s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(1)} s`;
}

function stat(label, value) {
  return el("span", { class: "stat" }, `${label} `, el("b", { text: String(value) }));
}

// ---------------------------------------------------------------- search cards (shared)

function searchCard(query) {
  const card = el("div", { class: "card search", "data-query": query });
  card.append(
    el("div", { class: "card-head" },
      el("span", { class: "tag", text: "search" }),
      el("span", { class: "query", text: query })),
    el("div", { class: "pending", text: "searching" }),
  );
  return card;
}

function fillSearchCard(card, ev) {
  card.replaceChildren();
  const outcome = ev.outcome || "searched";
  card.classList.toggle("failed", outcome === "failed");
  card.classList.toggle("other", outcome !== "searched" && outcome !== "failed");
  const head = el("div", { class: "card-head" },
    el("span", { class: "tag", text: "search" }),
    el("span", { class: "query", text: ev.query }));
  if (outcome !== "searched") {
    head.append(el("span", { class: `tag ${outcome === "failed" ? "bad" : "warn"}`, text: outcome }));
  }
  const meta = [];
  if (ev.hits && ev.hits.length) meta.push(`${ev.hits.length} hit${ev.hits.length === 1 ? "" : "s"}`);
  if (ev.latency_s) meta.push(fmtSeconds(ev.latency_s));
  head.append(el("span", { class: "card-meta", text: meta.join(" · ") }));
  card.append(head);
  if (ev.hits && ev.hits.length) card.append(hitList(ev.hits));
  if (ev.error) card.append(el("div", { class: "facts" }, el("div", { class: "facts-text", text: ev.error })));
  if (ev.refined) {
    card.append(el("div", { class: "facts" },
      el("div", { class: "facts-label", text: "Facts inserted into the chain" }),
      el("div", { class: "facts-text", text: ev.refined })));
  }
  return card;
}

function hitList(hits) {
  const list = el("ol", { class: "hits" });
  const shown = hits.slice(0, 5);
  for (const hit of shown) list.append(hitItem(hit));
  if (hits.length > shown.length) {
    const more = el("details", {}, el("summary", { text: `${hits.length - shown.length} more` }));
    const rest = el("ol", { class: "hits", start: String(shown.length + 1) });
    for (const hit of hits.slice(shown.length)) rest.append(hitItem(hit));
    more.append(rest);
    list.append(el("li", { class: "more-hits" }, more));
  }
  return list;
}

function hitItem(hit) {
  const title = hit.title || hit.url || hit.id || "(untitled)";
  const safeUrl = hit.url && /^https?:\/\//i.test(hit.url) ? hit.url : null;
  const name = safeUrl
    ? el("a", { href: safeUrl, target: "_blank", rel: "noopener noreferrer", text: title })
    : el("span", { text: title });
  return el("li", { class: "hit" }, name, hit.id ? el("span", { class: "hit-id", text: hit.id }) : null);
}

// The answer's numbered sources: a link for a web page, the passage id for a local
// passage, and the sentence the fact came from where one was found.
function sourceList(sources) {
  const list = el("ol", { class: "sources" });
  for (const s of sources || []) {
    const title = s.title || s.url || s.id || "(untitled)";
    const safeUrl = s.url && /^https?:\/\//i.test(s.url) ? s.url : null;
    const name = safeUrl
      ? el("a", { href: safeUrl, target: "_blank", rel: "noopener noreferrer", text: title })
      : el("span", { class: "source-title", text: title });
    const item = el("li", { class: "source", value: String(s.n), "data-id": s.id }, name,
      safeUrl ? null : el("span", { class: "hit-id", text: s.id }));
    if (s.quote) item.append(el("div", { class: "source-quote", text: s.quote }));
    list.append(item);
  }
  return list;
}

function showSources(container, sources) {
  container.replaceChildren();
  container.hidden = !(sources && sources.length);
  if (container.hidden) return;
  container.append(el("div", { class: "answer-label", text: "Sources" }), sourceList(sources));
}

// A finished search as recorded in a trace -> the same shape the stream sends.
function recordToEvent(record) {
  let refined = record.reader ? record.reader.refined : null;
  if (!refined && record.inserted) refined = visibleInserted(record.inserted);
  return {
    query: record.query,
    outcome: record.outcome,
    hits: record.hits || [],
    refined,
    error: record.error,
    latency_s: record.latency_s,
  };
}

function visibleInserted(text) {
  let out = text;
  for (const [begin, end] of BLOCKS) out = out.split(begin).join("").split(end).join("");
  return out.trim();
}

// ---------------------------------------------------------------- serve mode

const live = { controller: null, timer: null };

async function setupServe(mode) {
  $("ask-view").hidden = false;
  $("mode-label").textContent = `model ${mode.model}`;
  for (const t of mode.tasks) $("task").append(el("option", { value: t, text: t }));
  for (const m of mode.methods) $("method").append(el("option", { value: m, text: m }));
  $("task").value = mode.task;
  $("method").value = "search-o1";
  if (mode.auth) {
    $("key-label").hidden = false;
    $("api-key").value = localStorage.getItem("search-o1-key") || "";
    $("api-key").addEventListener("change", () => localStorage.setItem("search-o1-key", $("api-key").value));
  }
  $("ask-form").addEventListener("submit", (e) => { e.preventDefault(); ask(mode); });
  $("question").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); ask(mode); }
  });
  $("stop-button").addEventListener("click", () => live.controller && live.controller.abort());
  checkHealth();
  $("question").focus();
}

async function checkHealth() {
  const box = $("health");
  box.hidden = false;
  try {
    const r = await fetch("/health");
    const body = await r.json();
    box.className = `health ${r.ok ? "ok" : "down"}`;
    $("health-text").textContent = r.ok ? "ready" : "unavailable";
    box.title = JSON.stringify(body, null, 1);
  } catch (e) {
    box.className = "health down";
    $("health-text").textContent = "unreachable";
  }
}

function requestBody(mode, question) {
  const body = {
    model: mode.model,
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: "user", content: question }],
    task: $("task").value,
    method: $("method").value,
  };
  const temperature = $("temperature").value;
  const maxTokens = $("max-tokens").value;
  if (temperature !== "") body.temperature = Number(temperature);
  if (maxTokens !== "") body.max_tokens = Number(maxTokens);
  return body;
}

function resetRun() {
  $("run").hidden = false;
  $("timeline").replaceChildren();
  $("answer").hidden = true;
  $("answer-text").textContent = "";
  showSources($("sources"), []);
  $("error").hidden = true;
  $("stats").replaceChildren();
}

async function ask(mode) {
  const question = $("question").value.trim();
  if (!question || live.controller) return;
  resetRun();
  const state = { thought: null, raw: "", cards: [], answer: "", searches: 0, start: performance.now(), first: null, done: null, usage: null };
  live.controller = new AbortController();
  $("ask-button").disabled = true;
  $("stop-button").hidden = false;
  live.timer = setInterval(() => renderStats(state), 200);
  const headers = { "Content-Type": "application/json" };
  if (mode.auth) headers.Authorization = `Bearer ${$("api-key").value}`;
  try {
    const response = await fetch("/v1/chat/completions", {
      method: "POST", headers, body: JSON.stringify(requestBody(mode, question)), signal: live.controller.signal,
    });
    if (!response.ok) {
      const body = await response.json().catch(() => null);
      showError(body && body.error ? body.error.message : `HTTP ${response.status}`);
      return;
    }
    await readStream(response, (data) => onChunk(state, data));
  } catch (e) {
    showError(e.name === "AbortError" ? "Stopped." : `Connection failed: ${e.message}`);
  } finally {
    clearInterval(live.timer);
    live.controller = null;
    $("ask-button").disabled = false;
    $("stop-button").hidden = true;
    for (const card of state.cards) card.querySelector(".pending")?.remove();
    renderStats(state);
  }
}

async function readStream(response, onData) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = event.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
      if (data && data !== "[DONE]") onData(JSON.parse(data));
    }
  }
}

function onChunk(state, chunk) {
  if (chunk.error) { showError(chunk.error.message); return; }
  const ext = chunk.search_o1;
  if (ext) onExtension(state, ext);
  const delta = chunk.choices && chunk.choices[0] ? chunk.choices[0].delta || {} : {};
  if (delta.reasoning_content) {
    if (state.first === null) state.first = (performance.now() - state.start) / 1000;
    if (!state.thought) {
      state.thought = el("div", { class: "thought" });
      state.raw = "";
      $("timeline").append(state.thought);
    }
    state.raw += delta.reasoning_content;
    state.thought.textContent = visibleReasoning(state.raw);
  }
  if (delta.content) {
    state.answer += delta.content;
    $("answer").hidden = false;
    $("answer-text").textContent = state.answer;
  }
  if (chunk.usage) state.usage = chunk.usage;
}

function onExtension(state, ext) {
  if (ext.type === "search_started") {
    state.thought = null; // later reasoning starts a new block below the card
    const card = searchCard(ext.query);
    state.cards.push(card);
    $("timeline").append(card);
  } else if (ext.type === "search") {
    state.searches += 1;
    const card = [...state.cards].reverse().find((c) => c.querySelector(".pending") && c.dataset.query === ext.query);
    if (card) fillSearchCard(card, ext);
    else $("timeline").append(fillSearchCard(searchCard(ext.query), ext));
  } else if (ext.type === "done") {
    state.done = ext;
    showSources($("sources"), ext.sources);
  }
}

function renderStats(state) {
  const elapsed = (performance.now() - state.start) / 1000;
  const items = [stat("time", fmtSeconds(state.done ? state.done.latency_s + state.done.queued_s : elapsed))];
  if (state.first !== null) items.push(stat("first token", fmtSeconds(state.first)));
  items.push(stat("searches", state.searches));
  if (state.done) {
    const u = state.done.usage;
    items.push(stat("generated", `${u.completion_tokens} tok`));
    items.push(stat("prompt", `${u.prompt_tokens} tok`));
    items.push(stat("reader", `${u.reader_prompt_tokens}→${u.reader_completion_tokens} tok`));
    if (state.done.queued_s > 0.05) items.push(stat("queued", fmtSeconds(state.done.queued_s)));
    items.push(stat("finish", state.done.finish_reason));
  }
  $("stats").replaceChildren(...items);
}

function showError(message) {
  $("error").hidden = false;
  $("error").textContent = message;
}

// ---------------------------------------------------------------- view mode

const view = { items: [], primary: null, selected: null };

async function setupView(mode) {
  $("view-view").hidden = false;
  $("mode-label").textContent = `run ${mode.run}`;
  const run = await (await fetch("/api/run")).json();
  view.items = run.items;
  view.primary = run.primary || guessPrimary(run.items);
  renderRunSummary(run);
  const reasons = [...new Set(run.items.map((i) => i.finish_reason).filter(Boolean))].sort();
  for (const r of reasons) $("filter-finish").append(el("option", { value: r, text: r }));
  for (const id of ["filter-text", "filter-finish", "filter-score"]) $(id).addEventListener("input", renderItems);
  renderItems();
  const wanted = /^#item=(\d+)$/.exec(location.hash);
  if (wanted) openItem(Number(wanted[1]));
}

function guessPrimary(items) {
  const keys = items.length ? Object.keys(items[0].metrics || {}) : [];
  return ["em", "acc", "accuracy", "pass@1", "f1"].find((k) => keys.includes(k)) || keys[0] || null;
}

function scoreOf(item) {
  const v = item.metrics ? item.metrics[view.primary] : undefined;
  return typeof v === "number" ? v : null;
}

function scoreClass(v) {
  if (v === null) return "";
  return v >= 1 ? "right" : v > 0 ? "partial" : "wrong";
}

function renderRunSummary(run) {
  const box = $("run-summary");
  box.replaceChildren(el("div", { class: "run-title", text: run.name }));
  const row = el("div", { class: "metric-row" });
  const m = run.metrics || {};
  if (m.overall) {
    for (const [k, v] of Object.entries(m.overall)) row.append(stat(k, typeof v === "number" ? `${(v * 100).toFixed(1)}%` : v));
  }
  row.append(stat("items", m.n !== undefined ? `${m.n}${m.items ? " / " + m.items : ""}` : run.items.length));
  const settings = run.config && run.config.run ? run.config.run : {};
  if (settings.method) row.append(stat("method", settings.method));
  if (settings.dataset) row.append(stat("dataset", settings.dataset));
  box.append(row);
}

function renderItems() {
  const text = $("filter-text").value.trim().toLowerCase();
  const finish = $("filter-finish").value;
  const score = $("filter-score").value;
  const shown = view.items.filter((item) => {
    if (finish && item.finish_reason !== finish) return false;
    if (score && scoreClass(scoreOf(item)) !== score) return false;
    if (!text) return true;
    const hay = [item.id, item.question, item.prediction, JSON.stringify(item.gold)].join(" ").toLowerCase();
    return hay.includes(text);
  });
  $("item-count").textContent = `${shown.length} of ${view.items.length} items`;
  $("items").replaceChildren(...shown.map(itemRow));
}

function itemRow(item) {
  const v = scoreOf(item);
  const li = el("li", { class: `item${view.selected === item.index ? " selected" : ""}`, "data-index": String(item.index) },
    el("span", { class: `score ${scoreClass(v)}`, text: v === null ? "–" : formatScore(v) }),
    el("div", { class: "item-q", text: item.question || "(no question)" }),
    el("div", { class: "item-meta" },
      el("span", { text: String(item.id) }),
      el("span", { text: item.finish_reason || "?" }),
      el("span", { text: `${item.n_searches ?? item.searches ?? 0} searches` }),
      el("span", { text: fmtSeconds(item.latency_s) })));
  li.addEventListener("click", () => openItem(item.index));
  return li;
}

function formatScore(v) {
  return Number.isInteger(v) ? (v ? "✓" : "✗") : v.toFixed(2);
}

async function openItem(index) {
  view.selected = index;
  history.replaceState(null, "", `#item=${index}`);
  for (const li of document.querySelectorAll(".item")) li.classList.toggle("selected", Number(li.dataset.index) === index);
  const response = await fetch(`/api/run/items/${index}`);
  if (!response.ok) { $("item-detail").replaceChildren(el("p", { class: "placeholder", text: "No such item." })); return; }
  renderDetail(await response.json());
}

function renderDetail(record) {
  const trace = record.trace || {};
  const tokens = record.tokens || {};
  const kv = el("dl", { class: "kv" });
  const add = (k, v) => kv.append(el("dt", { text: k }), el("dd", { text: v }));
  add("Gold", Array.isArray(record.gold) ? record.gold.join(" | ") : String(record.gold ?? "–"));
  add("Prediction", record.prediction ?? "(none)");
  add("Scores", Object.entries(record.metrics || {}).map(([k, v]) => `${k} ${typeof v === "number" ? v.toFixed(2) : v}`).join(" · ") || "–");
  add("Finish", record.finish_reason || "?");
  add("Tokens", Object.entries(tokens).map(([k, v]) => `${k} ${v}`).join(" · ") || "–");
  add("Latency", fmtSeconds(record.latency_s ?? trace.latency_s));
  if (trace.error) add("Error", trace.error);
  const timeline = el("div", { class: "timeline" });
  for (const step of trace.steps || []) {
    const text = visibleReasoning(step.text || "");
    if (text) timeline.append(el("div", { class: "thought", text }));
    if (step.search) timeline.append(fillSearchCard(searchCard(step.search.query), recordToEvent(step.search)));
  }
  const sources = el("div", { class: "answer-sources" });
  showSources(sources, record.sources);
  const answer = el("div", { class: "answer" },
    el("div", { class: "answer-label", text: "Answer" }),
    el("div", { class: "answer-text", text: record.prediction ?? "(none)" }),
    sources);
  const raw = el("details", {}, el("summary", { text: "The raw chain" }), el("pre", { class: "raw", text: trace.output || "" }));
  $("item-detail").replaceChildren(
    el("div", { class: "section-title", text: `Item ${record.id}` }),
    el("div", { class: "detail-q", text: record.question || "" }),
    kv,
    el("div", { class: "section-title", text: "Trace" }),
    timeline,
    answer,
    el("div", { class: "section-title", text: "Raw" }),
    raw,
  );
  $("item-detail").scrollTop = 0;
}

// ---------------------------------------------------------------- start

(async function main() {
  const mode = await (await fetch("/api/mode")).json();
  if (mode.mode === "view") await setupView(mode);
  else await setupServe(mode);
  document.body.dataset.ready = mode.mode; // tests wait for this
})();
