// The live schedule page: token → cluster list (HTTP) → ScheduleTimeline subscription (WS),
// drawn with vis-timeline, with the queue, the quotas (HTTP), filters, details and connection
// state beside it.
import type { Client } from "graphql-ws";
import {
  ClusterListDocument,
  ClusterQuotasDocument,
  BudgetsDocument,
  JobCostDocument,
  ScheduleDrainsDocument,
  ScheduleScalingStepsDocument,
  ScheduleJobLogsDocument,
  ScheduleFleetsDocument,
  ScheduleTimelineDocument,
  type ClusterListQuery,
  type BudgetsQuery,
  type ScheduleFleetsQuery,
  type JobCostQuery,
  type ScheduleTimelineSubscriptionVariables,
} from "../../../frontend-contract/types/graphql";
import { AuthError, NetworkError, graphqlBody, isAuthClose, openSocket, query } from "./api";
import { absolute, esc, lower, money, ms, relative, windowText } from "./format";
import { ScheduleModel, type QueueEntry, type Segment, type Update } from "./model";
import { quotasSummary, renderQuotas } from "./quotas";
import { gpusText, renderQueue } from "./queue";
import { TimelineView, segmentOf, type Filters } from "./timeline";

type ConnectionState = "idle" | "connecting" | "live" | "reconnecting" | "error";
type Cluster = ClusterListQuery["clusters"][number];
type Payload = ReturnType<typeof graphqlBody<unknown, ScheduleTimelineSubscriptionVariables>>;

const TOKEN_KEY = "budcluster.schedule.token";
const HOUR = 3_600_000;

function el<T extends HTMLElement = HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`#${id} is missing from the page`);
  return found as T;
}

const ui = {
  login: el("login"),
  form: el<HTMLFormElement>("token-form"),
  error: el("error"),
  app: el("app"),
  controls: el("controls"),
  cluster: el<HTMLSelectElement>("cluster"),
  range: el<HTMLSelectElement>("range"),
  fitWork: el<HTMLButtonElement>("fit-work"),
  goNow: el<HTMLButtonElement>("go-now"),
  filterType: el<HTMLSelectElement>("filter-type"),
  filterPriority: el<HTMLSelectElement>("filter-priority"),
  filterGpu: el<HTMLSelectElement>("filter-gpu"),
  connection: el("connection"),
  forget: el<HTMLButtonElement>("forget-token"),
  timeline: el("timeline"),
  queue: el<HTMLTableElement>("queue"),
  queueEmpty: el("queue-empty"),
  queueCount: el("queue-count"),
  details: el("details"),
  budgets: el("budgets"),
  budgetsList: el("budgets-list"),
  drains: el("drains"),
  drainsList: el("drains-list"),
  scaling: el("scaling"),
  scalingList: el("scaling-list"),
  fleets: el("fleets"),
  fleetsList: el("fleets-list"),
  quotas: el<HTMLDetailsElement>("quotas"),
  quotasSummary: el("quotas-summary"),
  quotasBody: el("quotas-body"),
  tooltip: el("tooltip"),
};

const model = new ScheduleModel();
let view: TimelineView | null = null;
let token: string | null = null;
let client: Client | null = null;
let disposeSubscription: (() => void) | null = null;
let payload: Payload | null = null;
let generation = 0;
let connection: ConnectionState = "idle";
let dropped = false;
let resumedNote = 0;
let snapshotRequested = false;
let queueFrame = 0;
let quotasRequest = 0;
let selectedSegment: string | null = null;
let selectedJob: string | null = null;
let filters: Filters = { jobType: "", priority: "", gpuType: "" };
/** Fit the view to the work on the next snapshot (a page opened or a cluster picked). */
let fitOnSnapshot = false;
/** The first view fits to the work when that is narrower than this share of the range. */
const FIT_FIRST_VIEW_UNDER = 0.25;

const hooks = {
  get state(): ConnectionState {
    return connection;
  },
  get sequence(): number | null {
    return model.sequence;
  },
  get segmentCount(): number {
    return model.segments.size;
  },
  get itemCount(): number {
    return view?.itemCount ?? 0;
  },
  lastApplyMs: 0,
  lastFlushMs: 0,
  renderedAt: 0,
  applyMessage: (message: Update): void => applyMessage(message),
};
(window as unknown as { budSchedule: typeof hooks }).budSchedule = hooks;

// ---------------------------------------------------------------- status and errors

function setConnection(state: ConnectionState, text: string): void {
  connection = state;
  ui.connection.dataset.state = state;
  ui.connection.textContent = text;
}

