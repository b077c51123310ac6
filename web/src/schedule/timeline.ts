// The Gantt view on vis-timeline: one row (group) per GPU, nested under its node, plus the CPU
// pool; one item per (segment, row). Changes are queued and written to the DataSets once per
// animation frame (one remove + one update), so a burst of diffs costs one redraw.
import { DataSet } from "vis-data/esnext";
import { Timeline, type DataGroup, type DataItem, type TimelineOptions } from "vis-timeline/esnext";
import { esc } from "./format";
import { batchItemChanges, invalidateRowLayout, patchVisTimeline } from "./vis-patches";
import type { Change, Row, ScheduleModel, Segment } from "./model";

export interface Filters {
  jobType: string;
  priority: string;
  gpuType: string;
}

interface Group extends DataGroup {
  order: number;
  treeLevel: number;
}

interface Item extends DataItem {
  id: string;
  group: string;
  start: number;
  end: number;
  "segment-id"?: string;
  "job-id"?: string;
  kind?: string;
  /** On a start-window band: the segment whose window it is. */
  "window-of"?: string;
  /** On a drain's band: the drain. */
  "drain-of"?: string;
}

/** A drain as the page draws it: a band on the rows of its node (every row: its cluster). */
export interface DrainBand {
  id: string;
  node?: string | null;
  reason: string;
  state: string;
  startedAt: string;
  estimatedEnd?: string | null;
  endedAt?: string | null;
}

/** A step a deployment's autoscaler took, as the page draws it: a line at its time. */
export interface ScalingMark {
  deploymentId: string;
  deploymentName: string;
  at: string;
  fromReplicas: number;
  toReplicas: number;
  reason: string;
}

const SEP = "\u001f";
const MINUTE = 60_000;
const CPU_ROW = "cpu";
/** The narrowest view (vis-timeline's zoomMin); fitting never zooms closer. */
const ZOOM_MIN = 5 * MINUTE;

export function segmentOf(itemId: string): string {
  const cut = itemId.indexOf(SEP);
  return cut < 0 ? itemId : itemId.slice(0, cut);
}

export function passesFilters(segment: { jobType?: string | null; priority?: string | null }, filters: Filters): boolean {
  if (filters.jobType && segment.jobType !== filters.jobType) return false;
  if (filters.priority && segment.priority !== filters.priority) return false;
  return true;
}

export class TimelineView {
  readonly timeline: Timeline;
  private readonly items = new DataSet<Item, "id">();
  private readonly groups = new DataSet<Group, "id">();
  /** The item ids each segment has (as they will be once pending changes are written). */
  private readonly segmentItems = new Map<string, string[]>();
  private drainItems: string[] = [];
  private drains: DrainBand[] = [];
  private pending = new Map<string, Item | null>();
  private clearPending = false;
  private frame = 0;
  private rangeKey = "";
  private range = { start: 0, end: 0 };
  private filters: Filters = { jobType: "", priority: "", gpuType: "" };
  /** Called after pending changes were written (the redraw follows in vis-timeline's own tick). */
  onFlush: (writtenMs: number) => void = () => {};
  /** Called after a redraw that includes every change applied so far. */
  onRedraw: () => void = () => {};

