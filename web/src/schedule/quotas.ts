// The quota pane beside the queue: the cluster's ClusterQueues with Kueue's settings and their
// use, its cohorts as a tree (parent, quotas of their own, weight), and whether the cluster's
// Kueue runs fair sharing. What Kueue does with each setting is in the contract's descriptions.
import type { ClusterQuotasQuery } from "../../../frontend-contract/types/graphql";
import { esc, lower } from "./format";

export type Quotas = NonNullable<ClusterQuotasQuery["cluster"]>;
type Queue = Quotas["clusterQueues"][number];
type Cohort = Quotas["cohorts"][number];
type Group = Cohort["resourceGroups"][number];

/** An enum value as words: LOWER_PRIORITY -> "lower priority". */
export function words(value: string | null | undefined): string {
  return lower(value).replace(/_/g, " ");
}

export function amount(value: number | null | undefined): string {
  if (value == null) return "—";
  return Number.isInteger(value) ? String(value) : String(Number(value.toFixed(3)));
}

function limits(borrowing: number | null | undefined, lending: number | null | undefined): string {
  const parts = [
    borrowing == null ? "" : `borrow ≤ ${amount(borrowing)}`,
    lending == null ? "" : `lend ≤ ${amount(lending)}`,
  ].filter(Boolean);
  return parts.length ? ` <span class="muted">(${esc(parts.join(", "))})</span>` : "";
}

function row(label: string, value: string): string {
  return `<dt>${esc(label)}</dt><dd>${value}</dd>`;
}

function weight(value: number, fairSharing: boolean): string {
  return `${esc(amount(value))}${fairSharing ? "" : ' <span class="muted">(fair sharing off)</span>'}`;
}

export function preemptionText(queue: Queue): string {
  const { withinClusterQueue, reclaimWithinCohort, borrowWithinCohort } = queue.preemption;
  const threshold = borrowWithinCohort.maxPriorityThreshold;
  const borrowing = `${words(borrowWithinCohort.policy)}${threshold == null ? "" : ` (priority ≤ ${threshold})`}`;
  return `in queue: ${words(withinClusterQueue)} · reclaim: ${words(reclaimWithinCohort)} · while borrowing: ${borrowing}`;
}

/** Kueue's flavor search; the preference (which to take when every flavor needs borrowing or
 * preemption) only when one is set: none is Kueue's default, borrowing over preemption. */
export function fungibilityText(queue: Queue): string {
  const { whenCanBorrow, whenCanPreempt, preference } = queue.flavorFungibility;
  const prefers = preference == null ? "" : ` · prefers: ${words(preference)}`;
  return `can borrow: ${words(whenCanBorrow)} · can preempt: ${words(whenCanPreempt)}${prefers}`;
}

function usageLines(queue: Queue): string {
  if (!queue.usage.length) return '<span class="muted">no quota</span>';
  return queue.usage
    .map(
      (u) =>
        `<div class="quota-line"><span class="flavor">${esc(u.flavor)}</span> ${esc(u.resource)}: ` +
        `${esc(amount(u.used))} / ${esc(amount(u.nominalQuota))}${limits(u.borrowingLimit, u.lendingLimit)}</div>`,
    )
    .join("");
}

function groupLines(groups: readonly Group[]): string {
  const lines = groups.flatMap((g) =>
    g.flavors.flatMap((f) =>
      f.resources.map(
        (r) =>
          `<div class="quota-line"><span class="flavor">${esc(f.flavor)}</span> ${esc(r.name)}: ` +
          `${esc(amount(r.nominalQuota))}${limits(r.borrowingLimit, r.lendingLimit)}</div>`,
      ),
    ),
  );
  return lines.length ? lines.join("") : '<span class="muted">none of its own</span>';
}

function queueBlock(queue: Queue, fairSharing: boolean): string {
  const meta = [queue.cohort ? `cohort ${queue.cohort}` : "no cohort", words(queue.queueingStrategy)];
  return (
    `<section class="quota-item" data-queue="${esc(queue.name)}">` +
    `<h3>${esc(queue.name)} <span class="count">${esc(meta.join(" · "))}</span></h3><dl>` +
    row("Preemption", esc(preemptionText(queue))) +
    row("Flavor search", esc(fungibilityText(queue))) +
    row("Fair-sharing weight", weight(queue.fairSharingWeight, fairSharing)) +
    row("Used / quota", usageLines(queue)) +
    "</dl></section>"
  );
}