function showError(message: string, retry?: () => void): void {
  ui.error.textContent = message;
  if (retry) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = "Retry";
    button.addEventListener("click", () => {
      hideError();
      retry();
    });
    ui.error.append(" ", button);
  }
  ui.error.hidden = false;
}

function hideError(): void {
  ui.error.hidden = true;
  ui.error.textContent = "";
}

// ---------------------------------------------------------------- token

function showLogin(message?: string): void {
  stopStreaming();
  ui.app.hidden = true;
  ui.controls.hidden = true;
  ui.forget.hidden = true;
  ui.login.hidden = false;
  if (message) showError(message);
  const input = ui.form.elements.namedItem("token") as HTMLInputElement;
  input.value = "";
  input.focus();
}

function forgetToken(message?: string): void {
  token = null;
  sessionStorage.removeItem(TOKEN_KEY);
  showLogin(message);
  setConnection(message ? "error" : "idle", message ? "Not signed in" : "Not connected");
}

ui.form.addEventListener("submit", (event) => {
  event.preventDefault();
  const input = ui.form.elements.namedItem("token") as HTMLInputElement;
  const value = input.value.trim().replace(/^Bearer\s+/i, "");
  if (!value) return;
  sessionStorage.setItem(TOKEN_KEY, value);
  hideError();
  void start(value);
});
ui.forget.addEventListener("click", () => forgetToken());

// ---------------------------------------------------------------- start: clusters over HTTP

async function start(value: string): Promise<void> {
  token = value;
  ui.login.hidden = true;
  ui.forget.hidden = false;
  setConnection("connecting", "Loading clusters…");
  let clusters: Cluster[];
  try {
    clusters = (await query(value, ClusterListDocument)).clusters;
  } catch (error) {
    if (error instanceof AuthError) return forgetToken(error.message);
    setConnection("error", error instanceof NetworkError ? "Server unreachable" : "Error");
    showError(error instanceof Error ? error.message : String(error), () => void start(value));
    return;
  }
  if (token !== value) return;
  if (clusters.length === 0) {
    setConnection("error", "No clusters");
    showError("This token sees no clusters.", () => void start(value));
    return;
  }
  ui.cluster.innerHTML = clusters
    .map((c) => `<option value="${esc(c.id)}">${esc(c.name)}${c.status === "AVAILABLE" ? "" : ` (${esc(lower(c.status))})`}</option>`)
    .join("");
  const wanted = new URLSearchParams(location.search).get("cluster");
  const chosen = clusters.find((c) => c.id === wanted || c.name === wanted) ?? clusters[0];
  ui.cluster.value = chosen.id;
  rememberCluster(chosen.id);
  ui.controls.hidden = false;
  ui.app.hidden = false;
  if (!view) createView();
  void loadQuotas();
  void loadBudgets();
  void loadFleets();
  void loadDrains();
  void loadScaling();
  fitOnSnapshot = true;
  client = openSocket(value, {
    connecting: (reconnect) => {
      if (reconnect || dropped) setConnection("reconnecting", "Connection lost — reconnecting…");
      else setConnection("connecting", "Connecting…");
    },
    connected: () => {
      if (dropped) {
        dropped = false;
        const since = payload?.variables?.since;
        noteReconnected(since != null ? `Reconnected — resumed after #${since}` : "Reconnected");
      }
    },
    closed: (event) => {
      if (client == null || isAuthClose(event)) return;
      if (connection === "live" || connection === "connecting") {
        dropped = true;
        setConnection("reconnecting", "Connection lost — reconnecting…");
      }
    },
    fatal: (error) => socketFailed(error),
  });
  subscribe(false);
}

function rememberCluster(id: string): void {
  const url = new URL(location.href);
  if (url.searchParams.get("cluster") === id) return;
  url.searchParams.set("cluster", id);
  history.replaceState(null, "", url.pathname + url.search + url.hash);
}

function socketFailed(error: unknown): void {
  if (client == null) return;
  if (isAuthClose(error)) {
    const reason = (error as { reason?: string }).reason;
    forgetToken(`The API token was refused by the server${reason ? ` (${reason})` : ""}. Enter a valid token.`);
    return;
  }
  stopStreaming();
  setConnection("error", "Disconnected");
  const code = (error as { code?: number } | null)?.code;
  showError(`The live connection failed${code ? ` (close ${code})` : ""}.`, () => token && void start(token));
}

function stopStreaming(): void {
  generation++;
  disposeSubscription?.();
  disposeSubscription = null;
  payload = null;
  const old = client;
  client = null;
  void old?.dispose();
  dropped = false;
}

// ---------------------------------------------------------------- the subscription

