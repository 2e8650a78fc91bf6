// The Mars dashboard: polls the REST API once a second and renders tasks, the cluster and the
// selected task's latest results. No build step, no dependencies; every value from the API is
// set as text (never as HTML). Mutating calls send the token from the header field (kept in
// this browser's localStorage), exactly as any API client does.
"use strict";

const POLL_MS = 1000;
const RESULTS_SHOWN = 20;
const state = { selected: null, tasks: new Map() };

// -- small helpers ---------------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child ?? "")));
  }
  return node;
}

const number = (n) => (n == null ? "–" : Math.round(n).toLocaleString("en-US"));

// A duration, never negative: a lag below zero (event time ahead of the wall clock, as in the
// demo's x10 time) reads "ahead by 45.0 min".
function duration(ms) {
  if (ms == null) return "–";
  const s = Math.abs(ms) / 1000;
  const text = s < 10 ? `${s.toFixed(1)} s`
    : s < 600 ? `${Math.round(s)} s`
    : `${(s / 60).toFixed(1)} min`;
  return ms < 0 && text !== "0.0 s" ? `ahead by ${text}` : text;
}

const cpu = (share) => (share == null ? "–" : `${Math.round(share * 100)} %`);

function bytes(n) {
  if (n == null) return "–";
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

async function api(path, options = {}) {
  const response = await fetch(path, options);
  const body = response.status === 204 ? null : await response.json();
  if (!response.ok) {
    const error = new Error(body?.error?.message ?? `HTTP ${response.status}`);
    error.detail = body?.error ?? {};
    throw error;
  }
  return body;
}

function mutate(path, method, payload) {
  const headers = { Authorization: `Bearer ${document.getElementById("token").value}` };
  if (payload !== undefined) headers["Content-Type"] = "application/json";
  return api(path, {
    method, headers, body: payload === undefined ? undefined : JSON.stringify(payload),
  });
}

// Records in per second between consecutive samples, drawn as a polyline.
function sparkline(history) {
  const width = 120, height = 24;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "spark");
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  const rates = [];
  for (let i = 1; i < history.length; i += 1) {
    const dt = (history[i].t_ms - history[i - 1].t_ms) / 1000;
    rates.push(dt > 0 ? (history[i].records_in - history[i - 1].records_in) / dt : 0);
  }
  if (rates.length > 1) {
    const top = Math.max(...rates, 1);
    const points = rates.map((r, i) =>
      `${(i * width / (rates.length - 1)).toFixed(1)},${(height - 2 - r / top * (height - 4)).toFixed(1)}`);
    const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    line.setAttribute("points", points.join(" "));
    svg.append(line);
  }
  return svg;
}

// -- tasks -----------------------------------------------------------------------------------

function taskActions(task) {
  const act = (label, run) => el("button", {
    type: "button", "data-action": label,
    onclick: async (event) => {
      event.stopPropagation();
      const box = document.getElementById("action-error");
      try { await run(); box.hidden = true; } catch (error) {
        box.textContent = `${label} ${task.id}: ${error.message}`;
        box.hidden = false;
      }
      refresh();
    },
  }, label);
  const path = `/tasks/${encodeURIComponent(task.id)}`;
  const toggle = task.status === "PAUSED"
    ? act("resume", () => mutate(`${path}/resume`, "POST"))
    : act("pause", () => mutate(`${path}/pause`, "POST"));
  const remove = act("delete", () => {
    if (!confirm(`Delete task ${task.id}? Its Redis state goes; its topics stay.`)) {
      return Promise.resolve();
    }
    return mutate(path, "DELETE");
  });
  const explain = act("explain", async () => showPlan(task.id, await api(`${path}/explain`)));
  const edit = act("replace", async () => {
    document.getElementById("sql").value = task.spec.sql;
    document.getElementById("task-id").value = task.id;
    document.getElementById("sql").focus();
  });
  // Rewind (docs/rewind.md): the windows from a time recomputed, re-emitted at a new revision.
  const rewind = act("rewind", async () => {
    const suggested = new Date(Date.now() - 10 * 60 * 1000).toISOString().replace(/\.\d+Z$/, "Z");
    const from = prompt(`Rewind ${task.id}: recompute its windows from (ISO-8601, UTC)`, suggested);
    if (!from) return;
    const answer = await mutate(`${path}/rewind`, "POST", { from });
    showPlan(`rewind ${answer.generation} of ${task.id} (rows at revision ${answer.generation})`,
      answer);
  });
  return el("td", { class: "actions" }, toggle, explain, edit, rewind, remove);
}