/** Cohorts as a tree: each root (no parent, or a parent with no Cohort object: an implicit one,
 * listed by its name), then its children, depth first, by name. */
export function cohortTree(cohorts: readonly Cohort[]): { name: string; depth: number; cohort: Cohort | null }[] {
  const known = new Map(cohorts.map((c) => [c.name, c]));
  const children = new Map<string, Cohort[]>();
  const roots = new Set<string>();
  for (const c of cohorts) {
    if (c.parent) {
      children.set(c.parent, [...(children.get(c.parent) ?? []), c]);
      if (!known.has(c.parent)) roots.add(c.parent);
    } else {
      roots.add(c.name);
    }
  }
  const out: { name: string; depth: number; cohort: Cohort | null }[] = [];
  const seen = new Set<string>();
  const visit = (name: string, depth: number): void => {
    if (seen.has(name)) return;
    seen.add(name);
    out.push({ name, depth, cohort: known.get(name) ?? null });
    for (const child of [...(children.get(name) ?? [])].sort((a, b) => a.name.localeCompare(b.name))) visit(child.name, depth + 1);
  };
  for (const name of [...roots].sort()) visit(name, 0);
  for (const c of cohorts) visit(c.name, 0); // a cycle Kueue would refuse to admit into
  return out;
}

function cohortBlock(entry: { name: string; depth: number; cohort: Cohort | null }, quotas: Quotas): string {
  const members = quotas.clusterQueues.filter((q) => q.cohort === entry.name).map((q) => q.name);
  const indent = ` style="margin-left:${entry.depth * 14}px"`;
  const memberText = members.length ? esc(members.join(", ")) : '<span class="muted">none</span>';
  if (!entry.cohort) {
    return (
      `<section class="quota-item cohort implicit" data-cohort="${esc(entry.name)}"${indent}>` +
      `<h3>${esc(entry.name)} <span class="count">implicit: no quotas, no parent</span></h3>` +
      `<dl>${row("Queues", memberText)}</dl></section>`
    );
  }
  const c = entry.cohort;
  return (
    `<section class="quota-item cohort" data-cohort="${esc(c.name)}"${indent}>` +
    `<h3>${esc(c.name)} <span class="count">${esc(c.parent ? `under ${c.parent}` : "root")}</span></h3><dl>` +
    (c.description ? row("Description", esc(c.description)) : "") +
    row("Queues", memberText) +
    row("Own quotas", groupLines(c.resourceGroups)) +
    row("Fair-sharing weight", weight(c.fairSharingWeight, quotas.quotaSettings.fairSharing)) +
    "</dl></section>"
  );
}

export function quotasSummary(quotas: Quotas): string {
  const queues = quotas.clusterQueues.length;
  const cohorts = quotas.cohorts.length;
  return `${queues} queue${queues === 1 ? "" : "s"} · ${cohorts} cohort${cohorts === 1 ? "" : "s"} · fair sharing ${quotas.quotaSettings.fairSharing ? "on" : "off"}`;
}

export function renderQuotas(quotas: Quotas): string {
  const fairSharing = quotas.quotaSettings.fairSharing;
  const note =
    `<p class="quota-note" data-fair-sharing="${fairSharing}">Fair sharing is <strong>${fairSharing ? "on" : "off"}</strong> ` +
    '<span class="muted">(Kueue\'s configuration on the cluster, as recorded here)</span></p>';
  const queues = quotas.clusterQueues.map((q) => queueBlock(q, fairSharing)).join("");
  const tree = cohortTree(quotas.cohorts);
  const cohorts = tree.length
    ? tree.map((entry) => cohortBlock(entry, quotas)).join("")
    : '<p class="empty">No cohorts.</p>';
  return `${note}<h4>Cluster queues</h4>${queues || '<p class="empty">No cluster queues.</p>'}<h4>Cohorts</h4>${cohorts}`;
}