function rangeHours(): [number, number] {
  const [from, to] = ui.range.value.split(",").map(Number);
  return [from ?? -6, to ?? 24];
}

/** (Re)subscribes. `keep`: keep what is drawn and the window (a snapshot will replace it). */
/** When the window was last placed around now (ms since the epoch). */
let placedAt = 0;

/** Moves the window with the clock: a page left open for hours subscribes again (a fresh
 * snapshot, drawn over the old one) once now has moved by 5 % of the range, 10 minutes at least. */
function slideWindow(): void {
  if (!client || connection !== "live" || !payload?.variables?.from) return;
  const [fromH, toH] = rangeHours();
  if (Date.now() - placedAt >= Math.max(10 * 60e3, 0.05 * (toH - fromH) * HOUR)) subscribe(true, true);
}
setInterval(slideWindow, 60e3);

function subscribe(keep: boolean, slide = false): void {
  if (!client) return;
  disposeSubscription?.();
  const mine = ++generation;
  if (!keep) {
    view?.forgetRange();
    model.reset();
    model.rangeStart = 0;
    model.rangeEnd = 0;
    view?.apply({ snapshot: true, rowsChanged: true, upserted: [], removed: [], queueChanged: true, unknownRows: [] });
    scheduleQueue();
    showDetails(null);
    setConnection("connecting", "Connecting…");
  }
  const previous = payload?.variables;
  let from: string;
  let to: string;
  if (keep && !slide && previous?.from && previous?.to) {
    from = previous.from;
    to = previous.to;
  } else {
    const [fromH, toH] = rangeHours();
    const now = Date.now();
    placedAt = now;
    from = new Date(now + fromH * HOUR).toISOString();
    to = new Date(now + toH * HOUR).toISOString();
  }
  const variables: ScheduleTimelineSubscriptionVariables = { clusterId: ui.cluster.value, from, to };
  payload = graphqlBody(ScheduleTimelineDocument, variables);
  snapshotRequested = keep;
  disposeSubscription = client.subscribe<{ scheduleTimeline: Update }>(payload, {
    next: (result) => {
      if (mine !== generation) return;
      if (result.errors?.length) {
        streamError(result.errors.map((e) => e.message).join("; "));
        return;
      }
      if (result.data?.scheduleTimeline) applyMessage(result.data.scheduleTimeline);
    },
    error: (error) => {
      if (mine !== generation) return;
      if (isAuthClose(error)) return socketFailed(error);
      if (Array.isArray(error)) {
        streamError(error.map((e: { message?: string }) => e.message ?? String(e)).join("; "));
        return;
      }
      socketFailed(error);
    },
    complete: () => {
      // The server ended the stream (it should not); pick it up again where we were.
      if (mine !== generation) return;
      setTimeout(() => mine === generation && subscribe(true), 1000);
    },
  });
}

function streamError(message: string): void {
  setConnection("error", "Subscription failed");
  showError(`The schedule stream failed: ${message}`, () => subscribe(false));
}

function noteReconnected(text: string): void {
  setConnection("live", text);
  window.clearTimeout(resumedNote);
  resumedNote = window.setTimeout(() => {
    if (connection === "live") setConnection("live", liveText());
  }, 15_000);
}

function liveText(): string {
  return `Live · #${model.sequence ?? "–"}`;
}

// ---------------------------------------------------------------- applying a message

function applyMessage(message: Update): void {
  const t0 = performance.now();
  const change = model.apply(message);
  view?.apply(change);
  if (change.snapshot && fitOnSnapshot && view) {
    fitOnSnapshot = false;
    view.fitToWork(FIT_FIRST_VIEW_UNDER);
  }
  if (payload?.variables) payload.variables.since = model.sequence;
  if (change.queueChanged) scheduleQueue();
  if (change.upserted.length || change.removed.length || change.snapshot) drainsSoon();
  if (change.rowsChanged) fillGpuFilter();
  if (message.__typename === "Schedule") {
    const wasReconnect = resumedNote !== 0 && connection === "live" && ui.connection.textContent?.startsWith("Reconnected");
    snapshotRequested = false;
    if (message.reason === "resync" || message.reason === "history-gone" || message.reason === "unknown-since" || wasReconnect) {
      noteReconnected(wasReconnect ? "Reconnected — resynchronised" : `Resynchronised (${message.reason})`);
    } else if (connection !== "live" || !ui.connection.textContent?.startsWith("Re")) {
      setConnection("live", liveText());
    }
    hideErrorIfStream();
  } else if (connection === "live" && ui.connection.textContent?.startsWith("Live")) {
    ui.connection.textContent = liveText();
  }
  if (selectedSegment && (change.snapshot || change.removed.includes(selectedSegment) || change.upserted.some((s) => s.id === selectedSegment))) {
    const segment = model.segments.get(selectedSegment);
    if (segment) showDetails(segment);
  }
  if (change.unknownRows.length && !change.snapshot && !snapshotRequested) {
    // A node joined after our snapshot: ask for a fresh one (subscribe again without since).
    subscribe(true);
  }
  hooks.lastApplyMs = performance.now() - t0;
}

