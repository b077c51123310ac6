// Small formatting helpers: escaping, times relative to now, absolute times.

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function esc(text: string | null | undefined): string {
  return text == null ? "" : String(text).replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

export function ms(iso: string | null | undefined): number | null {
  if (iso == null) return null;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : t;
}

const ABSOLUTE = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  hourCycle: "h23",
});
const SHORT = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
const SECONDS = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" });

export function absolute(t: number | null): string {
  return t == null ? "—" : ABSOLUTE.format(t);
}

function today(t: number): boolean {
  return new Date(t).toDateString() === new Date().toDateString();
}

export function shortTime(t: number | null): string {
  if (t == null) return "—";
  return today(t) ? SHORT.format(t) : ABSOLUTE.format(t).replace(/:\d\d$/, "");
}

/** As shortTime, with the seconds. */
export function preciseTime(t: number): string {
  return today(t) ? SECONDS.format(t) : ABSOLUTE.format(t);
}

export function relative(t: number | null, now = Date.now()): string {
  if (t == null) return "unknown";
  const delta = t - now;
  const abs = Math.abs(delta);
  let text: string;
  if (abs < 45_000) return delta >= 0 ? "now" : "just now";
  if (abs < 90 * 60_000) text = `${Math.round(abs / 60_000)} min`;
  else if (abs < 48 * 3_600_000) text = `${(abs / 3_600_000).toFixed(abs < 10 * 3_600_000 ? 1 : 0)} h`;
  else text = `${Math.round(abs / 86_400_000)} d`;
  return delta >= 0 ? `in ${text}` : `${text} ago`;
}

/** A start window: "21:20 – 21:45"; one narrower than its minutes shows the seconds, and one of
 * no width reads as the moment it is ("at 21:21:05"), never as an empty range. */
export function windowText(earliest: number | null, latest: number | null): string {
  if (earliest == null) return "—";
  if (latest == null) return `${shortTime(earliest)} – open`;
  if (Math.abs(latest - earliest) < 1000) return `at ${preciseTime(earliest)}`;
  const from = shortTime(earliest);
  const to = shortTime(latest);
  return from === to ? `${preciseTime(earliest)} – ${preciseTime(latest)}` : `${from} – ${to}`;
}

export function lower(text: string | null | undefined): string {
  return text == null ? "—" : text.toLowerCase();
}

/** An amount of the API's cost unit (Decimal strings), to the cent; "—" when there is none. */
export function money(amount: string | null | undefined): string {
  if (amount == null) return "—";
  const value = Number(amount);
  return Number.isFinite(value) ? value.toFixed(2) : amount;
}
