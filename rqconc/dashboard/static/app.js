// The rqconc dashboard page. Everything shown is built with DOM nodes and textContent: job
// arguments, results and tracebacks are attacker-controlled text and never become markup.
"use strict";

const CSRF = document.querySelector('meta[name="csrf-token"]').content;
const REFRESH_MS = 1000;
const SVG_NS = "http://www.w3.org/2000/svg";
let timer = null;
let inFlight = false;

// ---- small DOM helpers ----
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "text") node.textContent = String(value);
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// replaceChildren without the nulls and nested lists that optional parts leave; nothing is
// replaced when the new children serialize as the ones shown. The pages redraw every
// second: a button swapped for its twin between a click's mouse-down and mouse-up loses the
// click (it goes to what both have in common), and a focused element loses its focus. A kept
// element keeps its twin's listeners: the same page drew both from the same values.
function fill(node, ...children) {
  const fresh = node.cloneNode(false);
  fresh.replaceChildren(...children.flat(2).filter((c) => c !== null && c !== undefined));
  if (fresh.innerHTML !== node.innerHTML) node.replaceChildren(...fresh.childNodes);
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  return node;
}

function jobLink(id) {
  return el("a", { href: "/jobs/" + encodeURIComponent(id), class: "mono", text: id });
}

function badge(state) {
  return el("span", { class: "badge " + String(state).replace(/[^a-z_-]/gi, ""), text: state });
}

function when(seconds) {
  if (!seconds) return "–";
  return new Date(seconds * 1000).toLocaleString();
}

function age(seconds) {
  if (seconds < 1) return "just now";
  if (seconds < 90) return seconds.toFixed(0) + " s ago";
  if (seconds < 5400) return (seconds / 60).toFixed(0) + " min ago";
  return (seconds / 3600).toFixed(1) + " h ago";
}

function ms(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  return seconds < 1 ? (seconds * 1000).toFixed(1) + " ms" : seconds.toFixed(2) + " s";
}

// A fraction (0..1) as a percentage with at most one decimal: 1/3 shows "33.3 %".
function percent(fraction) {
  return Math.round(Number(fraction) * 1000) / 10 + " %";
}

function json(value) {
  return JSON.stringify(value, null, 2);
}

// Short values on one line, long ones indented.
function compact(value) {
  const line = JSON.stringify(value);
  return line.length <= 100 ? line : json(value);
}

function table(headers, rows, attrs) {
  const head = el("tr", {}, headers.map((h) => el("th", { class: h.num ? "num" : null, text: h.label || h })));
  return el("table", attrs || {}, el("thead", {}, head), el("tbody", {}, rows));
}

function numCell(value, name) {
  return el("td", { class: "num" + (value ? "" : " zero"), "data-count": name, text: value });
}

// ---- talking to the server ----
function showError(message) {
  const banner = document.getElementById("banner");
  banner.hidden = !message;
  banner.textContent = message || "";
}

async function getJSON(path) {
  const response = await fetch(path, { headers: { Accept: "application/json" } });
  const body = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) throw Object.assign(new Error(body.error || response.statusText), { status: response.status });
  return body;
}

async function post(path, body) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": CSRF },
    body: JSON.stringify(body || {}),
  });
  const answer = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) throw new Error(answer.error || response.statusText);
  return answer;
}

// `body`: the JSON to post, or a function giving it at the click (the selected jobs). The
// handler resolves to whether the action was confirmed and done.
function action(path, body, confirmText) {
  return async (event) => {
    if (confirmText && !window.confirm(confirmText)) return false;
    const button = event.currentTarget;
    button.disabled = true;
    try {
      const answer = await post(path, typeof body === "function" ? body() : body);
      const refused = Object.entries(answer.refused || {});
      if (refused.length) throw new Error(refused.map(([id, why]) => `${id}: ${why}`).join("; "));
      showError("");
      await refresh();
      return true;
    } catch (error) {
      await refresh();
      showError(error.message);
      return false;
    } finally {
      button.disabled = false;
    }
  };
}

// ---- the header: suspension switch and freshness ----
function renderSuspension(suspended) {
  const box = document.getElementById("suspension");
  fill(box, 
    suspended ? [badge("suspended"), " "] : null,
    suspended
      ? el("button", { id: "resume", onclick: action("/api/resume"), text: "Resume workers" })
      : el("button", { id: "suspend", onclick: action("/api/suspend", {}, "Stop every worker from taking new jobs?"), text: "Suspend workers" })
  );
}

// Pages that do not read the overview themselves still show the suspension switch.
async function header() {
  renderSuspension((await getJSON("/api/overview")).suspended);
}

