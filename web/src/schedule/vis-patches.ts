// Targeted patches to vis-timeline 8.5 for a timeline of ~1,100 rows (groups), applied once to
// the classes it exports as `timeline.components`. vis-timeline itself has no virtualisation of
// rows; without these, with 125 nodes × 8 GPUs:
// - Group.add and Item.setData render an item at once (even in rows scrolled out of view), and
//   each render measures the item's DOM: a forced layout per item. A day's snapshot took over
//   two minutes, every diff hundreds of milliseconds.
// - Every DataSet event redrew the whole timeline synchronously (ItemSet's item listeners call
//   redraw), besides the redraw it queues for the next frame: an update that adds and changes
//   items and a remove meant three full redraws in a row.
// - Every DataSet change re-sorted the items of every row (ItemSet._order → Group.order).
// - Every redraw re-sorted all groups (ItemSet._orderGroups) and read and wrote the DOM of every
//   row (offsetTop/Left/Width twice, clientWidth/Height, marker height, three style.height
//   writes): ~25 ms a redraw, and a stream of diffs redraws several times a second.
// The patches let DataSet writes made through `batchItemChanges` skip the synchronous redraws
// and leave the rendering to the redraw queued for the next frame (it renders a
// row's new and changed items in one batch: all DOM writes, then all reads), sort a row's items
// when it next reads them (only rows that changed do), keep the group order while the groups
// DataSet does not change, and skip rows that were and stay out of view and did not change: their
// position and height are those measured at the last full pass. A full pass runs whenever the
// groups change (rows added, filtered, a node collapsed) or any row's size changed.
// If a vis-timeline upgrade renames these internals, the patches switch themselves off (the page
// keeps working, slower): see `patchVisTimeline`.
import * as vis from "vis-timeline/esnext";

type Queue = Array<() => unknown>;
interface Range {
  start: number;
  end: number;
}
interface GroupInternal {
  height?: number;
  isVisible?: boolean;
  stackDirty?: boolean;
  visibleItems?: unknown[];
  _checkIfVisible?: unknown;
  _isGroupVisible(range: Range, margin: unknown): boolean;
  budOrderDirty?: boolean;
  budOrdered?: unknown;
}
interface ItemInternal {
  displayed: boolean;
  parent: unknown;
  hide(): void;
}
interface GroupPrototype {
  add(this: GroupInternal, item: ItemInternal): void;
  order(this: GroupInternal): void;
  redraw(this: GroupInternal, range: Range, margin: unknown, forceRestack: boolean, returnQueue?: boolean): Queue | boolean;
  _isGroupVisible?: unknown;
}
interface ItemSetPrototype {
  redraw(this: unknown): boolean;
  _orderGroups(this: unknown): boolean;
}
interface VisInternals {
  components?: {
    Group?: { prototype: GroupPrototype };
    ItemSet?: { prototype: ItemSetPrototype };
    items?: { Item?: { prototype: { setData(this: ItemInternal, data: unknown): void } } };
  };
}

let patched = false;
let active = false;
/** Redraws left that must visit every row (positions may have moved). */
let fullPasses = 2;
/** Bumped whenever the groups DataSet changes; the group order is kept while it does not. */
let groupsVersion = 0;

/** Inside batchItemChanges: ItemSet.redraw calls from the DataSet listeners are skipped. */
let batching = false;

/** Writes to the items DataSet without a synchronous redraw per DataSet event; vis-timeline's
 * own redraw, queued for the next animation frame by the same events, draws the result. */
export function batchItemChanges(write: () => void): void {
  if (!patched || !active) {
    write();
    return;
  }
  batching = true;
  try {
    write();
  } finally {
    batching = false;
  }
}

/** The rows changed (added, removed, hidden, collapsed): measure every row again. */
export function invalidateRowLayout(): void {
  groupsVersion++;
  fullPasses = Math.max(fullPasses, 2);
}

export function patchVisTimeline(): boolean {
  if (patched) return true;
  patched = true;
  const internals = (vis as unknown as { timeline?: VisInternals }).timeline?.components;
  const group = internals?.Group?.prototype;
  const itemSet = internals?.ItemSet?.prototype;
  const item = internals?.items?.Item?.prototype;
  const functions = [group?.add, group?.order, group?.redraw, group?._isGroupVisible, itemSet?.redraw, itemSet?._orderGroups, item?.setData];
  if (!group || !itemSet || !item || functions.some((f) => typeof f !== "function")) {
    console.warn("budcluster: vis-timeline internals changed; running without the large-timeline patches");
    return false;
  }

  // 1. Adding an item to a row: no immediate render; the row's restack renders it.
  const add = group.add;
  const skip = (): void => {};
  group.add = function (added) {
    this._checkIfVisible = skip;
    try {
      add.call(this, added);
    } finally {
      delete this._checkIfVisible;
    }
  };

  // 2. Updating a shown item: take it off the DOM; the row's restack renders it again.
  const setData = item.setData;
  item.setData = function (data) {
    if (this.displayed && this.parent) this.hide();
    setData.call(this, data);
  };

  // 3. Sort a row's items when they are next read, not after every change. (ItemSet._order still
  //    visits every group after each change, but Group.order only marks it.)
  const order = group.order;
  Object.defineProperty(group, "orderedItems", {
    configurable: true,
    get(this: GroupInternal): unknown {
      if (this.budOrderDirty) {
        this.budOrderDirty = false;
        order.call(this);
      }
      return this.budOrdered;
    },
    set(this: GroupInternal, value: unknown) {
      this.budOrdered = value;
    },
  });
  group.order = function () {
    this.budOrderDirty = true;
  };

  // 4. Keep the group order while the groups do not change.
  const orderGroups = itemSet._orderGroups;
  let orderedVersion = -1;
  itemSet._orderGroups = function () {
    if (orderedVersion === groupsVersion) return false;
    orderedVersion = groupsVersion;
    return orderGroups.call(this);
  };

  // 5. Rows that were and stay out of view, with no changed items: nothing to do.
  const redraw = group.redraw;
  let queueLength = 0;
  let idle: Queue = [];
  group.redraw = function (range, margin, forceRestack, returnQueue) {
    if (
      returnQueue &&
      fullPasses === 0 &&
      queueLength > 0 &&
      this.height !== undefined &&
      !this.isVisible &&
      !this.stackDirty &&
      (this.visibleItems?.length ?? 0) === 0 &&
      !this._isGroupVisible(range, margin)
    ) {
      return idle;
    }
    const result = redraw.call(this, range, margin, forceRestack, returnQueue);
    if (returnQueue && Array.isArray(result) && result.length > 0) {
      if (queueLength !== result.length) {
        queueLength = result.length;
        idle = Array.from({ length: queueLength }, () => () => false);
      }
      const resized = result[result.length - 1];
      result[result.length - 1] = () => {
        const changed = resized();
        if (changed) fullPasses = Math.max(fullPasses, 2);
        return changed;
      };
    }
    return result;
  };
  const itemSetRedraw = itemSet.redraw;
  itemSet.redraw = function () {
    if (batching) return false;
    const before = fullPasses;
    const resized = itemSetRedraw.call(this);
    if (before > 0 && fullPasses === before) fullPasses--;
    return resized;
  };
  active = true;
  return true;
}
