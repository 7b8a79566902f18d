// The patchbay orchestrator's web view: the sessions and jobs (refreshed every few seconds)
// and one session's events, live over server-sent events. Every value is written as text,
// never as HTML. Requests that change state send the X-Patchbay-Csrf header.
"use strict";

const CSRF = { "X-Patchbay-Csrf": "1" };
const TERMINAL_JOB = new Set(["completed", "failed", "cancelled"]);
const REFRESH_MS = 3000;

// ---- small helpers -------------------------------------------------------------------------

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value == null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child == null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

class LoggedOut extends Error {}

async function api(path, options = {}) {
  const response = await fetch(path, {
    credentials: "same-origin",
    ...options,
    headers: { Accept: "application/json", ...(options.headers || {}) },
  });
  const body = await response.json().catch(() => null);
  if (response.status === 401) throw new LoggedOut("not logged in (the orchestrator may have restarted)");
  if (!response.ok) {
    const message = body && body.error && body.error.message;
    throw new Error(message || `${response.status} ${response.statusText}`);
  }
  return body;
}

function post(path, body) {
  const headers = { ...CSRF };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  return api(path, { method: "POST", headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

// Every page of a listing (oldest first), at most 20,000 items.
async function all(path, key) {
  const items = [];
  let offset = 0;
  for (let page = 0; page < 20; page++) {
    const listing = await api(`${path}${path.includes("?") ? "&" : "?"}limit=1000&offset=${offset}`);
    items.push(...listing[key]);
    if (listing.next_offset == null) break;
    offset = listing.next_offset;
  }
  return items;
}

function age(iso) {
  const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (seconds < 60) return `${Math.floor(seconds)}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86400)}d ago`;
}

function duration(ms) {
  if (ms == null || Number.isNaN(ms)) return "";
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function between(start, end) {
  return start && end ? duration(Date.parse(end) - Date.parse(start)) : "";
}

function when(iso) {
  return iso ? el("time", { datetime: iso, title: iso, text: age(iso) }) : "";
}

// Usage totals (a session's, a run's, a tree's; the API's `UsageTotals`): "1,234 tokens · $0.0123",
// or "" when none.
function tokens(usage) {
  return usage && usage.total_tokens ? usage.total_tokens.toLocaleString("en-US") : "";
}

function totalsText(usage) {
  if (!usage || (!usage.total_tokens && usage.cost_usd == null)) return "";
  const cost = usage.cost_usd == null ? "" : ` · $${usage.cost_usd.toFixed(4)}`;
  return `${tokens(usage) || 0} tokens${cost}`;
}

function usageTitle(usage) {
  if (!usage) return "";
  return `input ${usage.input_tokens}, output ${usage.output_tokens}, cache read ${usage.cache_read_tokens}, ` +
    `cache write ${usage.cache_write_tokens}`;
}

function badge(status) {
  return el("span", { class: `badge ${status || "none"}`, text: status || "—" });
}

function reasonText(reason) {
  return typeof reason === "string" ? reason : Object.values(reason || {}).join(" ");
}

function usageText(usage) {
  if (!usage) return "";
  const parts = [];
  if (usage.input != null || usage.output != null) parts.push(`${usage.input ?? "?"} in / ${usage.output ?? "?"} out tokens`);
  if (usage.cache_read) parts.push(`${usage.cache_read} cache read`);
  if (usage.cache_write) parts.push(`${usage.cache_write} cache write`);
  if (usage.reasoning) parts.push(`${usage.reasoning} reasoning`);
  if (usage.cost_usd != null) parts.push(`$${usage.cost_usd.toFixed(4)}`);
  return parts.join(" · ");
}

function sessionLink(name, id) {
  const href = id ? `/web/sessions/${encodeURIComponent(id)}` : `/web/sessions/by-name/${encodeURIComponent(name)}`;
  return el("a", { href, text: name });
}

function shorten(text, max) {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

// The end of a long path, which tells folders apart: `…/work/project`.
function shortPath(path, max = 40) {
  if (!path || path.length <= max) return path || "";
  const parts = path.split("/");
  let tail = parts.pop();
  while (parts.length && tail.length + parts[parts.length - 1].length + 1 <= max - 2) tail = `${parts.pop()}/${tail}`;
  return `…/${tail}`;
}

function setLive(text, kind) {
  const live = document.getElementById("live");
  live.textContent = text;
  live.className = `live ${kind || ""}`;
}

function problem(where, error) {
  const message = error instanceof LoggedOut
    ? el("span", {}, "Not logged in: ", el("a", { href: "/login", text: "log in again" }), ".")
    : error.message;
  where.replaceChildren(el("p", { class: "error-line" }, message));
}

// Call `refresh` now and every REFRESH_MS, never two at once.
function every(refresh) {
  let busy = false;
  const tick = async () => {
    if (busy) return;
    busy = true;
    try {
      await refresh();
    } finally {
      busy = false;
    }
  };
  tick();
  setInterval(tick, REFRESH_MS);
  return tick;
}

// ---- jobs ----------------------------------------------------------------------------------

function jobTable(jobs, ids, withSession, after) {
  if (!jobs.length) return el("p", { class: "muted", text: "No jobs yet." });
  const rows = jobs.map((job) => {
    const cancel = TERMINAL_JOB.has(job.status) ? "" : el("button", {
      class: "cancel", "data-job": job.job_id, text: "Cancel",
      onclick: async (event) => {
        event.target.disabled = true;
        try {
          await post(`/jobs/${encodeURIComponent(job.job_id)}/cancel`);
        } catch (error) {
          alert(`Cannot cancel: ${error.message}`);
        }
        after();
      },
    });
    return el("tr", { "data-job": job.job_id },
      el("td", { class: "mono", title: job.job_id, text: job.job_id.slice(0, 8) }),
      withSession ? el("td", {}, sessionLink(job.session_name, ids.get(job.session_name))) : null,
      el("td", { text: job.type === "resume_session" ? "resume" : "start" }),
      el("td", {}, badge(job.status)),
      el("td", { class: "prompt", title: job.prompt, text: shorten(job.prompt, 90) }),
      el("td", {}, when(job.created_at)),
      el("td", { text: between(job.started_at, job.finished_at) }),
      el("td", { class: "tokens", title: usageTitle(job.usage), text: tokens(job.usage) }),
      el("td", { class: "actions" }, cancel));
  });
  return el("table", { class: "jobs" },
    el("thead", {}, el("tr", {}, el("th", { text: "Job" }), withSession ? el("th", { text: "Session" }) : null,
      el("th", { text: "Type" }), el("th", { text: "Status" }), el("th", { text: "Prompt" }),
      el("th", { text: "Queued" }), el("th", { text: "Took" }), el("th", { text: "Tokens" }), el("th", {}))),
    el("tbody", {}, rows));
}

// ---- the sessions (index) ------------------------------------------------------------------

// Sessions as a tree by parent_session_name: roots newest first, children oldest first. A
// parent that is not a session here (a person's Claude Code) makes a root.
function sessionTree(sessions) {
  if (!sessions.length) return el("p", { class: "muted", text: "No sessions yet." });
  const names = new Set(sessions.map((s) => s.session_name));
  const children = new Map();
  const roots = [];
  for (const session of sessions) {
    const parent = session.parent_session_name;
    if (parent && parent !== session.session_name && names.has(parent)) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(session);
    } else {
      roots.push(session);
    }
  }
  const rows = [];
  const seen = new Set();
  const visit = (session, depth) => {
    if (seen.has(session.session_name)) return;
    seen.add(session.session_name);
    const name = el("td", { class: "name" }, depth ? el("span", { class: "branch", text: "└ " }) : "",
      sessionLink(session.session_name, session.session_id));
    name.style.setProperty("--depth", depth);
    rows.push(el("tr", { "data-session": session.session_name }, name,
      el("td", {}, badge(session.status)),
      el("td", { text: session.agent_name }),
      el("td", { class: "path", title: session.project_dir || "", text: shortPath(session.project_dir) }),
      el("td", {}, when(session.created_at)),
      el("td", { class: "tokens", title: usageTitle(session.usage), text: tokens(session.usage) })));
    for (const child of children.get(session.session_name) || []) visit(child, depth + 1);
  };
  roots.reverse().forEach((root) => visit(root, 0));
  // Parents that point at each other in a loop: shown as roots.
  sessions.forEach((session) => visit(session, 0));
  return el("table", { class: "tree" },
    el("thead", {}, el("tr", {}, el("th", { text: "Session" }), el("th", { text: "Status" }),
      el("th", { text: "Agent" }), el("th", { text: "Project" }), el("th", { text: "Age" }),
      el("th", { text: "Tokens" }))),
    el("tbody", {}, rows));
}

function indexPage(app) {
  document.title = "Sessions · patchbay orchestrator";
  const sessionsBody = el("div", {}, el("p", { class: "muted", text: "Loading…" }));
  const jobsBody = el("div", {}, el("p", { class: "muted", text: "Loading…" }));
  const sessionsTitle = el("h2", { text: "Sessions" });
  const jobsTitle = el("h2", { text: "Jobs" });
  app.replaceChildren(el("section", { class: "card", id: "sessions" }, sessionsTitle, sessionsBody),
    el("section", { class: "card", id: "jobs" }, jobsTitle, jobsBody));
  const refresh = every(async () => {
    try {
      const [sessions, jobs] = await Promise.all([all("/sessions", "sessions"), all("/jobs", "jobs")]);
      const ids = new Map(sessions.map((s) => [s.session_name, s.session_id]));
      sessionsTitle.textContent = `Sessions (${sessions.length})`;
      sessionsBody.replaceChildren(sessionTree(sessions));
      const recent = jobs.slice(-100).reverse();
      jobsTitle.textContent = jobs.length > recent.length ? `Jobs (latest ${recent.length} of ${jobs.length})` : `Jobs (${jobs.length})`;
      jobsBody.replaceChildren(jobTable(recent, ids, true, () => refresh()));
      setLive("● live", "on");
    } catch (error) {
      problem(sessionsBody, error);
      setLive("offline", "off");
    }
  });
}

// ---- one session's events ------------------------------------------------------------------

// The events of one run (one job), rendered as they come.
class Run {
  constructor(number, jobId) {
    this.step = 0;
    this.blocks = new Map();
    this.tools = new Map();
    this.title = el("h3", { text: `Run ${number}` });
    this.status = el("span", {});
    this.prompt = el("blockquote", { class: "prompt" });
    this.meta = el("div", { class: "run-meta" });
    this.body = el("div", { class: "run-body" });
    this.footer = el("div", { class: "run-footer" });
    this.node = el("article", { class: "run", "data-job": jobId || "" },
      el("header", {}, this.title, this.status, this.meta), this.prompt, this.body, this.footer);
  }

  showJob(job) {
    this.title.textContent = `${this.title.textContent.split(" · ")[0]} · ${job.type === "resume_session" ? "resume" : "start"}`;
    this.status.replaceChildren(badge(job.status));
    this.prompt.textContent = job.prompt;
    const took = between(job.started_at, job.finished_at);
    this.meta.textContent = [job.started_at && `started ${age(job.started_at)}`, took && `took ${took}`,
      job.error && `error: ${job.error}`].filter(Boolean).join(" · ");
  }

  line(kind, ...content) {
    this.body.append(el("div", { class: `line ${kind}` }, content));
  }

  block(kind, index) {
    const key = `${kind}:${this.step}:${index}`;
    let block = this.blocks.get(key);
    if (!block) {
      if (kind === "reasoning") {
        const text = el("div", { class: "reasoning-text" });
        this.body.append(el("details", { class: "reasoning" }, el("summary", { text: "Reasoning" }), text));
        block = text;
      } else {
        block = el("div", { class: "text" });
        this.body.append(block);
      }
      this.blocks.set(key, block);
    }
    return block;
  }

  tool(id, name, at) {
    let tool = this.tools.get(id);
    if (!tool) {
      tool = {
        at,
        name: el("span", { class: "tool-name", text: name }),
        state: el("span", { class: "tool-state", text: "calling…" }),
        input: el("pre", { class: "input" }),
        result: el("pre", { class: "result" }),
      };
      tool.node = el("div", { class: "tool", "data-call": id },
        el("div", { class: "tool-head" }, el("span", { class: "tool-icon", text: "⚙" }), tool.name, tool.state),
        el("div", { class: "label", text: "input" }), tool.input,
        el("div", { class: "label", text: "result" }), tool.result);
      this.tools.set(id, tool);
      this.body.append(tool.node);
    }
    return tool;
  }

  add(event, at) {
    switch (event.type) {
      case "started":
        this.line("meta", `model ${event.model}`);
        for (const warning of event.warnings || []) this.line("warning", `warning (${warning.code}): ${warning.message}`);
        break;
      case "mcp_connected":
        if ((event.servers || []).length) this.line("meta", `MCP servers: ${event.servers.join(", ")}`);
        for (const failed of event.failed || []) this.line("error", `MCP server ${failed.name} failed: ${failed.error}`);
        break;
      case "text_delta":
        this.block("text", event.index).append(event.text);
        break;
      case "reasoning_delta":
        this.block("reasoning", event.index).append(event.text);
        break;
      case "reasoning_signature":
        break;
      case "redacted_reasoning":
        this.line("meta", "(redacted reasoning)");
        break;
      case "tool_call_start":
        this.tool(event.id, event.name, at);
        break;
      case "tool_call_delta":
        this.tool(event.id, "", at).input.append(event.partial_json);
        break;
      case "tool_call": {
        const tool = this.tool(event.id, event.name, at);
        tool.name.textContent = event.name;
        tool.input.textContent = JSON.stringify(event.input, null, 2);
        tool.state.textContent = event.executed_by === "provider" ? "running at the provider…" : "running…";
        tool.at = at;
        break;
      }
      case "tool_result": {
        const tool = this.tool(event.id, event.name, at);
        const result = event.result || {};
        tool.result.textContent = (result.content || []).map(contentText).join("\n");
        tool.node.classList.add(result.status || "completed");
        tool.state.textContent = `${result.status || "completed"} · ${duration(at - tool.at)}`;
        break;
      }
      case "usage":
        this.usage = event;
        this.footer.textContent = usageText(event);
        break;
      case "step_finished":
        this.line("meta", `step ${event.step + 1} ended: ${reasonText(event.reason)}`, usageText(event.usage) && ` · ${usageText(event.usage)}`);
        this.step += 1;
        break;
      case "finish": {
        const m = event.metrics || {};
        this.footer.textContent = [`finished: ${reasonText(event.reason)}`, m.total_ms != null && `total ${duration(m.total_ms)}`,
          m.first_text_ms != null && `first text after ${duration(m.first_text_ms)}`, usageText(event.usage)]
          .filter(Boolean).join(" · ");
        this.footer.classList.add("done");
        break;
      }
      case "error":
        this.line("error", `error (${event.kind}): ${event.message}`);
        break;
      default:
        this.body.append(el("details", { class: "opaque" }, el("summary", { text: event.type || "event" }),
          el("pre", { text: JSON.stringify(event, null, 2) })));
    }
  }
}

function contentText(piece) {
  switch (piece.type) {
    case "text": return piece.text;
    case "json": return JSON.stringify(piece.value, null, 2);
    case "image": return `[image ${piece.media_type}]`;
    case "resource": return piece.text != null ? piece.text : `[resource ${piece.uri}]`;
    default: return JSON.stringify(piece);
  }
}

// Follow the session's events: each run (job) gets its own section.
function follow(sessionId, container, jobs, onRunEnd) {
  const runs = new Map();
  const runFor = (jobId) => {
    const key = jobId || "";
    if (!runs.has(key)) {
      const run = new Run(runs.size + 1, jobId);
      runs.set(key, run);
      if (jobs.has(key)) run.showJob(jobs.get(key));
      container.querySelector(".muted.waiting")?.remove();
      container.append(run.node);
    }
    return runs.get(key);
  };
  container.replaceChildren(el("p", { class: "muted waiting", text: "No events yet." }));
  const source = new EventSource(`/sessions/${encodeURIComponent(sessionId)}/events`);
  source.onopen = () => setLive("● live", "on");
  source.onmessage = (message) => {
    const stored = JSON.parse(message.data);
    const nearBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
    runFor(stored.job_id).add(stored.event || {}, stored.created_at);
    if (nearBottom) window.scrollTo(0, document.body.scrollHeight);
    if (stored.event && (stored.event.type === "finish" || stored.event.type === "error")) onRunEnd();
  };
  source.addEventListener("end", (message) => {
    source.close();
    const reason = JSON.parse(message.data || "{}").reason;
    setLive(reason === "deleted" ? "session deleted" : reason === "stopping" ? "orchestrator stopped" : "stream ended", "off");
  });
  source.onerror = () => setLive(source.readyState === EventSource.CLOSED ? "disconnected" : "reconnecting…", "off");
  return runs;
}

async function sessionPage(app, path) {
  const byName = path.startsWith("by-name/");
  const key = decodeURIComponent(byName ? path.slice("by-name/".length) : path);
  let report;
  try {
    report = await api(byName ? `/sessions/by-name/${encodeURIComponent(key)}` : `/sessions/${encodeURIComponent(key)}`);
  } catch (error) {
    problem(app, error);
    return;
  }
  const name = report.session_name;
  document.title = `${name} · patchbay orchestrator`;
  const status = el("span", {});
  const facts = el("dl", { class: "facts" });
  const outcome = el("div", {});
  const jobsBody = el("div", {});
  const events = el("div", { id: "events" });
  const prompt = el("textarea", { name: "prompt", rows: 3, placeholder: "What should the agent do next?", required: true });
  const note = el("span", { class: "muted" });
  const resume = el("form", { id: "resume", class: "resume" }, prompt, el("div", { class: "row" },
    el("button", { type: "submit", text: "Resume" }), note));
  app.replaceChildren(
    el("section", { class: "card" }, el("div", { class: "title-row" }, el("h1", { text: name }), status), facts, outcome),
    el("section", { class: "card" }, el("h2", { text: "Events" }), events),
    el("section", { class: "card" }, el("h2", { text: "Resume" }), resume),
    el("section", { class: "card" }, el("h2", { text: "Jobs" }), jobsBody));

  let runs = new Map();
  const known = new Map();
  const show = (report, jobs) => {
    status.replaceChildren(badge(report.status));
    const parent = report.parent_session_name;
    const fact = (term, value) => [el("dt", { text: term }), el("dd", {}, value || "—")];
    facts.replaceChildren(...fact("agent", report.agent_name), ...fact("project", report.project_dir),
      ...fact("parent", parent ? sessionLink(parent) : ""), ...fact("created", when(report.created_at)),
      ...fact("updated", when(report.updated_at)), ...fact("id", el("span", { class: "mono", text: report.session_id })),
      ...fact("usage", totalsText(report.usage)), ...fact("run usage", totalsText(report.run_usage)),
      ...fact("tree usage", report.tree_usage ? `${totalsText(report.tree_usage)} (tree of ${report.tree_root})` : ""));
    outcome.replaceChildren(
      report.error ? el("div", { class: "line error", text: `error: ${report.error}` }) : "",
      report.result ? el("details", { class: "result-text" }, el("summary", { text: "Last result" }), el("pre", { text: report.result })) : "");
    jobsBody.replaceChildren(jobTable(jobs.slice().reverse(), new Map(), false, () => refresh()));
    for (const job of jobs) {
      known.set(job.job_id, job);
      runs.get(job.job_id)?.showJob(job);
    }
  };
  const refresh = every(async () => {
    try {
      const [fresh, jobs] = await Promise.all([api(`/sessions/${encodeURIComponent(report.session_id)}`),
        all(`/jobs?session_name=${encodeURIComponent(name)}`, "jobs")]);
      show(fresh, jobs);
    } catch (error) {
      problem(outcome, error);
    }
  });
  runs = follow(report.session_id, events, known, () => refresh());

  resume.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = prompt.value.trim();
    if (!text) return;
    note.textContent = "queueing…";
    try {
      await post("/jobs", { type: "resume_session", session_name: name, prompt: text });
      prompt.value = "";
      note.textContent = "queued";
    } catch (error) {
      note.textContent = `cannot resume: ${error.message}`;
    }
    refresh();
  });
}

// ---- routing -------------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  const app = document.getElementById("app");
  const path = location.pathname;
  if (path.startsWith("/web/sessions/")) sessionPage(app, path.slice("/web/sessions/".length));
  else indexPage(app);
});