function hideErrorIfStream(): void {
  if (!ui.error.hidden && ui.error.textContent?.startsWith("The schedule stream")) hideError();
}

// ---------------------------------------------------------------- views

function createView(): void {
  const created = new TimelineView(ui.timeline, model);
  view = created;
  created.onFlush = (took) => {
    hooks.lastFlushMs = took;
  };
  created.onRedraw = () => {
    hooks.renderedAt = performance.now();
  };
  const timeline = created.timeline;
  timeline.on("itemover", (props: { item: string; event: MouseEvent }) => showTooltip(segmentOf(String(props.item)), props.event));
  timeline.on("itemout", () => {
    ui.tooltip.hidden = true;
  });
  timeline.on("select", (props: { items: string[] }) => {
    const first = props.items[0];
    if (first == null) {
      showDetails(null);
      return;
    }
    const segment = model.segments.get(segmentOf(String(first)));
    if (!segment) return;
    if (segment.jobId) {
      const ids = created.itemsOfJob(segment.jobId);
      if (ids.length > 1) timeline.setSelection(ids);
    }
    selectedJob = segment.jobId ?? null;
    showDetails(segment);
    scheduleQueue();
  });
}

function showTooltip(segmentId: string, event: MouseEvent): void {
  const segment = model.segments.get(segmentId);
  if (!segment) return;
  const start = ms(segment.start);
  const end = ms(segment.end);
  const name = segment.mine ? segment.name : "another tenant";
  const lines = [
    `<strong>${esc(name)}</strong>`,
    `${esc(lower(segment.kind))}${segment.status ? ` · ${esc(lower(segment.status))}` : ""}${segment.priority ? ` · ${esc(lower(segment.priority))}` : ""}${segment.jobType ? ` · ${esc(lower(segment.jobType))}` : ""}`,
    `${esc(absolute(start))} → ${end == null ? "until stopped" : esc(absolute(end))} <span class="muted">(end: ${esc(segment.source)})</span>`,
  ];
  if (segment.earliestStart) lines.push(`window ${esc(windowText(ms(segment.earliestStart), ms(segment.latestStart)))}`);
  lines.push(`${segment.rows.length} row${segment.rows.length === 1 ? "" : "s"}`);
  ui.tooltip.innerHTML = lines.join("<br>");
  ui.tooltip.hidden = false;
  const x = Math.min(event.clientX + 14, window.innerWidth - ui.tooltip.offsetWidth - 8);
  const y = event.clientY + 16 + ui.tooltip.offsetHeight > window.innerHeight ? event.clientY - ui.tooltip.offsetHeight - 8 : event.clientY + 16;
  ui.tooltip.style.left = `${Math.max(4, x)}px`;
  ui.tooltip.style.top = `${Math.max(4, y)}px`;
}

function row(label: string, value: string): string {
  return `<dt>${esc(label)}</dt><dd>${value}</dd>`;
}