  constructor(container: HTMLElement, private readonly model: ScheduleModel) {
    patchVisTimeline();
    const now = Date.now();
    const options: TimelineOptions = {
      stack: false,
      groupHeightMode: "auto",
      orientation: { axis: "top", item: "top" },
      margin: { item: { horizontal: 0, vertical: 2 }, axis: 2 },
      verticalScroll: true,
      horizontalScroll: false,
      zoomKey: "ctrlKey",
      maxHeight: Math.max(300, container.clientHeight || 600),
      height: Math.max(300, container.clientHeight || 600),
      zoomMin: ZOOM_MIN,
      zoomMax: 8 * 24 * 60 * MINUTE,
      showCurrentTime: true,
      selectable: true,
      multiselect: true,
      editable: false,
      showTooltips: false,
      groupOrder: "order",
      xss: { disabled: true },
      dataAttributes: ["segment-id", "job-id", "kind", "window-of", "drain-of"],
      tooltip: { followMouse: false },
    } as TimelineOptions;
    this.timeline = new Timeline(container, this.items as never, this.groups as never, options);
    this.groups.on("*", () => invalidateRowLayout());
    this.timeline.on("changed", () => {
      // A redraw that shows everything applied so far (none waiting for the next frame).
      if (!this.frame && !this.clearPending && this.pending.size === 0) this.onRedraw();
    });
    // Not via the start/end options: with those, vis-timeline stays hidden until a range change.
    this.timeline.setWindow(now - 6 * 60 * MINUTE, now + 24 * 60 * MINUTE, { animation: false });
    const resize = new ResizeObserver(() => {
      const h = Math.max(300, container.clientHeight);
      this.timeline.setOptions({ maxHeight: h, height: h } as TimelineOptions);
    });
    resize.observe(container);
  }

  get itemCount(): number {
    return this.items.length;
  }

  private budgetLines = new Set<string>();

  /** A red line where each budget is expected to be spent (`Query.budgets`), titled so (its
   * element has the class `budget-<project id or tenant>`); the lines from the last call are
   * replaced. */
  setBudgetLines(lines: { id: string; at: Date; title: string }[]): void {
    for (const id of this.budgetLines) this.timeline.removeCustomTime(id);
    this.budgetLines.clear();
    for (const line of lines) {
      const id = `budget-${line.id}`;
      this.timeline.addCustomTime(line.at, id);
      this.timeline.setCustomTimeTitle(line.title, id);
      this.budgetLines.add(id);
    }
  }

  private scalingLines = new Set<string>();

  /** A blue line where a deployment scaled itself (`Query.scalingSteps`), titled with its
   * replicas before and after and why; the lines from the last call are replaced. */
  setScalingLines(steps: ScalingMark[]): void {
    for (const id of this.scalingLines) this.timeline.removeCustomTime(id);
    this.scalingLines.clear();
    for (const step of steps) {
      const at = Date.parse(step.at);
      const id = `scaling-${step.deploymentId}-${at}`;
      if (Number.isNaN(at) || this.scalingLines.has(id)) continue;
      this.timeline.addCustomTime(new Date(at), id);
      this.timeline.setCustomTimeTitle(`${step.deploymentName}: ${step.fromReplicas} → ${step.toReplicas} replicas (${step.reason})`, id);
      this.scalingLines.add(id);
    }
  }

  /** A new subscription window: bound zooming and panning to it, and show it whole after
   * `forgetRange` (a range or cluster the user picked) or when the whole previous one was shown;
   * a view the user zoomed or fitted stays as it is when the range slides with the clock. */
  setRange(start: number, end: number): void {
    const key = `${start}:${end}`;
    if (key === this.rangeKey || !(end > start)) return;
    const showWhole = this.rangeKey === "" || this.showsWholeRange();
    this.rangeKey = key;
    this.range = { start, end };
    const span = end - start;
    this.timeline.setOptions({ min: start - span * 0.05, max: end + span * 0.05, zoomMax: span * 1.1 } as TimelineOptions);
    if (showWhole) this.showWholeRange();
  }

  /** The next range set is shown whole. */
  forgetRange(): void {
    this.rangeKey = "";
  }

  showWholeRange(): void {
    if (this.range.end > this.range.start) this.timeline.setWindow(this.range.start, this.range.end, { animation: false });
  }

  /** Zooms to the work shown (running and queued blocks, and queued jobs' start windows) with a
   * small margin, not closer than ZOOM_MIN. With `onlyUnder`, only when that view is narrower
   * than that share of the range. False when there is no such work or the view was left as is. */
  fitToWork(onlyUnder = Infinity): boolean {
    const work = this.workSpan();
    if (!work) return false;
    const margin = Math.max(0.05 * (work.end - work.start), 30_000);
    let start = work.start - margin;
    let end = work.end + margin;
    if (end - start < ZOOM_MIN) {
      const middle = (start + end) / 2;
      start = middle - ZOOM_MIN / 2;
      end = middle + ZOOM_MIN / 2;
    }
    if (end - start >= onlyUnder * (this.range.end - this.range.start)) return false;
    this.timeline.setWindow(start, end, { animation: false });
    return true;
  }