function taskRow(task) {
  const stats = task.stats ?? {};
  const live = task.live ?? {};
  const late = (stats.late ?? 0) + (stats.counters?.late_reducer ?? 0);
  const row = el("tr", { "data-task": task.id, onclick: () => select(task.id) },
    el("td", {}, task.id),
    el("td", {}, el("span", { class: `badge ${task.status}` }, task.status)),
    el("td", { class: "sql", title: task.spec.sql }, task.spec.sql),
    el("td", {}, sparkline(live.history ?? []), " ",
      el("span", { class: "rate" }, live.input_rate == null ? "–" : `${number(live.input_rate)}/s`)),
    el("td", { class: "num records-in" }, number(stats.records_in)),
    el("td", { class: "num accepted" }, number(stats.accepted)),
    el("td", { class: "num late" }, number(late)),
    el("td", { class: "num bad" }, number(stats.bad)),
    el("td", { class: "num watermark-lag" }, duration(live.watermark_lag_ms)),
    el("td", { class: "num backlog" }, number(live.backlog_datasets)),
    el("td", { class: "num result-latency" }, duration(live.result_latency_ms)),
    taskActions(task));
  if (task.id === state.selected) row.classList.add("selected");
  return row;
}

async function refreshTasks() {
  const { tasks } = await api("/tasks");
  const detailed = await Promise.all(tasks.map((t) =>
    api(`/tasks/${encodeURIComponent(t.id)}`).catch(() => t)));  // deleted meanwhile
  state.tasks = new Map(detailed.map((t) => [t.id, t]));
  document.querySelector("#tasks tbody").replaceChildren(...detailed.map(taskRow));
  document.getElementById("no-tasks").hidden = detailed.length > 0;
  if (state.selected && !state.tasks.has(state.selected)) select(null);
}

// -- results of the selected task ------------------------------------------------------------

function select(taskId) {
  state.selected = taskId;
  document.getElementById("results-panel").hidden = taskId == null;
  for (const name of document.querySelectorAll(".selected-task")) name.textContent = taskId ?? "";
  for (const row of document.querySelectorAll("#tasks tbody tr")) {
    row.classList.toggle("selected", row.dataset.task === taskId);
  }
  refreshResults();
}

function fillTable(table, rows) {
  const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))];
  table.tHead.replaceChildren(el("tr", {}, ...columns.map((c) => el("th", {}, c))));
  table.tBodies[0].replaceChildren(...rows.map((row) => el("tr", {},
    ...columns.map((c) => el("td", {}, typeof row[c] === "object" ? JSON.stringify(row[c]) : row[c])))));
}

// The selected task's latest results, and the current values of its open windows (a pull
// query: as fresh as the reducers' last checkpoint, which the answer dates).
async function refreshResults() {
  const taskId = state.selected;
  if (taskId == null) return;
  const path = `/tasks/${encodeURIComponent(taskId)}`;
  const [{ results }, current] = await Promise.all([
    api(`${path}/results?limit=${RESULTS_SHOWN}`), api(`${path}/windows`)]);
  if (taskId !== state.selected) return;
  fillTable(document.getElementById("results"), results);
  const open = current.rows.filter((row) => !row.final).slice(0, RESULTS_SHOWN)
    .map(({ final, ...row }) => row);
  fillTable(document.getElementById("current"), open);
  document.getElementById("current-age").textContent = open.length === 0
    ? "No open window holds data."
    : `Values as of ${duration(current.staleness_ms)} ago (the reducers' last checkpoint); `
      + `${number(current.backlog_datasets)} data sets not merged yet.`;
}