function showDetails(segment: Segment | null, entry?: QueueEntry): void {
  selectedSegment = segment?.id ?? null;
  if (!segment && !entry) {
    selectedJob = null;
    ui.details.innerHTML = '<p class="empty">Click a block or a queue row for details.</p>';
    return;
  }
  if (segment) {
    const name = segment.mine ? segment.name : "another tenant";
    const start = ms(segment.start);
    const end = ms(segment.end);
    ui.details.innerHTML =
      `<h2>${esc(name)}</h2><dl data-segment-id="${esc(segment.id)}">` +
      row("Job id", segment.jobId ? `<code>${esc(segment.jobId)}</code>` : "—") +
      row("Kind", esc(lower(segment.kind))) +
      row("Status", esc(lower(segment.status))) +
      row("Priority", esc(lower(segment.priority))) +
      row("Job type", esc(lower(segment.jobType))) +
      row("Start", `${esc(absolute(start))} <span class="muted">${esc(relative(start))}</span>`) +
      row("End", end == null ? "until stopped" : `${esc(absolute(end))} <span class="muted">${esc(relative(end))}</span>`) +
      row("End source", esc(segment.source)) +
      row("Window", esc(windowText(ms(segment.earliestStart), ms(segment.latestStart)))) +
      row("Rows", esc(segment.rows.join(", "))) +
      "</dl>" +
      (segment.mine && segment.jobId
        ? `<dl id="details-cost" data-job-id="${esc(segment.jobId)}">${row("Cost", "…")}</dl>` +
          `<div id="details-logs" class="logs" data-job-id="${esc(segment.jobId)}"></div>`
        : "");
    if (segment.mine && segment.jobId) {
      void loadCost(segment.jobId);
      void loadLogs(segment.jobId);
    }
    return;
  }
  if (entry) {
    const start = ms(entry.estimatedStart);
    ui.details.innerHTML =
      `<h2>${esc(entry.mine ? entry.name : "another tenant")}</h2><dl>` +
      row("Job id", entry.jobId && entry.mine ? `<code>${esc(entry.jobId)}</code>` : "—") +
      row("Queue position", String(entry.position)) +
      row("Priority", esc(lower(entry.priority))) +
      row("Job type", esc(lower(entry.jobType))) +
      row("GPUs", esc(gpusText(entry))) +
      row("Estimated start", `${esc(absolute(start))} <span class="muted">${esc(relative(start))}</span>`) +
      row("Window", esc(windowText(ms(entry.earliestStart), ms(entry.latestStart)))) +
      row("Why it waits", esc(entry.reason)) +
      (entry.warnings.length ? row("Warnings", entry.warnings.map(esc).join("<br>")) : "") +
      "</dl>";
  }
}

// ---------------------------------------------------------------- a job's cost (HTTP)

let costRequest = 0;

type JobCost = NonNullable<JobCostQuery["job"]>;

function costRows(job: JobCost): string {
  const budget = job.budgetLimit == null ? "" : row("Budget", esc(`${money(job.budgetLimit)} (${lower(job.budgetAction)})`));
  const held = job.heldBy == null ? "" : row("Held", esc(job.holdReason ?? `by its ${lower(job.heldBy)}'s budget`));
  return (
    row("Cost so far", esc(money(job.costSoFar)) + (job.status === "RUNNING" ? ' <span class="muted">and counting</span>' : "")) +
    row("Expected cost", esc(money(job.estimatedCost))) +
    budget +
    held
  );
}

/** The selected job's cost in the details: what it has cost so far (worked out by the server
 * when read: read again every 30 s while it is shown) and what it is expected to cost. */
async function loadCost(jobId: string): Promise<void> {
  const current = token;
  if (!current) return;
  const mine = ++costRequest;
  try {
    const data = await query(current, JobCostDocument, { id: jobId });
    const slot = document.getElementById("details-cost");
    if (mine !== costRequest || !slot || slot.dataset.jobId !== jobId) return;
    slot.innerHTML = data.job ? costRows(data.job) : row("Cost", "not visible to this token");
  } catch (error) {
    if (mine !== costRequest) return;
    if (error instanceof AuthError) return forgetToken(error.message);
    const slot = document.getElementById("details-cost");
    if (slot) slot.innerHTML = row("Cost", esc(error instanceof Error ? error.message : String(error)));
  }
}

/** The selected job's last log lines in its details (read with its cost; a token without
 * jobs:logs is told so). */
let logsRequest = 0;
async function loadLogs(jobId: string): Promise<void> {
  const current = token;
  if (!current) return;
  const mine = ++logsRequest;
  const show = (html: string): void => {
    const slot = document.getElementById("details-logs");
    if (mine === logsRequest && slot && slot.dataset.jobId === jobId) slot.innerHTML = html;
  };
  try {
    const data = await query(current, ScheduleJobLogsDocument, { id: jobId });
    const found = data.jobLogs;
    if (found.__typename !== "JobLogs") return show(`<p class="muted">Logs: ${esc("message" in found ? found.message : "not shown")}</p>`);
    const title = `Logs · attempt ${found.attempt}${found.kept ? " · kept when it failed" : ""}`;
    const lines = found.lines.map((l) => `${new Date(l.at).toLocaleTimeString()} ${l.text}`).join("\n");
    show(`<h3>${esc(title)}</h3>${found.note ? `<p class="muted">${esc(found.note)}</p>` : ""}<pre>${esc(lines || "(nothing written yet)")}</pre>`);
  } catch (error) {
    if (mine !== logsRequest) return;
    if (error instanceof AuthError) return forgetToken(error.message);
    show(`<p class="muted">Logs: ${esc(error instanceof Error ? error.message : String(error))}</p>`);
  }
}