  /** Centres the view on now, keeping its width (as far as the range's bounds allow). */
  centreOnNow(): void {
    const shown = this.timeline.getWindow();
    const half = (shown.end.getTime() - shown.start.getTime()) / 2;
    const now = Date.now();
    this.timeline.setWindow(now - half, now + half, { animation: false });
  }

  setFilters(filters: Filters): void {
    const gpuChanged = filters.gpuType !== this.filters.gpuType;
    const blocksChanged = filters.jobType !== this.filters.jobType || filters.priority !== this.filters.priority;
    this.filters = { ...filters };
    if (gpuChanged) this.applyRowVisibility();
    if (blocksChanged) this.rebuildAll();
  }

  /** Applies what the model changed; DataSet writes happen on the next animation frame. */
  apply(change: Change): void {
    if (change.rowsChanged) this.rebuildGroups();
    if (change.snapshot || change.rowsChanged) {
      // New rows (a node joined or left) re-attach every item to the rebuilt groups.
      if (change.snapshot) this.setRange(this.model.rangeStart, this.model.rangeEnd);
      this.rebuildAll();
      return;
    }
    for (const id of change.removed) this.dropSegment(id);
    for (const segment of change.upserted) this.putSegment(segment);
    this.schedule();
  }

  /** Drains as bands on the rows they cover, from their start to their end (undrained), or
   * while on to the range's end (the node stays cordoned until undrained); the title says when
   * it is expected to be drained. */
  setDrains(drains: DrainBand[]): void {
    this.drains = drains;
    this.putDrains();
    this.schedule();
  }

  private putDrains(): void {
    for (const id of this.drainItems) this.setPending(id, null);
    this.drainItems = [];
    for (const d of this.drains) {
      const start = Date.parse(d.startedAt);
      let end = d.endedAt ? Date.parse(d.endedAt) : Math.max(this.model.rangeEnd, Date.now());
      if (Number.isNaN(start) || Number.isNaN(end)) continue;
      if (end <= start) end = start + MINUTE;
      const expected = d.estimatedEnd ? ` · drained by ${new Date(d.estimatedEnd).toLocaleTimeString()}` : "";
      const title = `${d.node ? `node ${d.node}` : "cluster"} ${d.state.toLowerCase()}: ${d.reason}${d.state === "DRAINING" ? expected : ""}`;
      for (const row of this.model.rows) {
        if (d.node != null && row.node !== d.node) continue;
        const id = `drain${SEP}${d.id}${SEP}${row.id}`;
        this.drainItems.push(id);
        this.setPending(id, {
          id,
          group: row.id,
          start,
          end,
          content: "",
          title: esc(title),
          className: `drain ${d.state.toLowerCase()}`,
          type: "background",
          "drain-of": d.id,
        });
      }
    }
  }

  /** The item ids of a job's segments (those currently drawn). */
  itemsOfJob(jobId: string): string[] {
    const ids: string[] = [];
    for (const segment of this.model.segments.values()) {
      if (segment.jobId === jobId) {
        for (const id of this.segmentItems.get(segment.id) ?? []) if (!id.endsWith(`${SEP}w`)) ids.push(id);
      }
    }
    return ids;
  }

