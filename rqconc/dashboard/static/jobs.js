// The queue page (/queues/NAME?status=S&func=F&offset=N, SPEC 17): a queue's jobs by status,
// 50 a page, a filter by function, a box that opens a job by id, actions on the selected
// jobs and on the queue. Loaded before app.js, whose helpers (el, fill, table, action,
// getJSON...) it calls once the page runs. The forms are built once and kept: the page's
// refresh redraws only the counts and the list, never what the operator is typing.
"use strict";

const JOB_STATUSES = ["queued", "started", "scheduled", "deferred", "finished", "failed"];
const queueView = { built: null, selected: new Set(), head: null, list: null };

function queueParams() {
  const params = new URLSearchParams(location.search);
  const status = JOB_STATUSES.includes(params.get("status")) ? params.get("status") : "queued";
  return { status, func: params.get("func") || "", offset: Number(params.get("offset") || 0) };
}

function queueName() {
  return decodeURIComponent(location.pathname.slice("/queues/".length));
}

function queueHref(status, func, offset) {
  const params = new URLSearchParams({ status });
  if (func) params.set("func", func);
  if (offset) params.set("offset", String(offset));
  return `/queues/${encodeURIComponent(queueName())}?${params}`;
}

function openByIdForm() {
  const input = el("input", { id: "open-id", placeholder: "job id", size: 36, "aria-label": "job id" });
  return el("form", { id: "open-job", onsubmit: (event) => {
    event.preventDefault();
    const id = input.value.trim();
    if (id) location.href = "/jobs/" + encodeURIComponent(id);
  } }, input, el("button", { type: "submit", text: "Open" }));
}

function filterForm(params) {
  const input = el("input", { id: "func", name: "func", placeholder: "function name contains…", value: params.func, size: 30, "aria-label": "function" });
  return el("form", { id: "filter", onsubmit: (event) => {
    event.preventDefault();
    location.href = queueHref(params.status, input.value.trim(), 0);
  } }, input, el("button", { type: "submit", text: "Filter" }),
  params.func ? el("a", { href: queueHref(params.status, "", 0), text: "clear filter" }) : null);
}

function limitsForm(base) {
  const field = (name, label, type) => el("label", {}, label + " ",
    el("input", { id: "limit-" + name, name, type, size: 6, min: type === "number" ? 1 : null }));
  const form = el("form", { id: "limits-form", onsubmit: (event) => {
    event.preventDefault();
    const body = {};
    for (const name of ["concurrency", "group_concurrency"]) {
      const value = form.elements[name].value;
      if (value) body[name] = Number(value);
    }
    for (const name of ["rate", "group_rate"]) {
      if (form.elements[name].value) body[name] = form.elements[name].value.trim();
    }
    action(base + "/limits", body, "Replace this queue's limits with these?")(event);
  } },
  field("concurrency", "concurrency", "number"), field("rate", "rate", "text"),
  field("group_concurrency", "per group", "number"), field("group_rate", "group rate", "text"),
  el("button", { type: "submit", id: "set-limits", text: "Set limits" }),
  el("button", { type: "button", id: "clear-limits", onclick: action(base + "/limits", { clear: true }, "Remove every limit of this queue?"), text: "Clear limits" }));
  return form;
}

function buildQueuePage(main, name, params) {
  const base = `/api/queues/${encodeURIComponent(name)}`;
  queueView.head = el("div", { id: "queue-head" });
  queueView.list = el("div", { id: "queue-jobs" });
  queueView.functions = el("div", { id: "queue-functions" });
  fill(main,
    el("h1", {}, "Queue ", el("span", { class: "mono", text: name })),
    queueView.head,
    el("div", { class: "toolbar" }, openByIdForm(), filterForm(params)),
    queueView.list,
    el("h2", { text: "Functions" }), queueView.functions,
    el("h2", { text: "Limits" }), limitsForm(base),
    el("h2", { text: "The whole queue" }),
    el("div", { class: "toolbar" },
      el("button", { class: "danger", id: "empty-queue", onclick: action(base + "/empty", {}, `Delete every waiting job of ${name}?`), text: "Empty queue" }),
      el("button", { class: "danger", id: "delete-queue", onclick: action(base + "/delete", {}, `Delete queue ${name} and every job of it that is not running?`), text: "Delete queue" })));
  queueView.built = location.href;
}

function queueHead(row, name, params) {
  const base = `/api/queues/${encodeURIComponent(name)}`;
  const tabs = JOB_STATUSES.map((s) => el("a", {
    href: queueHref(s, params.func, 0), class: s === params.status ? "tab active" : "tab", "data-status": s,
  }, s + " ", el("span", { class: "muted", text: row ? row[s] : 0 })));
  const paused = Boolean(row && row.paused);
  return [el("div", { class: "toolbar" },
    paused ? badge("paused") : null,
    paused
      ? el("button", { id: "resume-queue", onclick: action(base + "/resume"), text: "Resume queue" })
      : el("button", { id: "pause-queue", onclick: action(base + "/pause", {}, `Stop workers taking jobs of ${name}?`), text: "Pause queue" }),
    row && row.limits ? el("span", { class: "muted limits", id: "queue-limits", text: limitsText(row.limits) }) : null),
  el("nav", { class: "tabs" }, tabs)];
}