window.setInterval(() => {
  const slot = document.getElementById("details-cost");
  if (!ui.app.hidden && slot?.dataset.jobId) void loadCost(slot.dataset.jobId);
  const logs = document.getElementById("details-logs");
  if (!ui.app.hidden && logs?.dataset.jobId) void loadLogs(logs.dataset.jobId);
}, 30_000);

function scheduleQueue(): void {
  if (!queueFrame) queueFrame = requestAnimationFrame(drawQueue);
}

function drawQueue(): void {
  queueFrame = 0;
  const body = ui.queue.tBodies[0];
  if (!body) return;
  const shown = renderQueue(body, model.queue, filters, selectedJob);
  const hidden = model.queue.length - shown;
  ui.queueEmpty.hidden = shown > 0;
  ui.queueEmpty.textContent =
    hidden > 0 ? `${hidden} waiting job${hidden === 1 ? " is" : "s are"} hidden by the filters.` : "Nothing waits.";
  ui.queueCount.textContent = shown === model.queue.length ? `${shown}` : `${shown} of ${model.queue.length}`;
}

function onQueueActivate(event: Event): void {
  const tr = (event.target as HTMLElement).closest("tr[data-position]") as HTMLTableRowElement | null;
  if (!tr) return;
  const position = Number(tr.dataset.position);
  const entry = model.queue.find((e) => e.position === position);
  const jobId = tr.dataset.jobId || null;
  selectedJob = jobId;
  const ids = jobId && view ? view.itemsOfJob(jobId) : [];
  if (view && ids.length) {
    view.timeline.setSelection(ids, { focus: true, animation: { duration: 300, easingFunction: "easeInOutQuad" } } as never);
    const segment = model.segments.get(segmentOf(ids[0]));
    showDetails(segment ?? null, entry);
  } else {
    view?.timeline.setSelection([]);
    showDetails(null, entry);
    selectedJob = jobId;
  }
  scheduleQueue();
}

ui.queue.addEventListener("click", onQueueActivate);
ui.queue.addEventListener("keydown", (event) => {
  if (event.key === "Enter" || event.key === " ") {
    event.preventDefault();
    onQueueActivate(event);
  }
});

// ---------------------------------------------------------------- controls

function fillGpuFilter(): void {
  const types = [...new Set(model.rows.map((r) => r.gpuType).filter((t): t is string => !!t))].sort();
  const current = ui.filterGpu.value;
  ui.filterGpu.innerHTML = '<option value="">all</option>' + types.map((t) => `<option value="${esc(t)}">${esc(t)}</option>`).join("");
  ui.filterGpu.value = types.includes(current) ? current : "";
  if (ui.filterGpu.value !== filters.gpuType) onFilters();
}

function onFilters(): void {
  filters = { jobType: ui.filterType.value, priority: ui.filterPriority.value, gpuType: ui.filterGpu.value };
  view?.setFilters(filters);
  scheduleQueue();
}

ui.filterType.addEventListener("change", onFilters);
ui.filterPriority.addEventListener("change", onFilters);
ui.filterGpu.addEventListener("change", onFilters);
ui.range.addEventListener("change", () => {
  fitOnSnapshot = false;
  subscribe(false);
});
ui.cluster.addEventListener("change", () => {
  rememberCluster(ui.cluster.value);
  fitOnSnapshot = true;
  subscribe(false);
  void loadQuotas();
  void loadBudgets();
  void loadFleets();
  void loadDrains();
  void loadScaling();
});
ui.fitWork.addEventListener("click", () => {
  if (view && !view.fitToWork()) view.showWholeRange();
});
ui.goNow.addEventListener("click", () => view?.centreOnNow());

// Relative times in the queue age; refresh them.
window.setInterval(() => {
  if (!ui.app.hidden) scheduleQueue();
}, 30_000);

// ---------------------------------------------------------------- quotas (HTTP, on demand)

/** Reads the cluster's quotas: on start, on a cluster picked, when the pane opens, and each
 * minute while it is open (quota changes are no part of the schedule stream). */
async function loadQuotas(): Promise<void> {
  const current = token;
  const clusterId = ui.cluster.value;
  if (!current || !clusterId) return;
  const mine = ++quotasRequest;
  try {
    const data = await query(current, ClusterQuotasDocument, { id: clusterId });
    if (mine !== quotasRequest) return;
    if (!data.cluster) {
      ui.quotasSummary.textContent = "";
      ui.quotasBody.innerHTML = '<p class="empty">This cluster is not visible to the token.</p>';
      return;
    }
    ui.quotasSummary.textContent = quotasSummary(data.cluster);
    ui.quotasBody.innerHTML = renderQuotas(data.cluster);
  } catch (error) {
    if (mine !== quotasRequest) return;
    if (error instanceof AuthError) return forgetToken(error.message);
    ui.quotasBody.innerHTML = `<p class="empty">${esc(error instanceof Error ? error.message : String(error))}</p>`;
  }
}