  /** Writes pending changes now (the benchmark and tests may call it; normally rAF does). */
  flush(): void {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    const t0 = performance.now();
    if (this.clearPending) {
      this.clearPending = false;
      const all: Item[] = [];
      for (const item of this.pending.values()) if (item) all.push(item);
      this.pending = new Map();
      batchItemChanges(() => {
        this.items.clear();
        this.items.add(all);
      });
    } else if (this.pending.size) {
      const removes: string[] = [];
      const updates: Item[] = [];
      for (const [id, item] of this.pending) {
        if (item) updates.push(item);
        else removes.push(id);
      }
      this.pending = new Map();
      batchItemChanges(() => {
        if (removes.length) this.items.remove(removes);
        if (updates.length) this.items.update(updates);
      });
    }
    this.onFlush(performance.now() - t0);
  }

  private showsWholeRange(): boolean {
    const shown = this.timeline.getWindow();
    const slack = 0.01 * (this.range.end - this.range.start);
    return Math.abs(shown.start.getTime() - this.range.start) <= slack && Math.abs(shown.end.getTime() - this.range.end) <= slack;
  }

  /** From the earliest start to the latest end of the running and estimated segments that pass
   * the filters (an open end counts as now), within the range; null when there are none. */
  private workSpan(): { start: number; end: number } | null {
    const now = Date.now();
    const gpuType = this.filters.gpuType;
    const rowGpu = gpuType ? new Map(this.model.rows.map((r) => [r.id, r.gpuType])) : null;
    let start = Infinity;
    let end = -Infinity;
    for (const segment of this.model.segments.values()) {
      if (segment.kind !== "RUNNING" && segment.kind !== "ESTIMATED") continue;
      if (!passesFilters(segment, this.filters)) continue;
      if (!segment.rows.some((row) => this.model.rowIds.has(row) && (rowGpu == null || rowGpu.get(row) === gpuType))) continue;
      const from = segment.start != null ? Date.parse(segment.start) : this.range.start;
      const to = segment.end != null ? Date.parse(segment.end) : Math.max(from, now);
      const earliest = segment.earliestStart != null ? Date.parse(segment.earliestStart) : NaN;
      const latest = segment.latestStart != null ? Date.parse(segment.latestStart) : NaN;
      for (const t of [from, earliest]) if (!Number.isNaN(t)) start = Math.min(start, t);
      for (const t of [to, latest]) if (!Number.isNaN(t)) end = Math.max(end, t);
    }
    start = Math.max(start, this.range.start);
    end = Math.min(end, this.range.end);
    return end >= start ? { start, end } : null;
  }