// The buttons for the selected jobs that make sense for this status.
function selectionButtons(name, status) {
  const ids = () => Array.from(queueView.selected);
  const act = (verb, extra, question) => action(`/api/selected/${verb}`, () => Object.assign({ ids: ids() }, extra), question);
  const after = (handler) => async (event) => { if (await handler(event)) queueView.selected.clear(); };
  const buttons = [];
  if (status === "failed") buttons.push(el("button", { id: "requeue-selected", onclick: after(act("requeue", { queue: name })), text: "Requeue selected" }));
  if (status === "scheduled" || status === "deferred") buttons.push(el("button", { id: "promote-selected", onclick: after(act("promote", { queue: name })), text: "Run selected now" }));
  if (["queued", "scheduled", "deferred", "started"].includes(status)) buttons.push(el("button", { class: "danger", id: "cancel-selected", onclick: after(act("cancel", {}, "Cancel the selected jobs?")), text: "Cancel selected" }));
  if (status !== "started") buttons.push(el("button", { class: "danger", id: "delete-selected", onclick: after(act("delete", {}, "Delete the selected jobs?")), text: "Delete selected" }));
  return buttons;
}

function jobRow(j) {
  const box = el("input", { type: "checkbox", class: "select", "aria-label": "select " + j.id, checked: queueView.selected.has(j.id) ? "checked" : null,
    onchange: (event) => { if (event.target.checked) queueView.selected.add(j.id); else queueView.selected.delete(j.id); } });
  return el("tr", { "data-job-id": j.id }, el("td", {}, box), el("td", {}, jobLink(j.id)),
    el("td", {}, el("code", { text: j.function || "" })), el("td", {}, badge(j.status || "?")),
    el("td", { class: "num", text: j.attempts }),
    el("td", {}, j.exc_type ? el("strong", { text: j.exc_type }) : null, j.exc_type ? ": " + (j.exc_message || "") : ""));
}

function searchNote(data) {
  if (!data.func) return null;
  const last = data.offset + data.scanned;
  return el("p", { class: "muted note", id: "search-note", text: `Function containing “${data.func}”: searched jobs ${data.offset + 1}–${last} of ${data.total} (at most 2,000 a page, the store keeps no index by function), ${data.jobs.length} found.` });
}

function queueList(data, name) {
  const shown = data.jobs.map((j) => j.id);
  for (const id of queueView.selected) if (!shown.includes(id)) queueView.selected.delete(id);
  const newer = data.offset > 0 && !data.func ? el("a", { href: queueHref(data.status, data.func, Math.max(0, data.offset - 50)), id: "newer", text: "← previous" }) : null;
  const older = data.next_offset !== null ? el("a", { href: queueHref(data.status, data.func, data.next_offset), id: "older", text: data.func ? "search on →" : "next →" }) : null;
  const empty = data.func ? "No job of this status matches in the part searched." : `No ${data.status} job in this queue.`;
  return [
    el("div", { class: "toolbar" }, el("span", { class: "muted", id: "jobs-total", text: `${data.total} ${data.status}` }), selectionButtons(name, data.status)),
    searchNote(data),
    data.jobs.length ? table(["", "job", "function", "status", { label: "attempts", num: true }, "error"], data.jobs.map(jobRow), { id: "jobs" })
      : el("p", { class: "muted", id: "no-jobs", text: empty }),
    el("div", { class: "pager" }, newer, " ", older)];
}

// Finished, failed and run times per function since the namespace began (at most 100
// functions a queue are named; the rest count as "other").
function functionsTable(data) {
  if (!data.functions.length) return el("p", { class: "muted", text: "No run of this queue has ended yet." });
  const headers = ["function", { label: "finished", num: true }, { label: "failed", num: true },
    { label: "p50 run", num: true }, { label: "p95 run", num: true }];
  return table(headers, data.functions.map((f) => el("tr", { "data-func": f.func },
    el("td", {}, el("code", { text: f.func })), numCell(f.finished, "finished"), numCell(f.failed, "failed"),
    el("td", { class: "num", text: ms(f.run_p50) }), el("td", { class: "num", text: ms(f.run_p95) }))),
    { id: "functions" });
}

async function queuePage(main) {
  const name = queueName();
  const params = queueParams();
  if (queueView.built !== location.href) buildQueuePage(main, name, params);
  const query = new URLSearchParams({ status: params.status, offset: String(params.offset) });
  if (params.func) query.set("func", params.func);
  const [overview, data, functions] = await Promise.all([getJSON("/api/overview"),
    getJSON(`/api/queues/${encodeURIComponent(name)}/jobs?${query}`),
    getJSON(`/api/queues/${encodeURIComponent(name)}/functions`)]);
  renderSuspension(overview.suspended);
  fill(queueView.head, queueHead(overview.queues.find((q) => q.name === name), name, params));
  fill(queueView.list, queueList(data, name));
  fill(queueView.functions, functionsTable(functions));
}