ui.quotas.addEventListener("toggle", () => {
  if (ui.quotas.open) void loadQuotas();
});
window.setInterval(() => {
  if (!ui.app.hidden && ui.quotas.open) void loadQuotas();
}, 60_000);

// ---------------------------------------------------------------- budgets (HTTP, each 30 s)

type BudgetLine = BudgetsQuery["budgets"][number];
let budgetsRequest = 0;

function budgetName(b: BudgetLine): string {
  return b.projectId ? `Project ${b.projectId.slice(0, 8)}` : "Tenant";
}

function budgetItem(b: BudgetLine): string {
  const state = b.exhausted ? "spent" : b.share >= 80 ? "warn" : "ok";
  const when = b.exhausted
    ? "spent"
    : b.projectedExhaustion.expected
      ? `spent by ${absolute(ms(b.projectedExhaustion.expected))} at this pace`
      : "lasts the month at this pace";
  return (
    `<li data-share="${state}" data-budget="${esc(b.projectId ?? "tenant")}">` +
    `<strong>${esc(budgetName(b))}</strong> ${esc(money(b.spent))} of ${esc(money(b.limit))} ` +
    `(${b.share} %, ${esc(lower(b.action))}) · <span class="muted">${esc(when)}</span>` +
    `<div class="bar"><span style="width:${Math.min(100, b.share)}%"></span></div></li>`
  );
}

/** The viewer's project and tenant budgets this month, and a line on the timeline where the
 * schedule is expected to spend each (`projectedExhaustion`). Budgets are no part of the
 * schedule stream: read on start, on a cluster picked and each minute. */
async function loadBudgets(): Promise<void> {
  const current = token;
  if (!current) return;
  const mine = ++budgetsRequest;
  try {
    const data = await query(current, BudgetsDocument, {});
    if (mine !== budgetsRequest) return;
    ui.budgets.hidden = data.budgets.length === 0;
    ui.budgetsList.innerHTML = data.budgets.map(budgetItem).join("");
    view?.setBudgetLines(
      data.budgets
        .filter((b) => !b.exhausted && b.projectedExhaustion.expected)
        .map((b) => ({ id: b.projectId ?? "tenant", at: new Date(b.projectedExhaustion.expected!), title: `${budgetName(b)}'s budget spent` })),
    );
  } catch (error) {
    if (mine !== budgetsRequest) return;
    if (error instanceof AuthError) return forgetToken(error.message);
    ui.budgets.hidden = false;
    ui.budgetsList.innerHTML = `<li>${esc(error instanceof Error ? error.message : String(error))}</li>`;
  }
}

let budgetsPolling = false;
window.setInterval(() => {
  // never more than one poll in flight (a budget's projected exhaustion costs 25 points)
  if (ui.app.hidden || budgetsPolling) return;
  budgetsPolling = true;
  void loadBudgets().finally(() => {
    budgetsPolling = false;
  });
}, 60_000);

// ---------------------------------------------------------------- fleets (HTTP, each minute)

type Fleet = ScheduleFleetsQuery["fleets"][number];
type FleetEntry = Fleet["queue"][number];
let fleetsRequest = 0;

function fleetEntry(e: FleetEntry, names: Map<string, string>, here: string): string {
  const member = names.get(e.clusterId) ?? "a member";
  const start = e.estimatedStart ? relative(ms(e.estimatedStart)) : "no start yet";
  const next = e.nextBestClusterId
    ? ` · next best ${esc(names.get(e.nextBestClusterId) ?? "another member")}` +
      (e.nextBestStart ? `, ${esc(relative(ms(e.nextBestStart)))}` : "")
    : "";
  const moved = e.moves ? ` · moved ${e.moves}×` : "";
  return (
    `<li data-job-id="${esc(e.jobId ?? "")}" data-here="${e.clusterId === here}">` +
    `${esc(e.name)} on <span class="member">${esc(member)}</span>, ${esc(start)}` +
    `<span class="muted">${next}${moved}</span></li>`
  );
}

function fleetItem(f: Fleet, here: string): string {
  const names = new Map(f.members.map((m) => [m.id, m.name]));
  const waiting = f.queue.length
    ? `<ol>${f.queue.map((e) => fleetEntry(e, names, here)).join("")}</ol>`
    : '<p class="muted">Nothing waits.</p>';
  return (
    `<div class="fleet" data-fleet="${esc(f.name)}"><strong>${esc(f.name)}</strong> ` +
    `<span class="muted">${esc(f.members.map((m) => m.name).join(", "))}</span>${waiting}</div>`
  );
}

