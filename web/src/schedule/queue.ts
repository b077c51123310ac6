// The queue table beside the timeline: one row per waiting job, in the estimator's order.
import { absolute, esc, lower, ms, relative, windowText } from "./format";
import type { QueueEntry } from "./model";
import { passesFilters, type Filters } from "./timeline";

export function gpusText(entry: QueueEntry): string {
  const pods = `${entry.podCount} pod${entry.podCount === 1 ? "" : "s"}`;
  return entry.gpuCount > 0 ? `${entry.gpuCount} × ${entry.gpuType ?? "gpu"} × ${pods}` : `cpu × ${pods}`;
}

export function renderQueue(
  body: HTMLTableSectionElement,
  entries: readonly QueueEntry[],
  filters: Filters,
  selectedJob: string | null,
): number {
  const now = Date.now();
  const html: string[] = [];
  let shown = 0;
  for (const entry of entries) {
    if (!passesFilters(entry, filters)) continue;
    if (filters.gpuType && entry.gpuType !== filters.gpuType) continue;
    shown++;
    const start = ms(entry.estimatedStart);
    const name = entry.mine ? entry.name : "another tenant";
    const meta = entry.mine ? `${lower(entry.jobType)} · ${lower(entry.priority)}` : lower(entry.priority);
    const warnings = entry.warnings.length
      ? `<ul class="warnings">${entry.warnings.map((w) => `<li>${esc(w)}</li>`).join("")}</ul>`
      : "";
    const jobId = entry.mine ? entry.jobId ?? "" : "";
    const classes = [entry.mine ? "mine" : "other", jobId && jobId === selectedJob ? "selected" : ""].filter(Boolean).join(" ");
    html.push(
      `<tr data-job-id="${esc(jobId)}" data-position="${entry.position}" class="${classes}" tabindex="0">` +
        `<td class="pos">${entry.position}</td>` +
        `<td class="job"><div class="name">${esc(name)}</div><div class="meta">${esc(meta)}</div></td>` +
        `<td class="gpus">${esc(gpusText(entry))}</td>` +
        `<td class="when" title="${esc(absolute(start))}">${esc(relative(start, now))}</td>` +
        `<td class="window">${esc(windowText(ms(entry.earliestStart), ms(entry.latestStart)))}</td>` +
        `<td class="reason">${esc(entry.reason)}${warnings}</td>` +
        "</tr>",
    );
  }
  body.innerHTML = html.join("");
  return shown;
}