function stamp() {
  document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
}

// ---- pages ----
function chart(points) {
  const width = 1100, height = 170, pad = 24;
  const box = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "jobs per minute, last hour" });
  const top = Math.max(1, ...points.map((p) => p.finished + p.failed));
  const slot = (width - pad) / Math.max(60, points.length);
  points.forEach((p, i) => {
    const x = pad + i * slot;
    const done = (p.finished / top) * (height - pad);
    const bad = (p.failed / top) * (height - pad);
    const bar = svg("rect", { class: "finished", x, y: height - pad - done - bad, width: Math.max(1, slot - 1), height: done });
    const title = svg("title", {});
    title.textContent = `${new Date(p.minute * 1000).toLocaleTimeString()}: ${p.finished} finished, ${p.failed} failed`;
    bar.append(title);
    box.append(bar, svg("rect", { class: "failed", x, y: height - pad - bad, width: Math.max(1, slot - 1), height: bad }));
  });
  box.append(svg("line", { class: "axis", x1: pad, y1: height - pad, x2: width, y2: height - pad }));
  const label = (x, text, anchor) => {
    const t = svg("text", { x, y: height - 6, "text-anchor": anchor || "start" });
    t.textContent = text;
    return t;
  };
  const topLabel = svg("text", { x: 0, y: 10 });
  topLabel.textContent = String(top);
  box.append(label(pad, "60 min ago"), label(width, "now", "end"), topLabel);
  return box;
}

function legend() {
  return el("div", { class: "legend" },
    el("span", {}, el("i", { class: "swatch-finished" }), "finished per minute"),
    el("span", {}, el("i", { class: "swatch-failed" }), "failed per minute"));
}

async function queuesPage(main) {
  const data = await getJSON("/api/overview");
  renderSuspension(data.suspended);
  const counts = ["queued", "started", "scheduled", "deferred", "failed", "finished"];
  const headers = ["queue", ...counts.map((c) => ({ label: c, num: true })),
    { label: "finished/min", num: true }, { label: "failed/min", num: true },
    { label: "p50 run", num: true }, { label: "p95 run", num: true }];
  const rows = data.queues.map((q) => el("tr", { "data-queue": q.name, "data-paused": q.paused ? "true" : null },
    el("td", {}, el("a", { href: "/queues/" + encodeURIComponent(q.name), class: "queue-link" }, el("strong", { text: q.name })), q.paused ? [" ", badge("paused")] : null,
      q.limits ? el("div", { class: "muted limits", text: limitsText(q.limits) }) : null),
    counts.map((c) => q[c]
      ? el("td", { class: "num", "data-count": c }, el("a", { href: `/queues/${encodeURIComponent(q.name)}?status=${c}`, text: q[c] }))
      : numCell(q[c], c)),
    numCell(q.finished_last_minute ?? 0, "finished_last_minute"),
    numCell(q.failed_last_minute ?? 0, "failed_last_minute"),
    el("td", { class: "num", text: ms(q.run_p50) }),
    el("td", { class: "num", text: ms(q.run_p95) })));
  fill(main, 
    el("h1", { text: "Queues" }),
    el("p", { class: "muted", text: `${data.workers} live worker${data.workers === 1 ? "" : "s"} · finished/min, failed/min and run times: the last 60 s` }),
    data.queues.some((q) => q.paused) ? el("p", { class: "muted", id: "paused-note", text: "A paused queue keeps its jobs: no worker takes them until it is resumed (rqconc resume QUEUE)." }) : null,
    data.queues.length ? table(headers, rows, { id: "queues" }) : el("p", { class: "muted", text: "No queue has received a job yet." }),
    el("h2", { text: "Last hour, every queue" }),
    el("div", { class: "panel chart" }, chart(data.timeline || []), legend()));
}

// A queue's caps in a few words: "concurrency 2 · rate 10/s · per group: concurrency 1".
function limitsText(limits) {
  const own = ["concurrency", "rate"].filter((k) => k in limits).map((k) => `${k} ${limits[k]}`);
  const group = ["concurrency", "rate"].filter((k) => "group_" + k in limits).map((k) => `${k} ${limits["group_" + k]}`);
  return own.concat(group.length ? ["per group: " + group.join(", ")] : []).join(" · ");
}

