// How numbers, times and sizes read.

const number = new Intl.NumberFormat();
export const count = (n) => number.format(n ?? 0);

export function bytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value.toFixed(value < 10 && unit ? 1 : 0)} ${units[unit]}`;
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "—";
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, "0")}m`;
}

/** A clip's length as a player shows it: 0:07, 1:02:03. */
export function clipLength(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "";
  const s = Math.max(0, Math.round(seconds));
  const parts = [Math.floor(s / 3600), Math.floor((s % 3600) / 60), s % 60];
  const [hours, minutes, rest] = parts;
  const pad = (n) => String(n).padStart(2, "0");
  return hours ? `${hours}:${pad(minutes)}:${pad(rest)}` : `${minutes}:${pad(rest)}`;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
const shortTime = new Intl.DateTimeFormat(undefined, { timeStyle: "medium" });

/** An API timestamp (UTC) in the browser's time zone. */
export function when(value) {
  if (!value) return "—";
  const date = new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : `${value}Z`);
  if (Number.isNaN(date.getTime())) return value;
  const today = new Date().toDateString() === date.toDateString();
  return today ? shortTime.format(date) : dateTime.format(date);
}

/** A capture time as the camera saw it (local wall-clock time): shown as written. */
export function localTime(value) {
  if (!value) return "Unknown date";
  const [day, time = ""] = String(value).split("T");
  return `${day} ${time.slice(0, 8)}`.trim();
}

export function elapsed(start, end) {
  if (!start) return null;
  const from = new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(start) ? start : `${start}Z`);
  const to = end ? new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(end) ? end : `${end}Z`) : new Date();
  return (to - from) / 1000;
}

export const shortId = (id) => String(id).slice(0, 8);

// Every media.capture_time.SOURCES value, in its order of precedence.
const SOURCES = {
  user: "Set by you",
  xmp_sidecar: "XMP sidecar (an editor's)",
  exif_original: "EXIF DateTimeOriginal",
  xmp_original: "XMP DateTimeOriginal",
  xmp_date_created: "XMP DateCreated",
  iptc_date_created: "IPTC DateCreated",
  makernote: "Camera maker note",
  avchd: "AVCHD stream date",
  exif_digitized: "EXIF CreateDate (digitized)",
  xmp_create_date: "XMP CreateDate",
  quicktime_local: "QuickTime local date",
  gps: "GPS time",
  quicktime_utc: "QuickTime creation time (UTC)",
  filename: "File name",
  takeout: "Google Takeout JSON (UTC)",
  mtime: "File modification time",
};
export const takenSource = (source) => SOURCES[source] || source || "Unknown";

export const plural = (n, one, many = `${one}s`) => `${count(n)} ${n === 1 ? one : many}`;
