// The schedule as the page knows it: rows, segments by id, the queue and the last sequence.
// Applies the stream contract: a Schedule replaces everything, a ScheduleDiff upserts
// added + moved by id, deletes removed ids (unknown ones ignored) and replaces the queue
// when queueUpdate is non-null.
import type {
  ScheduleTimelineSubscription,
  SegmentFragment,
  WaitingFragment,
} from "../../../frontend-contract/types/graphql";

export type Update = ScheduleTimelineSubscription["scheduleTimeline"];
export type ScheduleMessage = Extract<Update, { __typename: "Schedule" }>;
export type DiffMessage = Extract<Update, { __typename: "ScheduleDiff" }>;
export type Segment = SegmentFragment;
export type QueueEntry = WaitingFragment;
export interface Row {
  id: string;
  node?: string | null;
  gpuIndex?: number | null;
  gpuType?: string | null;
}

/** What one applied message changed, for the views. */
export interface Change {
  snapshot: boolean;
  rowsChanged: boolean;
  /** Segments added or moved (upserted), by id. */
  upserted: Segment[];
  /** Ids of segments that were removed (and known). */
  removed: string[];
  queueChanged: boolean;
  /** Row ids referenced by segments but not in the rows list. */
  unknownRows: string[];
}

export class ScheduleModel {
  rows: Row[] = [];
  rowIds = new Set<string>();
  segments = new Map<string, Segment>();
  queue: QueueEntry[] = [];
  sequence: number | null = null;
  rangeStart = 0;
  rangeEnd = 0;
  private rowSignature = "";

  reset(): void {
    this.rows = [];
    this.rowIds.clear();
    this.segments.clear();
    this.queue = [];
    this.sequence = null;
    this.rowSignature = "";
  }

  apply(message: Update): Change {
    return message.__typename === "Schedule" ? this.applySnapshot(message) : this.applyDiff(message);
  }

  /** Replaces the rows when they differ from the ones held; true when they did. */
  private setRows(rows: readonly Row[]): boolean {
    const signature = rows.map((r) => `${r.id}\u0001${r.node ?? ""}\u0001${r.gpuIndex ?? ""}\u0001${r.gpuType ?? ""}`).join("\u0002");
    if (signature === this.rowSignature) return false;
    this.rowSignature = signature;
    this.rows = rows.map((r) => ({ id: r.id, node: r.node, gpuIndex: r.gpuIndex, gpuType: r.gpuType }));
    this.rowIds = new Set(this.rows.map((r) => r.id));
    return true;
  }

  private applySnapshot(message: ScheduleMessage): Change {
    const rowsChanged = this.setRows(message.rows);
    this.segments = new Map();
    for (const segment of message.segments) this.segments.set(segment.id, segment);
    this.queue = message.queue;
    this.sequence = message.sequence;
    const start = Date.parse(message.start);
    const end = Date.parse(message.end);
    if (!Number.isNaN(start)) this.rangeStart = start;
    if (!Number.isNaN(end)) this.rangeEnd = end;
    return {
      snapshot: true,
      rowsChanged,
      upserted: message.segments,
      removed: [],
      queueChanged: true,
      unknownRows: this.unknownRows(message.segments),
    };
  }

  private applyDiff(message: DiffMessage): Change {
    const removed: string[] = [];
    for (const id of message.removed) {
      if (this.segments.delete(id)) removed.push(id);
    }
    const upserted = message.added.length === 0 ? message.moved : [...message.added, ...message.moved];
    for (const segment of upserted) this.segments.set(segment.id, segment);
    const queueChanged = message.queueUpdate != null;
    if (message.queueUpdate != null) this.queue = message.queueUpdate;
    if (this.sequence == null || message.sequence > this.sequence) this.sequence = message.sequence;
    // A node joined, left or changed its GPUs: the whole new list of rows.
    const rowsChanged = message.rowsUpdate != null && this.setRows(message.rowsUpdate);
    return {
      snapshot: false,
      rowsChanged,
      upserted,
      removed,
      queueChanged,
      unknownRows: this.unknownRows(upserted),
    };
  }

  private unknownRows(segments: readonly Segment[]): string[] {
    let unknown: Set<string> | null = null;
    for (const segment of segments) {
      for (const row of segment.rows) {
        if (!this.rowIds.has(row)) (unknown ??= new Set()).add(row);
      }
    }
    return unknown ? [...unknown] : [];
  }
}