function workerCard(w) {
  const children = w.children.map((child, i) => el("div", { class: "child", "data-state": child.state },
    el("span", { class: "dot" }), el("span", { class: "muted", text: `#${i + 1}` }), badge(child.state),
    child.job_id ? jobLink(child.job_id) : null));
  return el("div", { class: "panel worker", "data-worker": w.name },
    el("h3", { text: w.name }),
    el("div", {}, badge(w.state), " ", el("span", { class: "muted", text: `${w.backend} × ${w.size} · ${w.host} pid ${w.pid}` })),
    el("div", { class: "muted" }, "queues ", el("span", { class: "mono", text: w.queues.join(", ") }),
      " · heartbeat ", el("span", { class: "heartbeat", text: age(w.heartbeat_age) })),
    el("div", { class: "muted totals" }, "since start ",
      el("span", { "data-total": "finished", text: w.totals.finished }), " finished · ",
      el("span", { "data-total": "failed", text: w.totals.failed }), " failed · busy ",
      el("span", { "data-total": "busy_seconds", text: `${w.totals.busy_seconds.toFixed(1)} s` })),
    el("div", { class: "children" }, children));
}

async function workersPage(main) {
  const [data] = await Promise.all([getJSON("/api/workers"), header()]);
  fill(main, 
    el("h1", { text: "Workers" }),
    data.workers.length
      ? el("div", { class: "workers" }, data.workers.map(workerCard))
      : el("p", { class: "muted", text: "No live worker." }));
}

function fact(name, value) {
  return [el("dt", { text: name }), el("dd", {}, value === null || value === undefined ? "–" : value)];
}

function bar(fraction) {
  const fill = el("span", { "data-fraction": fraction });
  fill.style.width = Math.max(0, Math.min(1, Number(fraction) || 0)) * 100 + "%";  // CSSOM: allowed by the CSP
  return fill;
}

function jobFacts(job) {
  const progress = job.progress
    ? el("span", {}, el("span", { class: "progress-bar" }, bar(job.progress.fraction)),
        el("span", { id: "job-progress", text: percent(job.progress.fraction) }), job.progress.message ? " · " + job.progress.message : "")
    : null;
  return el("dl", { class: "facts" },
    fact("status", badge(job.status)), fact("function", el("code", { text: job.function })),
    fact("queue", job.queue), fact("priority", job.priority), fact("attempts", job.attempts),
    fact("worker", job.worker), fact("progress", progress),
    fact("enqueued", when(job.enqueued_at)), fact("started", when(job.started_at)),
    fact("ended", when(job.ended_at)),
    fact("dead letter", job.dead_letter_of ? el("a", { href: `/failed?queue=${encodeURIComponent(job.dead_letter_of)}#${encodeURIComponent(job.id)}`, text: "in the failed jobs of " + job.dead_letter_of }) : null));
}

function jobOutcome(job) {
  const parts = [];
  if (job.pickled) parts.push(el("p", { class: "muted", text: "Arguments are pickled: not shown (unpickling runs code)." }));
  else parts.push(el("h2", { text: "Arguments" }), el("pre", { id: "job-args", text: compact({ args: job.args, kwargs: job.kwargs }) }));
  if ("result" in job) parts.push(el("h2", { text: "Result" }), el("pre", { id: "job-result", text: job.result_pickled ? "(pickled)" : compact(job.result) }));
  if (job.error) parts.push(el("h2", { text: "Error" }), el("p", {}, el("strong", { text: job.error.type }), ": ", job.error.message), el("pre", { id: "job-traceback", text: job.error.traceback }));
  if (job.logs && job.logs.length) parts.push(el("h2", { text: "Logs" }), el("pre", { id: "job-logs", text: job.logs.join("\n") }));
  if (Object.keys(job.meta || {}).length) parts.push(el("h2", { text: "Meta" }), el("pre", { text: json(job.meta) }));
  return parts;
}

function eventRow(e, fresh) {
  const detail = Object.entries(e).filter(([k]) => !["event", "job_id", "queue", "ts", "worker", "id"].includes(k))
    .map(([k, v]) => `${k}=${k === "progress" && e.event === "progress" ? percent(v) : v}`).join(" ");
  return el("tr", { class: fresh ? "new" : null, "data-job-id": e.job_id, "data-event": e.event },
    el("td", { class: "muted", text: new Date(e.ts).toLocaleTimeString() }), el("td", {}, badge(e.event)),
    el("td", {}, e.job_id ? jobLink(e.job_id) : "–"), el("td", { text: e.queue || "" }),
    el("td", { class: "mono", text: e.worker || "" }), el("td", { class: "mono muted", text: detail }));
}

const EVENT_HEADERS = ["time", "event", "job", "queue", "worker", "detail"];