// -- cluster ---------------------------------------------------------------------------------

function metricsLink(address) {
  return address ? el("a", { href: `http://${address}/metrics` }, address) : "–";
}

function partitionList(partitions) {
  if (!partitions?.length) return "none";
  const items = partitions.map((p) => el("span", { class: p.paused ? "paused" : "" },
    `${p.topic}[${p.partition}] ${p.lag == null ? "?" : number(p.lag)}${p.paused ? " paused" : ""}`));
  return el("span", {}, ...items.flatMap((item, i) => (i ? [", ", item] : [item])));
}

async function refreshCluster() {
  const cluster = await api("/cluster");
  const reducers = Object.entries(cluster.members).map(([id, m]) => el("tr", { "data-member": id },
    el("td", {}, id, " ", id === cluster.leader ? el("span", { class: "badge leader" }, "leader") : ""),
    el("td", { class: "num" }, number(m.owned_units?.length ?? m.units)),
    el("td", { class: "num" }, number(m.merge_rate)),
    el("td", { class: "num" }, cpu(m.cpu)),
    el("td", {}, metricsLink(m.metrics))));
  document.querySelector("#reducers tbody").replaceChildren(...reducers);
  const mappers = Object.entries(cluster.mappers).map(([id, m]) => el("tr", { "data-member": id },
    el("td", {}, id), el("td", {}, partitionList(m.partitions)),
    el("td", { class: "num" }, cpu(m.cpu)), el("td", {}, metricsLink(m.metrics))));
  document.querySelector("#mappers tbody").replaceChildren(...mappers);
  document.getElementById("redis-memory").textContent = bytes(cluster.redis_used_memory_bytes);
  document.getElementById("generation").textContent = cluster.assignment?.generation ?? "–";
  for (const [role, id] of [["reducers", "reducer-advice"], ["mappers", "mapper-advice"]]) {
    const advice = cluster.advice?.[role];
    document.getElementById(id).textContent = advice == null ? "–"
      : `Advice: ${advice.needed} ${role} for the current load (${advice.current} now; `
        + `${advice.reason}).`;
  }
}

// -- register --------------------------------------------------------------------------------

// The SQL with a caret under the reported line and column.
function showSqlError(sql, detail) {
  const box = document.getElementById("sql-error");
  box.querySelector(".message").textContent = detail.line == null
    ? detail.message ?? "error"
    : `line ${detail.line}, column ${detail.column}: ${detail.message}`;
  const where = box.querySelector(".where");
  if (detail.line != null && detail.column != null) {
    const line = sql.split("\n")[detail.line - 1] ?? "";
    where.textContent = `${line}\n${" ".repeat(Math.max(0, detail.column - 1))}^`;
    where.hidden = false;
  } else {
    where.hidden = true;
  }
  box.hidden = false;
}

async function register(event) {
  event.preventDefault();
  const sql = document.getElementById("sql").value;
  const id = document.getElementById("task-id").value.trim();
  const optionsText = document.getElementById("options").value.trim();
  const ok = document.getElementById("register-ok");
  ok.hidden = true;
  document.getElementById("sql-error").hidden = true;
  const payload = { sql };
  if (id) payload.id = id;
  try {
    if (optionsText) payload.options = JSON.parse(optionsText);
  } catch (error) {
    showSqlError(sql, { message: `options are not JSON: ${error.message}` });
    return;
  }
  try {
    const task = await mutate("/tasks", "POST", payload);
    ok.textContent = `Registered ${task.id}.`;
    ok.hidden = false;
    refresh();
  } catch (error) {
    showSqlError(sql, error.detail?.message ? error.detail : { message: error.message });
  }
}