/** The fleets the picked cluster is a member of, each with its waiting jobs across members
 * (where each waits and the next best, as of the fleet's last balancing pass). Fleets are no
 * part of one cluster's stream: read on start, on a cluster picked and each minute. */
async function loadFleets(): Promise<void> {
  const current = token;
  const here = ui.cluster.value;
  if (!current || !here) return;
  const mine = ++fleetsRequest;
  try {
    const data = await query(current, ScheduleFleetsDocument, {});
    if (mine !== fleetsRequest) return;
    const of = data.fleets.filter((f) => f.members.some((m) => m.id === here));
    ui.fleets.hidden = of.length === 0;
    ui.fleetsList.innerHTML = of.map((f) => fleetItem(f, here)).join("");
  } catch (error) {
    if (mine !== fleetsRequest) return;
    if (error instanceof AuthError) return forgetToken(error.message);
    ui.fleets.hidden = false;
    ui.fleetsList.innerHTML = `<p>${esc(error instanceof Error ? error.message : String(error))}</p>`;
  }
}

/** The picked cluster's drains: bands on the timeline and a line each. Drains are no part of
 * the stream: read on start, on a cluster picked, each minute, and a few seconds after the
 * schedule changed (a drain moves its jobs, so its start shows as a change). */
let drainsRequest = 0;
let drainsTimer = 0;
async function loadDrains(): Promise<void> {
  const current = token;
  const here = ui.cluster.value;
  if (!current || !here) return;
  const mine = ++drainsRequest;
  try {
    const data = await query(current, ScheduleDrainsDocument, { clusterId: here });
    if (mine !== drainsRequest) return;
    view?.setDrains(data.drains);
    const shown = data.drains.filter((d) => d.state !== "ENDED");
    ui.drains.hidden = shown.length === 0;
    ui.drainsList.innerHTML = shown
      .map((d) => {
        const what = d.node ? `node ${esc(d.node)}` : "the whole cluster";
        const end = d.state === "DRAINING" ? (d.estimatedEnd ? `, drained by ${esc(absolute(Date.parse(d.estimatedEnd)))}` : ", end not yet known") : "";
        const left = d.remaining ? ` · ${d.remaining} job(s) still there` : "";
        return `<li data-drain="${esc(d.id)}"><strong>${what}</strong> ${esc(lower(d.state))}${end}${left} <span class="muted">${esc(d.reason)}</span></li>`;
      })
      .join("");
  } catch (error) {
    if (mine !== drainsRequest) return;
    if (error instanceof AuthError) return forgetToken(error.message);
  }
}

/** The picked cluster's scaling steps: a line each on the timeline, and the last few listed.
 * Read when the drains are (a step starts or stops replicas, so it shows as a change). */
let scalingRequest = 0;
const SCALING_LISTED = 8;
async function loadScaling(): Promise<void> {
  const current = token;
  const here = ui.cluster.value;
  if (!current || !here) return;
  const mine = ++scalingRequest;
  try {
    const data = await query(current, ScheduleScalingStepsDocument, { clusterId: here });
    if (mine !== scalingRequest) return;
    view?.setScalingLines(data.scalingSteps);
    ui.scaling.hidden = data.scalingSteps.length === 0;
    ui.scalingList.innerHTML = data.scalingSteps
      .slice(0, SCALING_LISTED)
      .map(
        (s) =>
          `<li data-scaling="${esc(s.deploymentId)}"><strong>${esc(s.deploymentName)}</strong> ${s.fromReplicas} → ${s.toReplicas} replicas, ${esc(relative(Date.parse(s.at)))} <span class="muted">${esc(s.reason)}</span></li>`,
      )
      .join("");
  } catch (error) {
    if (mine !== scalingRequest) return;
    if (error instanceof AuthError) return forgetToken(error.message);
  }
}

function drainsSoon(): void {
  if (drainsTimer) return;
  drainsTimer = window.setTimeout(() => {
    drainsTimer = 0;
    void loadDrains();
    void loadScaling();
  }, 3_000);
}

let fleetsPolling = false;
window.setInterval(() => {
  if (ui.app.hidden || fleetsPolling) return; // one poll in flight
  fleetsPolling = true;
  void loadFleets().finally(() => {
    fleetsPolling = false;
  });
  void loadDrains();
  void loadScaling();
}, 60_000);

// ---------------------------------------------------------------- boot

const saved = sessionStorage.getItem(TOKEN_KEY);
if (saved) void start(saved);
else showLogin();