// The job's events, and what the bounded read of the stream could not show.
function jobEvents(job) {
  const notes = [];
  if (job.events_trimmed) notes.push("Older events of this job were trimmed from the event stream (it keeps about the latest 10,000 of the namespace).");
  if (job.events_partial) notes.push("Only the job's first events are shown: the stream is read a bounded number of entries per view.");
  return [el("h2", { text: "Events" }), notes.map((text) => el("p", { class: "muted note", text })),
    table(EVENT_HEADERS, job.events.map((e) => eventRow(e, false)), { id: "job-events" })];
}

// A 404 is final (the id is wrong, or the job is gone for good): say so, and stop polling.
function noSuchJob(main, id) {
  window.clearInterval(timer);
  fill(main, el("h1", {}, "Job ", el("span", { class: "mono", text: id })),
    el("p", { id: "no-such-job", text: "No such job: it never existed, or it expired (its result_ttl or failure_ttl ran out) or was deleted." }));
}

async function jobPage(main) {
  const id = decodeURIComponent(location.pathname.slice("/jobs/".length));
  const [job] = await Promise.all([getJSON("/api/jobs/" + encodeURIComponent(id)).catch((error) => {
    if (error.status === 404) return null;
    throw error;
  }), header()]);
  if (job === null) return noSuchJob(main, id);
  const cancelable = ["queued", "scheduled", "deferred", "started"].includes(job.status);
  const flow = job.flow.length
    ? [el("h2", { text: "Flow" }), el("ol", { id: "flow" }, job.flow.map((s) => el("li", {}, s.id === job.id ? el("strong", { class: "mono", text: s.id }) : jobLink(s.id), " ", el("code", { text: s.function }), " ", badge(s.status))))]
    : [];
  fill(main, 
    el("h1", {}, "Job ", el("span", { class: "mono", text: job.id })),
    el("div", { class: "toolbar" }, cancelable ? el("button", { class: "danger", id: "cancel", onclick: action(`/api/jobs/${encodeURIComponent(job.id)}/cancel`, {}, "Cancel this job?"), text: "Cancel" }) : null),
    el("div", { class: "panel" }, jobFacts(job)), jobOutcome(job), flow, jobEvents(job));
}

// `every`: the label of a first option for every queue at once (value ""); `counts`: a
// number to show after each queue's name.
async function queueChooser(current, every = null, counts = {}) {
  const data = await getJSON("/api/overview");
  renderSuspension(data.suspended);
  const names = data.queues.map((q) => q.name);
  if (current && !names.includes(current)) names.push(current);
  const options = (every === null ? [] : [["", every]]).concat(
    names.map((n) => [n, counts[n] ? `${n} (${counts[n]})` : n]));
  const select = el("select", { id: "queue", onchange: (e) => { location.search = e.target.value ? "?queue=" + encodeURIComponent(e.target.value) : ""; } },
    options.map(([value, label]) => el("option", { value, selected: value === current ? "selected" : null, text: label })));
  return el("label", {}, "queue ", select);
}

function currentQueue(fallback = "default") {
  return new URLSearchParams(location.search).get("queue") || fallback;
}

function failedRow(j) {
  return el("tr", { id: j.id, "data-job-id": j.id, "data-queue": j.queue },
    el("td", {}, jobLink(j.id)), el("td", {}, el("a", { href: "/failed?queue=" + encodeURIComponent(j.queue), text: j.queue })),
    el("td", {}, el("code", { text: j.function })), el("td", { class: "num", text: j.attempts }),
    el("td", {}, el("strong", { text: j.exc_type || "" }), ": ", j.exc_message || "",
      el("details", {}, el("summary", { text: "traceback" }), el("pre", { class: "traceback", text: j.traceback }))),
    el("td", {}, el("button", { class: "requeue", onclick: action("/api/failed/requeue", { queue: j.queue, job_id: j.id }), text: "Requeue" })));
}

// Without ?queue= the page shows every queue's dead letters, latest first: an operator
// whose failures are in another queue than "default" sees them at the first click.
async function failedPage(main) {
  const queue = currentQueue("");
  const offset = Number(new URLSearchParams(location.search).get("offset") || 0);
  const data = await getJSON(`/api/failed?queue=${encodeURIComponent(queue)}&offset=${offset}`);
  const chooser = await queueChooser(queue, "every queue", data.queues);
  const more = data.total > offset + data.jobs.length
    ? el("a", { href: `/failed?queue=${encodeURIComponent(queue)}&offset=${offset + data.jobs.length}`, text: "older →" }) : null;
  // Requeue all and Purge act on one queue: chosen first, never every queue in one click.
  const bulk = queue ? [
    el("button", { id: "requeue-all", onclick: action("/api/failed/requeue", { queue, all: true }, `Requeue every dead letter of ${queue}?`), disabled: !data.total, text: "Requeue all" }),
    el("button", { class: "danger", id: "purge", onclick: action("/api/failed/purge", { queue }, `Delete every dead letter of ${queue}?`), disabled: !data.total, text: "Purge" })] : [];
  fill(main, 
    el("h1", { text: "Failed jobs" }),
    el("div", { class: "toolbar" }, chooser, el("span", { class: "muted", id: "failed-total", text: `${data.total} dead letters` }), bulk),
    data.jobs.length ? table(["job", "queue", "function", { label: "attempts", num: true }, "error", ""], data.jobs.map(failedRow), { id: "failed" })
      : el("p", { class: "muted", text: queue ? "No dead letters in this queue." : "No dead letters in any queue." }), more);
}