  private schedule(): void {
    if (!this.frame) this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.flush();
    });
  }

  private rebuildAll(): void {
    this.segmentItems.clear();
    this.pending = new Map();
    this.clearPending = true;
    for (const segment of this.model.segments.values()) this.putSegment(segment);
    this.drainItems = [];
    this.putDrains();
    this.schedule();
  }

  private dropSegment(segmentId: string): void {
    const old = this.segmentItems.get(segmentId);
    if (!old) return;
    this.segmentItems.delete(segmentId);
    for (const id of old) this.setPending(id, null);
  }

  private setPending(id: string, item: Item | null): void {
    if (this.clearPending) {
      if (item) this.pending.set(id, item);
      else this.pending.delete(id);
    } else {
      this.pending.set(id, item);
    }
  }

  private putSegment(segment: Segment): void {
    const old = this.segmentItems.get(segment.id);
    const next = passesFilters(segment, this.filters) ? this.itemsFor(segment) : [];
    const ids = next.map((item) => item.id);
    if (old) {
      for (const id of old) if (!ids.includes(id)) this.setPending(id, null);
    }
    if (ids.length) this.segmentItems.set(segment.id, ids);
    else this.segmentItems.delete(segment.id);
    for (const item of next) this.setPending(item.id, item);
  }

  private itemsFor(segment: Segment): Item[] {
    const rangeEnd = this.model.rangeEnd;
    const start = segment.start != null ? Date.parse(segment.start) : this.model.rangeStart;
    const open = segment.end == null;
    let end = open ? Math.max(rangeEnd, start + MINUTE) : Date.parse(segment.end as string);
    if (Number.isNaN(start) || Number.isNaN(end)) return [];
    if (end <= start) end = start + MINUTE;
    const kind = segment.kind.toLowerCase();
    let className = `k-${kind}`;
    if (!segment.mine) className += " other";
    if (open) className += " open";
    if (segment.priority) className += ` p-${segment.priority.toLowerCase()}`;
    const name = segment.mine ? segment.name : "another tenant";
    const content = esc(name);
    const jobId = segment.mine ? segment.jobId ?? "" : "";
    const earliest = segment.kind === "ESTIMATED" && segment.earliestStart != null ? Date.parse(segment.earliestStart) : NaN;
    let latest = NaN;
    if (!Number.isNaN(earliest)) latest = segment.latestStart != null ? Date.parse(segment.latestStart) : Math.max(rangeEnd, earliest + MINUTE);
    const items: Item[] = [];
    for (const row of segment.rows) {
      if (!this.model.rowIds.has(row)) continue;
      items.push({
        id: `${segment.id}${SEP}${row}`,
        group: row,
        start,
        end,
        content,
        className,
        type: "range",
        "segment-id": segment.id,
        "job-id": jobId,
        kind: segment.kind,
      });
      if (!Number.isNaN(earliest) && latest >= earliest) {
        // A window of no width (or narrower than a pixel) is drawn too: the band has a minimum width.
        items.push({
          id: `${segment.id}${SEP}${row}${SEP}w`,
          group: row,
          start: earliest,
          end: latest,
          content: "",
          className: segment.latestStart == null ? "window open-window" : "window",
          type: "background",
          "window-of": segment.id,
        });
      }
    }
    return items;
  }

  private rebuildGroups(): void {
    const groups: Group[] = [];
    const byNode = new Map<string, Group & { nestedGroups: string[] }>();
    let order = 0;
    let cpuRows: Row[] = [];
    for (const row of this.model.rows) {
      if (row.id === CPU_ROW || row.node == null) {
        cpuRows.push(row);
        continue;
      }
      let node = byNode.get(row.node);
      if (node === undefined) {
        node = { id: `node${SEP}${row.node}`, content: `<span class="node-name">${esc(row.node)}</span>`, nestedGroups: [], showNested: true, order: order++, treeLevel: 1, className: "node" };
        byNode.set(row.node, node);
        groups.push(node);
      }
      node.nestedGroups.push(row.id);
      const label = `gpu ${row.gpuIndex ?? "?"} · ${esc(row.gpuType ?? "unknown")}`;
      groups.push({ id: row.id, content: label, order: order++, treeLevel: 2, className: "gpu" });
    }
    if (cpuRows.length) {
      groups.push({ id: `pool${SEP}cpu`, content: '<span class="node-name">CPU pool</span>', nestedGroups: cpuRows.map((r) => r.id), showNested: true, order: order++, treeLevel: 1, className: "node" });
      for (const row of cpuRows) groups.push({ id: row.id, content: row.id === CPU_ROW ? "cpu" : esc(row.id), order: order++, treeLevel: 2, className: "cpu" });
    }
    cpuRows = [];
    this.groups.clear();
    this.groups.add(groups);
    this.applyRowVisibility();
  }

  private applyRowVisibility(): void {
    const wanted = this.filters.gpuType;
    const updates: Array<{ id: string; visible: boolean }> = [];
    const nodeVisible = new Map<string, boolean>();
    for (const row of this.model.rows) {
      const visible = !wanted || row.gpuType === wanted;
      updates.push({ id: row.id, visible });
      const parent = row.id === CPU_ROW || row.node == null ? `pool${SEP}cpu` : `node${SEP}${row.node}`;
      nodeVisible.set(parent, (nodeVisible.get(parent) ?? false) || visible);
    }
    for (const [id, visible] of nodeVisible) updates.push({ id, visible });
    const changed = updates.filter((g) => {
      const current = this.groups.get(g.id);
      return current != null && (current.visible ?? true) !== g.visible;
    });
    if (changed.length) this.groups.update(changed as Partial<Group>[] as Group[]);
  }
}