// -- explain and replace ---------------------------------------------------------------------

function showPlan(what, plan) {
  document.getElementById("plan-of").textContent = what;
  document.getElementById("plan").textContent = JSON.stringify(plan, null, 2);
  document.getElementById("plan-panel").hidden = false;
}

function formPayload() {
  const sql = document.getElementById("sql").value;
  const optionsText = document.getElementById("options").value.trim();
  document.getElementById("register-ok").hidden = true;
  document.getElementById("sql-error").hidden = true;
  const payload = { sql };
  try {
    if (optionsText) payload.options = JSON.parse(optionsText);
  } catch (error) {
    showSqlError(sql, { message: `options are not JSON: ${error.message}` });
    return null;
  }
  return payload;
}

async function explainForm() {
  const payload = formPayload();
  if (payload == null) return;
  try {
    showPlan("the query above", await api("/explain", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(payload),
    }));
  } catch (error) {
    showSqlError(payload.sql, error.detail?.message ? error.detail : { message: error.message });
  }
}

// PUT the form's query on the task named in Id: a compatible change keeps the open windows;
// a 409 names what differs, and the user may then restart the task from scratch.
async function replaceForm() {
  const payload = formPayload();
  const id = document.getElementById("task-id").value.trim();
  if (payload == null) return;
  if (!id) {
    showSqlError(payload.sql, { message: "name the task to replace in Id" });
    return;
  }
  const path = `/tasks/${encodeURIComponent(id)}`;
  const ok = document.getElementById("register-ok");
  try {
    const task = await mutate(path, "PUT", payload);
    const revision = (task.spec.revisions ?? []).at(-1);
    ok.textContent = `Replaced the query of ${id} from window start ${revision?.from_window_ms}.`;
    ok.hidden = false;
  } catch (error) {
    if (error.detail?.message && /^the new query cannot keep/.test(error.detail.message)
        && confirm(`${error.detail.message}\n\nRestart ${id} from scratch with the new query?`)) {
      try {
        await mutate(`${path}?restart=true`, "PUT", payload);
        ok.textContent = `Registered ${id} again with the new query.`;
        ok.hidden = false;
      } catch (again) {
        showSqlError(payload.sql, again.detail?.message ? again.detail : { message: again.message });
      }
    } else {
      showSqlError(payload.sql, error.detail?.message ? error.detail : { message: error.message });
    }
  }
  refresh();
}

// -- the loop --------------------------------------------------------------------------------

// One refresh at a time. Polling on a fixed interval let refreshes overlap when the API was
// slow: requests piled up behind each other (an action's POST among them), and an older answer
// rendered after a newer one could show a task just paused as RUNNING again. An action asked
// for while a refresh is in flight runs one more refresh after it, so the page shows its effect.
let refreshing = null;
let refreshAgain = false;

function refresh() {
  if (refreshing) {
    refreshAgain = true;
    return refreshing;
  }
  refreshing = refreshOnce().finally(() => {
    refreshing = null;
    if (refreshAgain) {
      refreshAgain = false;
      refresh();
    }
  });
  return refreshing;
}

function poll() {
  refresh().finally(() => setTimeout(poll, POLL_MS));
}

async function refreshOnce() {
  const health = document.getElementById("health");
  try {
    await Promise.all([refreshTasks(), refreshCluster(), refreshResults()]);
    health.textContent = "live";
    health.className = "badge ok";
  } catch (error) {
    health.textContent = `API unreachable: ${error.message}`;
    health.className = "badge down";
  }
}

const token = document.getElementById("token");
token.value = localStorage.getItem("mars-token") ?? "";
token.addEventListener("change", () => localStorage.setItem("mars-token", token.value));
document.getElementById("register-form").addEventListener("submit", register);
document.getElementById("explain-sql").addEventListener("click", explainForm);
document.getElementById("replace-sql").addEventListener("click", replaceForm);
poll();