async function scheduledPage(main) {
  const queue = currentQueue();
  const [chooser, data] = await Promise.all([queueChooser(queue),
    getJSON(`/api/scheduled?queue=${encodeURIComponent(queue)}`)]);
  const rows = data.jobs.map((j) => el("tr", { "data-job-id": j.id }, el("td", {}, jobLink(j.id)),
    el("td", {}, el("code", { text: j.function })), el("td", { text: when(j.due) }), el("td", { class: "num", text: j.attempts })));
  const crons = data.crons.map((c) => el("tr", { "data-cron": c.id }, el("td", { class: "mono", text: c.id }),
    el("td", { class: "mono", text: c.expr }), el("td", { class: "mono", text: c.description || c.func }),
    el("td", { text: c.queue }), el("td", { text: when(c.next_run) }), el("td", { text: when(c.last_tick) })));
  fill(main, 
    el("h1", { text: "Scheduled jobs" }),
    el("div", { class: "toolbar" }, chooser, el("span", { class: "muted", text: `${data.total} scheduled` })),
    data.jobs.length ? table(["job", "function", "due", { label: "attempts", num: true }], rows, { id: "scheduled" })
      : el("p", { class: "muted", text: "Nothing scheduled in this queue." }),
    el("h2", { text: "Cron entries" }),
    data.crons.length ? table(["id", "schedule", "call", "queue", "next run", "last tick"], crons, { id: "crons" })
      : el("p", { class: "muted", text: "No cron entry." }));
}

// The live feed keeps its rows and asks only for events after the last one it has.
const feed = { last: "", body: null };

async function eventsPage(main) {
  if (!feed.body) {
    feed.body = el("tbody", {});
    const head = el("thead", {}, el("tr", {}, EVENT_HEADERS.map((h) => el("th", { text: h }))));
    fill(main, el("h1", { text: "Live events" }),
      el("p", { class: "muted", text: "Newest first; new events appear as they happen." }),
      el("table", { id: "feed", class: "feed" }, head, feed.body));
  }
  const [data] = await Promise.all([
    getJSON("/api/events" + (feed.last ? "?after=" + encodeURIComponent(feed.last) : "")), header()]);
  const fresh = Boolean(feed.last);
  for (const e of data.events) feed.body.prepend(eventRow(e, fresh));
  while (feed.body.children.length > 500) feed.body.lastChild.remove();
  feed.last = data.last;
}

const PAGES = [
  [/^\/$/, "queues", queuesPage],
  [/^\/workers$/, "workers", workersPage],
  [/^\/jobs\/.+/, null, jobPage],
  [/^\/queues\/[^/]+$/, "queues", queuePage],
  [/^\/failed$/, "failed", failedPage],
  [/^\/scheduled$/, "scheduled", scheduledPage],
  [/^\/events$/, "events", eventsPage],
];

function currentPage() {
  return PAGES.find(([pattern]) => pattern.test(location.pathname));
}

async function refresh() {
  if (inFlight) return;
  inFlight = true;
  try {
    const [, , render] = currentPage();
    await render(document.getElementById("page"));
    showError("");
    stamp();
  } catch (error) {
    showError(error.message);
  } finally {
    inFlight = false;
  }
}

function paused() {
  // An open traceback or a text selection must not vanish under the reader's eyes.
  return document.querySelector("details[open]") || String(window.getSelection()).length > 0
    || (document.activeElement && ["SELECT", "INPUT"].includes(document.activeElement.tagName));
}

function start() {
  const [, nav] = currentPage() || [];
  if (nav) document.querySelector(`[data-nav="${nav}"]`).classList.add("active");
  if (!currentPage()) return;
  refresh();
  timer = window.setInterval(() => { if (!paused()) refresh(); }, REFRESH_MS);
}

document.addEventListener("DOMContentLoaded", start);
