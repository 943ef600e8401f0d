/**
 * The report a chaos run leaves behind: a timeline picture (throughput by outcome, latency of ok
 * operations, fault intervals shaded), one plain-English paragraph with the numbers behind it, and
 * the files that hold the raw history. Everything except `writeReport` is a pure function of its
 * arguments — no clock, no randomness — so the same history renders byte for byte the same, and a
 * report can be regenerated later from the saved jsonl files.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { FaultRecord, Op, Verdict } from "./history.js";

// ---------------------------------------------------------------------------------------------
// Inputs and outputs

/** What `summarize` needs to know about a finished run. */
export interface ChaosRun {
  durationMs: number;
  nemeses: string[];
  /** Number of voting servers in the ensemble. */
  servers: number;
  /** Non-voting servers (observers) besides them. */
  observers?: number;
  ops: readonly Op[];
  faults: readonly FaultRecord[];
  verdicts: readonly Verdict[];
}

export interface ChaosReportRun extends ChaosRun {
  title: string;
}

export type OpKind = Op["f"];

export interface OutcomeCounts {
  attempted: number;
  ok: number;
  fail: number;
  unknown: number;
}

/** A window of the run, in seconds since it started. */
export interface SecondsWindow {
  startS: number;
  endS: number;
  lengthS: number;
}

/** "inconclusive" when no checker found a violation but at least one could not decide (or none ran). */
export type Validity = "valid" | "invalid" | "inconclusive";

export interface RunStats {
  durationS: number;
  operations: OutcomeCounts;
  /** Unknown operations that never completed: still in flight when the run ended. */
  pendingAtEnd: number;
  /** Only the kinds that occur, in the order of OP_KINDS. */
  byKind: Partial<Record<OpKind, OutcomeCounts>>;
  faultsInjected: number;
  /** In order of each kind's first injection. */
  faultsByKind: Record<string, number>;
  /** Faults a nemesis chose not to inject (see isDeferral), by kind. */
  deferredByKind: Record<string, number>;
  /** The longest stretch with no operation of any kind completing ok. */
  longestUnavailability: SecondsWindow;
  validity: Validity;
  invalidCheckers: string[];
  inconclusiveCheckers: string[];
}

export interface TimeWindowMs {
  startMs: number;
  endMs: number;
}

/** Completions in one slice of the run's time axis. */
export interface Bucket {
  startMs: number;
  /** The last bucket is narrower when durationMs is not a multiple of the bucket width. */
  widthMs: number;
  ok: number;
  fail: number;
  /** Includes `pending`. */
  unknown: number;
  /** Unknowns that never completed; the run's end is when they became unknown, so they land in the last bucket. */
  pending: number;
  /** Of the ok operations that completed in this bucket; absent when there were none. */
  okLatency?: { medianMs: number; maxMs: number };
}

export const DEFAULT_BUCKET_MS = 1_000;

/** Fixed order so per-kind tables read the same from run to run. */
export const OP_KINDS: readonly OpKind[] = [
  "write",
  "cas",
  "read",
  "add",
  "take-id",
  "acquire",
  "use",
  "release",
  "enqueue",
  "dequeue",
  "increment",
  "counter-read",
  "watch-write",
  "watch-read",
  "watch-event",
  "watch-lost",
];

// ---------------------------------------------------------------------------------------------
// Pure computations over the history

/**
 * Counts completions per bucket of `bucketMs` over [0, durationMs). Completions at or after
 * durationMs (stragglers answered while the harness shut down) fall into the last bucket rather
 * than stretching the axis, and negative times into the first.
 */
export function bucketize(ops: readonly Op[], durationMs: number, bucketMs: number = DEFAULT_BUCKET_MS): Bucket[] {
  if (!(Number.isFinite(bucketMs) && bucketMs > 0)) throw new RangeError(`bucketMs must be a positive number, got ${bucketMs}`);
  const count = Math.max(1, Math.ceil(durationMs / bucketMs));
  const buckets = emptyBuckets(count, durationMs, bucketMs);
  const latencies: number[][] = buckets.map(() => []);
  for (const op of ops) {
    const index = op.completedAt === undefined ? count - 1 : bucketIndexOf(op.completedAt, bucketMs, count);
    const bucket = buckets[index]!;
    bucket[op.outcome] += 1;
    if (op.outcome === "unknown" && op.completedAt === undefined) bucket.pending += 1;
    if (op.outcome === "ok" && op.completedAt !== undefined) latencies[index]!.push(latencyOf(op, op.completedAt));
  }
  buckets.forEach((bucket, i) => {
    const summary = latencySummary(latencies[i]!);
    if (summary !== undefined) bucket.okLatency = summary;
  });
  return buckets;
}

function emptyBuckets(count: number, durationMs: number, bucketMs: number): Bucket[] {
  return Array.from({ length: count }, (_, i) => {
    const startMs = i * bucketMs;
    const remainingMs = durationMs - startMs;
    const widthMs = remainingMs > 0 ? Math.min(bucketMs, remainingMs) : bucketMs;
    return { startMs, widthMs, ok: 0, fail: 0, unknown: 0, pending: 0 };
  });
}

function bucketIndexOf(timeMs: number, bucketMs: number, count: number): number {
  return Math.min(count - 1, Math.max(0, Math.floor(timeMs / bucketMs)));
}

/** Clamped at zero: one monotonic clock should never run backwards, but a report must not draw nonsense if it did. */
function latencyOf(op: Op, completedAt: number): number {
  return Math.max(0, completedAt - op.invokedAt);
}

function latencySummary(latencies: number[]): { medianMs: number; maxMs: number } | undefined {
  if (latencies.length === 0) return undefined;
  const sorted = [...latencies].sort((a, b) => a - b);
  return { medianMs: median(sorted), maxMs: sorted[sorted.length - 1]! };
}

function median(sorted: readonly number[]): number {
  const middle = Math.floor(sorted.length / 2);
  if (sorted.length % 2 === 1) return sorted[middle]!;
  return (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * The longest interval in which no operation completed ok: between consecutive ok completions,
 * plus the stretch from the run's start to the first one and from the last one to the end.
 * Operations that never completed cannot end a window, whatever their outcome. Ties go to the
 * earliest window, so the answer does not depend on the order of `ops`.
 */
export function longestUnavailability(ops: readonly Op[], durationMs: number): TimeWindowMs {
  const okTimes = okCompletionTimes(ops);
  const endMs = Math.max(durationMs, okTimes[okTimes.length - 1] ?? 0, 0);
  const boundaries = [0, ...okTimes, endMs];
  let longest: TimeWindowMs = { startMs: 0, endMs: boundaries[1]! };
  for (let i = 1; i + 1 < boundaries.length; i++) {
    const window = { startMs: boundaries[i]!, endMs: boundaries[i + 1]! };
    if (window.endMs - window.startMs > longest.endMs - longest.startMs) longest = window;
  }
  return longest;
}

function okCompletionTimes(ops: readonly Op[]): number[] {
  const times: number[] = [];
  for (const op of ops) {
    if (op.outcome === "ok" && op.completedAt !== undefined) times.push(Math.max(0, op.completedAt));
  }
  return times.sort((a, b) => a - b);
}

/** An invalid verdict outweighs an undecided one: a found violation is a finding whatever else happened. */
export function overallValidity(verdicts: readonly Verdict[]): Validity {
  if (verdicts.some((v) => v.valid === false)) return "invalid";
  // No checker at all proves nothing, so it is not reported as valid.
  if (verdicts.length === 0 || verdicts.some((v) => v.valid === "unknown")) return "inconclusive";
  return "valid";
}

function countOutcomes(ops: readonly Op[]): OutcomeCounts {
  const counts: OutcomeCounts = { attempted: 0, ok: 0, fail: 0, unknown: 0 };
  for (const op of ops) {
    counts.attempted += 1;
    counts[op.outcome] += 1;
  }
  return counts;
}

function countOutcomesByKind(ops: readonly Op[]): Partial<Record<OpKind, OutcomeCounts>> {
  const byKind: Partial<Record<OpKind, OutcomeCounts>> = {};
  for (const kind of OP_KINDS) {
    const ofKind = ops.filter((op) => op.f === kind);
    if (ofKind.length > 0) byKind[kind] = countOutcomes(ofKind);
  }
  return byKind;
}

/**
 * A record of a fault a nemesis chose not to inject, and why (a corruption the damage budget did not
 * allow): its kind ends in "-deferred"; it lasts no time and injected nothing.
 */
export function isDeferral(fault: FaultRecord): boolean {
  return fault.kind.endsWith("-deferred");
}

/** Built through a Map and Object.fromEntries so a kind such as "__proto__" stays an ordinary key. */
function countFaultsByKind(faults: readonly FaultRecord[]): Record<string, number> {
  const counts = new Map<string, number>();
  for (const fault of faults) counts.set(fault.kind, (counts.get(fault.kind) ?? 0) + 1);
  return Object.fromEntries(counts);
}

function toSeconds(window: TimeWindowMs): SecondsWindow {
  return { startS: window.startMs / 1000, endS: window.endMs / 1000, lengthS: (window.endMs - window.startMs) / 1000 };
}

export function computeStats(run: ChaosRun): RunStats {
  return {
    durationS: run.durationMs / 1000,
    operations: countOutcomes(run.ops),
    pendingAtEnd: run.ops.filter((op) => op.outcome === "unknown" && op.completedAt === undefined).length,
    byKind: countOutcomesByKind(run.ops),
    faultsInjected: run.faults.filter((f) => !isDeferral(f)).length,
    faultsByKind: countFaultsByKind(run.faults.filter((f) => !isDeferral(f))),
    deferredByKind: countFaultsByKind(run.faults.filter(isDeferral)),
    longestUnavailability: toSeconds(longestUnavailability(run.ops, run.durationMs)),
    validity: overallValidity(run.verdicts),
    invalidCheckers: run.verdicts.filter((v) => v.valid === false).map((v) => v.checker),
    inconclusiveCheckers: run.verdicts.filter((v) => v.valid === "unknown").map((v) => v.checker),
  };
}

// ---------------------------------------------------------------------------------------------
// The paragraph

export function summarize(run: ChaosRun): { paragraph: string; stats: RunStats } {
  const stats = computeStats(run);
  const sentences = [
    headerSentence(run),
    operationsSentence(stats),
    faultsSentence(stats),
    unavailabilitySentence(stats, run.durationMs),
    ...verdictSentences(run.verdicts, stats.validity),
  ];
  return { paragraph: sentences.join(" "), stats };
}

function headerSentence(run: ChaosRun): string {
  const observers = run.observers ? ` + ${plural(run.observers, "observer")}` : "";
  return `corral chaos: ${plural(run.servers, "voter")}${observers}, ${formatSeconds(run.durationMs)}, ${nemesisPhrase(run.nemeses)}.`;
}

function nemesisPhrase(nemeses: readonly string[]): string {
  if (nemeses.length === 0) return "no nemesis";
  return `${nemeses.length === 1 ? "nemesis" : "nemeses"} ${nemeses.join(", ")}`;
}

function operationsSentence(stats: RunStats): string {
  const { attempted, ok, fail, unknown } = stats.operations;
  const pending = stats.pendingAtEnd > 0 ? ` (${formatCount(stats.pendingAtEnd)} still pending at the end)` : "";
  const head = `${formatCount(attempted)} ${attempted === 1 ? "operation" : "operations"} attempted`;
  return `${head}: ${formatCount(ok)} ok, ${formatCount(fail)} failed, ${formatCount(unknown)} unknown${pending}.`;
}

function faultsSentence(stats: RunStats): string {
  const deferred = Object.entries(stats.deferredByKind).map(([kind, n]) => `${kind} ${formatCount(n)}`);
  const deferrals = deferred.length === 0 ? "" : ` Deferred: ${deferred.join(", ")}.`;
  if (stats.faultsInjected === 0) return `No faults injected.${deferrals}`;
  const perKind = Object.entries(stats.faultsByKind).map(([kind, n]) => `${kind} ${formatCount(n)}`);
  return `${plural(stats.faultsInjected, "fault")} injected (${perKind.join(", ")}).${deferrals}`;
}

function unavailabilitySentence(stats: RunStats, durationMs: number): string {
  if (stats.operations.ok === 0) return `No operation completed ok in the whole ${formatSeconds(durationMs)}.`;
  const window = stats.longestUnavailability;
  return `Longest unavailability: ${formatLength(window.lengthS * 1000)} (from ${formatSeconds(window.startS * 1000)}).`;
}

function verdictSentences(verdicts: readonly Verdict[], validity: Validity): string[] {
  if (verdicts.length === 0) return ["No checker ran, so the run is inconclusive."];
  const list = `Verdicts: ${verdicts.map((v) => `${v.checker} ${verdictWord(v)}`).join(", ")}.`;
  return [list, closingSentence(verdicts, validity)];
}

function verdictWord(verdict: Verdict): string {
  if (verdict.valid === "unknown") return "inconclusive";
  return verdict.valid ? "valid" : "INVALID";
}

function closingSentence(verdicts: readonly Verdict[], validity: Validity): string {
  if (validity === "valid") return "No violation found.";
  if (validity === "inconclusive") {
    const undecided = verdicts.filter((v) => v.valid === "unknown").map((v) => v.checker);
    return `Result inconclusive: no violation found, but ${undecided.join(", ")} could not decide.`;
  }
  const findings = verdicts.filter((v) => v.valid === false).map(firstViolationPhrase);
  return `Violations found: ${findings.join("; ")}.`;
}

const VIOLATION_MESSAGE_MAX_CHARS = 240;

/** One line per checker keeps the paragraph a paragraph; the full list is in verdicts.json. */
function firstViolationPhrase(verdict: Verdict): string {
  const first = verdict.violations[0];
  if (first === undefined) return `${verdict.checker}: (no violation message given)`;
  const oneLine = first.replace(/\s+/g, " ").trim().replace(/\.$/, "");
  const shortened = oneLine.length > VIOLATION_MESSAGE_MAX_CHARS ? `${oneLine.slice(0, VIOLATION_MESSAGE_MAX_CHARS - 1)}…` : oneLine;
  const more = verdict.violations.length > 1 ? ` (and ${formatCount(verdict.violations.length - 1)} more)` : "";
  return `${verdict.checker}: ${shortened}${more}`;
}

// ---------------------------------------------------------------------------------------------
// Number formatting (hand-rolled so output does not depend on the ICU build or locale)

export function formatCount(n: number): string {
  const [whole, fraction] = String(n).split(".");
  const grouped = whole!.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return fraction === undefined ? grouped : `${grouped}.${fraction}`;
}

function plural(n: number, noun: string): string {
  return `${formatCount(n)} ${noun}${n === 1 ? "" : "s"}`;
}

function trimDecimal(text: string): string {
  return text.includes(".") ? text.replace(/0+$/, "").replace(/\.$/, "") : text;
}

/** A point in time or a run length: tenths of a second are as fine as a chaos run is read. */
function formatSeconds(ms: number): string {
  return `${trimDecimal((ms / 1000).toFixed(1))} s`;
}

/** A duration; short ones in ms so a 40 ms blip does not read as "0 s". */
function formatLength(ms: number): string {
  if (ms > 0 && ms < 100) return `${trimDecimal(ms.toFixed(1))} ms`;
  return formatSeconds(ms);
}

// ---------------------------------------------------------------------------------------------
// The timeline SVG

export interface TimelineOptions {
  durationMs: number;
  title: string;
  bucketMs?: number;
}

const WIDTH = 1200;
const HEIGHT = 520;
const PLOT_LEFT = 80;
const PLOT_RIGHT = 1176;
const FAULT_STRIP_TOP = 56;
const THROUGHPUT_PANEL: PanelBox = { top: 96, bottom: 256 };
const LATENCY_PANEL: PanelBox = { top: 290, bottom: 450 };
const FAULT_LABEL_LANES = 3;
const FAULT_LABEL_LANE_HEIGHT = 11;
const CHAR_WIDTH_PX = 6.2; // rough width of an 11 px sans-serif character, for laying out labels
const LATENCY_FLOOR_MS = 0.01; // log scale: a 0 ms latency is drawn at the axis floor

const OUTCOME_COLOURS = { ok: "#1a9850", fail: "#d95f02", unknown: "#7b3294" } as const;
const MEDIAN_COLOUR = "#1f4e79";
const MAX_COLOUR = "#c51b7d";
const AXIS_COLOUR = "#444444";
const GRID_COLOUR = "#e4e4e4";

const FAULT_COLOURS: Readonly<Record<string, string>> = {
  partition: "#4c78a8",
  kill: "#e45756",
  crash: "#e45756",
  pause: "#eeca3b",
  "restart-all": "#9d755d",
  restart: "#b279a2",
  delay: "#72b7b2",
  loss: "#54a24b",
  clock: "#ff9da6",
  disk: "#bab0ac",
};
const DEFAULT_FAULT_COLOUR = "#8c8c8c";

interface PanelBox {
  top: number;
  bottom: number;
}

type Scale = (value: number) => number;

export function faultColour(kind: string): string {
  return Object.hasOwn(FAULT_COLOURS, kind) ? FAULT_COLOURS[kind]! : DEFAULT_FAULT_COLOUR;
}

export function renderTimelineSvg(ops: readonly Op[], faults: readonly FaultRecord[], options: TimelineOptions): string {
  const bucketMs = options.bucketMs ?? DEFAULT_BUCKET_MS;
  const domainMs = Math.max(options.durationMs, 1);
  const buckets = bucketize(ops, options.durationMs, bucketMs);
  const x = linearScale(0, domainMs, PLOT_LEFT, PLOT_RIGHT);
  const body = [
    `<rect x="0" y="0" width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`,
    `<text x="${PLOT_LEFT}" y="24" font-size="16" font-weight="bold">${escapeXml(options.title)}</text>`,
    renderLegend(faults),
    renderTimeAxis(domainMs, x),
    renderFaults(faults, options.durationMs, x),
    renderThroughputPanel(buckets, x),
    renderLatencyPanel(buckets, x),
    renderFootnote(buckets, bucketMs),
  ];
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="Helvetica, Arial, sans-serif" font-size="11" fill="#222222">`,
    `<title>${escapeXml(options.title)}</title>`,
    ...body.filter((part) => part !== ""),
    "</svg>",
  ].join("\n");
}

/** Also drops characters XML 1.0 forbids outright, which no escaping can make legal. */
export function escapeXml(text: string): string {
  return (
    text
      // eslint-disable-next-line no-control-regex -- stripping the control characters XML 1.0 forbids is the point
      .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g, "")
      .replace(/&/g, "&amp;")
      .replace(/</g, "&lt;")
      .replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;")
      .replace(/'/g, "&apos;")
  );
}

/** Coordinates to a tenth of a pixel: enough for the eye, and keeps the file small and stable. */
function px(value: number): string {
  return String(Number(value.toFixed(1)));
}

function linearScale(domainLow: number, domainHigh: number, rangeLow: number, rangeHigh: number): Scale {
  const span = domainHigh - domainLow || 1;
  return (value) => rangeLow + ((value - domainLow) / span) * (rangeHigh - rangeLow);
}

function logScale(decadeLow: number, decadeHigh: number, panel: PanelBox): Scale {
  const toY = linearScale(decadeLow, decadeHigh, panel.bottom, panel.top);
  return (value) => toY(Math.log10(Math.max(value, LATENCY_FLOOR_MS)));
}

// --- time axis, shared by both panels

const TIME_STEPS_S = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400];
const MAX_TIME_TICKS = 12;

function timeStepMs(domainMs: number): number {
  const domainS = domainMs / 1000;
  const step = TIME_STEPS_S.find((s) => domainS / s <= MAX_TIME_TICKS) ?? Math.ceil(domainS / MAX_TIME_TICKS);
  return step * 1000;
}

function renderTimeAxis(domainMs: number, x: Scale): string {
  const stepMs = timeStepMs(domainMs);
  const parts: string[] = [];
  for (let i = 0; i * stepMs <= domainMs + 1e-9; i++) {
    const tx = px(x(i * stepMs));
    for (const panel of [THROUGHPUT_PANEL, LATENCY_PANEL]) {
      parts.push(`<line x1="${tx}" y1="${panel.top}" x2="${tx}" y2="${panel.bottom}" stroke="${GRID_COLOUR}"/>`);
      parts.push(`<line x1="${tx}" y1="${panel.bottom}" x2="${tx}" y2="${panel.bottom + 4}" stroke="${AXIS_COLOUR}"/>`);
    }
    parts.push(`<text x="${tx}" y="${LATENCY_PANEL.bottom + 16}" text-anchor="middle">${trimDecimal(((i * stepMs) / 1000).toFixed(1))}</text>`);
  }
  const middle = px((PLOT_LEFT + PLOT_RIGHT) / 2);
  parts.push(`<text x="${middle}" y="${LATENCY_PANEL.bottom + 38}" text-anchor="middle">seconds since start</text>`);
  return group("time-axis", parts);
}

function group(className: string, parts: readonly string[]): string {
  return [`<g class="${className}">`, ...parts, "</g>"].join("\n");
}

// --- fault intervals

/** Shaded across both panels and the label strip above them; open-ended faults run to durationMs. */
function renderFaults(faults: readonly FaultRecord[], durationMs: number, x: Scale): string {
  faults = faults.filter((f) => !isDeferral(f));
  if (faults.length === 0) return "";
  // A stable sort on start time alone: ties keep the caller's order, so output depends on nothing else.
  const ordered = [...faults].sort((a, b) => a.startedAt - b.startedAt);
  const laneRightEdges: number[] = Array.from({ length: FAULT_LABEL_LANES }, () => Number.NEGATIVE_INFINITY);
  const parts = ordered.map((fault, i) => {
    const left = x(faultStartMs(fault, durationMs));
    return renderFault(fault, durationMs, x, pickLabelLane(laneRightEdges, left, fault.kind, i));
  });
  return group("faults", parts);
}

/** The first lane whose last label ends left of this one, so overlapping faults keep readable labels. */
function pickLabelLane(laneRightEdges: number[], rectLeft: number, kind: string, index: number): number {
  const free = laneRightEdges.findIndex((right) => right < rectLeft);
  const lane = free === -1 ? index % FAULT_LABEL_LANES : free;
  laneRightEdges[lane] = rectLeft + 3 + kind.length * CHAR_WIDTH_PX;
  return lane;
}

/** Faults are drawn within [0, durationMs] even if the nemesis logged one outside it. */
function faultStartMs(fault: FaultRecord, durationMs: number): number {
  return clamp(fault.startedAt, 0, Math.max(durationMs, 1));
}

function faultEndMs(fault: FaultRecord, durationMs: number): number {
  return clamp(fault.endedAt ?? durationMs, faultStartMs(fault, durationMs), Math.max(durationMs, 1));
}

function renderFault(fault: FaultRecord, durationMs: number, x: Scale, lane: number): string {
  const left = x(faultStartMs(fault, durationMs));
  const right = x(faultEndMs(fault, durationMs));
  const width = Math.max(1, right - left); // an instantaneous fault still shows as a hairline
  const colour = faultColour(fault.kind);
  const tooltip = `${fault.description}: ${formatSeconds(fault.startedAt)} to ${fault.endedAt === undefined ? "end (not healed)" : formatSeconds(fault.endedAt)}`;
  const labelY = FAULT_STRIP_TOP + 10 + lane * FAULT_LABEL_LANE_HEIGHT;
  return [
    `<rect class="fault" data-kind="${escapeXml(fault.kind)}" x="${px(left)}" y="${FAULT_STRIP_TOP}" width="${px(width)}" height="${LATENCY_PANEL.bottom - FAULT_STRIP_TOP}" fill="${colour}" fill-opacity="0.16"><title>${escapeXml(tooltip)}</title></rect>`,
    faultLabel(fault.kind, left, labelY, colour),
  ].join("\n");
}

/** Right-aligned instead when a fault starts too near the right edge for its label to fit. */
function faultLabel(kind: string, rectLeft: number, y: number, colour: string): string {
  const fitsRightwards = rectLeft + 3 + kind.length * CHAR_WIDTH_PX <= WIDTH - 4;
  const position = fitsRightwards ? `x="${px(rectLeft + 3)}"` : `x="${WIDTH - 4}" text-anchor="end"`;
  return `<text class="fault-label" ${position} y="${y}" font-size="10" fill="${darken(colour)}">${escapeXml(kind)}</text>`;
}

/** Label text in the shading's colour, darkened so pale hues (pause's yellow) stay readable on white. */
function darken(hex: string): string {
  const channels = [1, 3, 5].map((i) => Math.round(parseInt(hex.slice(i, i + 2), 16) * 0.7));
  return `#${channels.map((c) => c.toString(16).padStart(2, "0")).join("")}`;
}

function clamp(value: number, low: number, high: number): number {
  return Math.min(high, Math.max(low, value));
}

// --- throughput panel

function renderThroughputPanel(buckets: readonly Bucket[], x: Scale): string {
  const rates = {
    ok: buckets.map((b) => ratePerSecond(b.ok, b)),
    fail: buckets.map((b) => ratePerSecond(b.fail, b)),
    unknown: buckets.map((b) => ratePerSecond(b.unknown, b)),
  };
  const axis = niceLinearAxis(Math.max(...rates.ok, ...rates.fail, ...rates.unknown));
  const y = linearScale(0, axis.max, THROUGHPUT_PANEL.bottom, THROUGHPUT_PANEL.top);
  const centres = buckets.map((b) => x(b.startMs + b.widthMs / 2));
  const parts = [
    ...linearYAxis(axis, y, THROUGHPUT_PANEL),
    panelFrame(THROUGHPUT_PANEL),
    yAxisTitle("completed ops / s", THROUGHPUT_PANEL),
    ...(["ok", "fail", "unknown"] as const).map((outcome) => seriesPolyline(outcome, centres, rates[outcome].map(y), OUTCOME_COLOURS[outcome])),
    pendingMarker(buckets, centres, y),
  ];
  return group("throughput", parts);
}

function ratePerSecond(count: number, bucket: Bucket): number {
  return (count * 1000) / bucket.widthMs;
}

function seriesPolyline(name: string, xs: readonly number[], ys: readonly number[], colour: string): string {
  const points = xs.map((xv, i) => `${px(xv)},${px(ys[i]!)}`).join(" ");
  return `<polyline class="series-${name}" fill="none" stroke="${colour}" stroke-width="1.5" stroke-linejoin="round" points="${points}"/>`;
}

/** Unknowns still pending at the end are piled into the last bucket; a hollow diamond says so. */
function pendingMarker(buckets: readonly Bucket[], centres: readonly number[], y: Scale): string {
  const last = buckets[buckets.length - 1]!;
  if (last.pending === 0) return "";
  const cx = centres[centres.length - 1]!;
  const cy = y(ratePerSecond(last.unknown, last));
  const label = `${formatCount(last.pending)} pending at end`;
  return [
    `<path class="pending-marker" d="${diamondPath(cx, cy, 5)}" fill="#ffffff" stroke="${OUTCOME_COLOURS.unknown}" stroke-width="1.5"/>`,
    `<text x="${px(cx - 8)}" y="${px(Math.max(cy - 6, THROUGHPUT_PANEL.top + 10))}" text-anchor="end" font-size="10" fill="${OUTCOME_COLOURS.unknown}">${escapeXml(label)}</text>`,
  ].join("\n");
}

function diamondPath(cx: number, cy: number, r: number): string {
  return `M${px(cx)} ${px(cy - r)} L${px(cx + r)} ${px(cy)} L${px(cx)} ${px(cy + r)} L${px(cx - r)} ${px(cy)} Z`;
}

interface LinearAxis {
  max: number;
  step: number;
}

/** A 1-2-5 step giving at most about five intervals, with the top rounded up to a whole step. */
function niceLinearAxis(maxValue: number): LinearAxis {
  const top = maxValue > 0 ? maxValue : 1;
  const rough = top / 5;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= rough)!;
  return { max: Math.ceil(top / step - 1e-9) * step, step };
}

function linearYAxis(axis: LinearAxis, y: Scale, panel: PanelBox): string[] {
  const parts: string[] = [];
  const ticks = Math.round(axis.max / axis.step);
  for (let i = 0; i <= ticks; i++) {
    const value = i * axis.step;
    parts.push(...yTick(y(value), formatTickValue(value), panel));
  }
  return parts;
}

function formatTickValue(value: number): string {
  return formatCount(Number(value.toPrecision(6)));
}

function yTick(yPos: number, label: string, panel: PanelBox): string[] {
  const ty = px(yPos);
  return [
    `<line x1="${PLOT_LEFT}" y1="${ty}" x2="${PLOT_RIGHT}" y2="${ty}" stroke="${GRID_COLOUR}"/>`,
    `<line x1="${PLOT_LEFT - 4}" y1="${ty}" x2="${PLOT_LEFT}" y2="${ty}" stroke="${AXIS_COLOUR}"/>`,
    `<text x="${PLOT_LEFT - 7}" y="${px(clamp(yPos, panel.top, panel.bottom) + 3.5)}" text-anchor="end">${escapeXml(label)}</text>`,
  ];
}

function panelFrame(panel: PanelBox): string {
  return `<rect x="${PLOT_LEFT}" y="${panel.top}" width="${PLOT_RIGHT - PLOT_LEFT}" height="${panel.bottom - panel.top}" fill="none" stroke="${AXIS_COLOUR}"/>`;
}

function yAxisTitle(text: string, panel: PanelBox): string {
  const cx = 22;
  const cy = px((panel.top + panel.bottom) / 2);
  return `<text x="${cx}" y="${cy}" transform="rotate(-90 ${cx} ${cy})" text-anchor="middle">${escapeXml(text)}</text>`;
}

// --- latency panel

function renderLatencyPanel(buckets: readonly Bucket[], x: Scale): string {
  const points = buckets.flatMap((b) => (b.okLatency === undefined ? [] : [{ x: x(b.startMs + b.widthMs / 2), ...b.okLatency }]));
  const decades = latencyDecades(
    points.map((p) => p.medianMs),
    points.map((p) => p.maxMs),
  );
  const y = logScale(decades.low, decades.high, LATENCY_PANEL);
  const parts = [...logYAxis(decades, y), panelFrame(LATENCY_PANEL), yAxisTitle("ok latency (ms, log)", LATENCY_PANEL)];
  if (points.length === 0) {
    parts.push(
      `<text x="${px((PLOT_LEFT + PLOT_RIGHT) / 2)}" y="${px((LATENCY_PANEL.top + LATENCY_PANEL.bottom) / 2)}" text-anchor="middle" fill="#888888">no operation completed ok</text>`,
    );
    return group("latency", parts);
  }
  const gaps = buckets.map((b) => b.okLatency === undefined);
  parts.push(
    latencySeries(
      "max",
      points.map((p) => [p.x, y(p.maxMs)]),
      gapsBetween(gaps),
      MAX_COLOUR,
      "4 3",
    ),
  );
  parts.push(
    latencySeries(
      "median",
      points.map((p) => [p.x, y(p.medianMs)]),
      gapsBetween(gaps),
      MEDIAN_COLOUR,
      undefined,
    ),
  );
  return group("latency", parts);
}

/** For each plotted point, whether a bucket with no ok operation lies just before it (the line breaks there). */
function gapsBetween(empty: readonly boolean[]): boolean[] {
  const breaks: boolean[] = [];
  let sawEmpty = false;
  for (const isEmpty of empty) {
    if (isEmpty) {
      sawEmpty = true;
      continue;
    }
    breaks.push(sawEmpty);
    sawEmpty = false;
  }
  return breaks;
}

function latencySeries(
  name: string,
  points: readonly (readonly [number, number])[],
  breaks: readonly boolean[],
  colour: string,
  dash: string | undefined,
): string {
  const d = points.map(([px0, py], i) => `${i === 0 || breaks[i] ? "M" : "L"}${px(px0)} ${px(py)}`).join(" ");
  const dashAttr = dash === undefined ? "" : ` stroke-dasharray="${dash}"`;
  const dots = points.map(([px0, py]) => `<circle cx="${px(px0)}" cy="${px(py)}" r="1.8" fill="${colour}"/>`);
  return [`<g class="series-latency-${name}">`, `<path d="${d}" fill="none" stroke="${colour}" stroke-width="1.3"${dashAttr}/>`, ...dots, "</g>"].join("\n");
}

interface Decades {
  low: number;
  high: number;
}

/** Whole decades around the data, at least one, with empty data shown as 1 ms – 1 s. */
function latencyDecades(medians: readonly number[], maxima: readonly number[]): Decades {
  const all = [...medians, ...maxima].map((v) => Math.max(v, LATENCY_FLOOR_MS));
  if (all.length === 0) return { low: 0, high: 3 };
  const low = Math.floor(Math.log10(Math.min(...all)));
  const high = Math.max(Math.ceil(Math.log10(Math.max(...all))), low + 1);
  return { low, high };
}

function logYAxis(decades: Decades, y: Scale): string[] {
  const parts: string[] = [];
  for (let exponent = decades.low; exponent <= decades.high; exponent++) {
    const value = 10 ** exponent;
    parts.push(...yTick(y(value), formatLatencyTick(exponent), LATENCY_PANEL));
  }
  return parts;
}

function formatLatencyTick(exponent: number): string {
  if (exponent >= 3) return `${formatCount(10 ** (exponent - 3))} s`;
  if (exponent >= 0) return `${10 ** exponent} ms`;
  return `${(10 ** exponent).toFixed(-exponent)} ms`;
}

// --- legend and footnote

interface LegendItem {
  label: string;
  swatch: string;
  /** Text set before the swatch, to head a group of items. */
  prefix?: string | undefined;
}

function renderLegend(faults: readonly FaultRecord[]): string {
  const items: LegendItem[] = [
    { label: "ok", swatch: lineSwatch(OUTCOME_COLOURS.ok, undefined) },
    { label: "fail", swatch: lineSwatch(OUTCOME_COLOURS.fail, undefined) },
    { label: "unknown", swatch: lineSwatch(OUTCOME_COLOURS.unknown, undefined) },
    { label: "median ok latency", swatch: lineSwatch(MEDIAN_COLOUR, undefined) },
    { label: "max ok latency", swatch: lineSwatch(MAX_COLOUR, "4 3") },
    ...distinctKinds(faults).map((kind, i) => ({ label: kind, swatch: rectSwatch(faultColour(kind)), prefix: i === 0 ? "faults:" : undefined })),
  ];
  const parts: string[] = [];
  let cursor = PLOT_LEFT;
  for (const item of items) {
    const prefixWidth = item.prefix === undefined ? 0 : item.prefix.length * CHAR_WIDTH_PX + 6;
    const width = prefixWidth + 22 + item.label.length * CHAR_WIDTH_PX + 12;
    if (cursor + width > WIDTH) {
      parts.push(`<text x="${px(cursor)}" y="46">…</text>`);
      break;
    }
    if (item.prefix !== undefined) parts.push(`<text x="${px(cursor)}" y="46">${escapeXml(item.prefix)}</text>`);
    parts.push(`<g transform="translate(${px(cursor + prefixWidth)} 42)">${item.swatch}<text x="22" y="4">${escapeXml(item.label)}</text></g>`);
    cursor += width;
  }
  return group("legend", parts);
}

function lineSwatch(colour: string, dash: string | undefined): string {
  const dashAttr = dash === undefined ? "" : ` stroke-dasharray="${dash}"`;
  return `<line x1="0" y1="0" x2="18" y2="0" stroke="${colour}" stroke-width="2"${dashAttr}/>`;
}

function rectSwatch(colour: string): string {
  return `<rect x="0" y="-6" width="18" height="12" fill="${colour}" fill-opacity="0.3" stroke="${colour}"/>`;
}

/** The kinds of the faults injected (deferrals are not drawn). */
function distinctKinds(faults: readonly FaultRecord[]): string[] {
  return [...new Set(faults.filter((f) => !isDeferral(f)).map((f) => f.kind))];
}

function renderFootnote(buckets: readonly Bucket[], bucketMs: number): string {
  const pending = buckets[buckets.length - 1]!.pending;
  const notes = [`Buckets of ${formatLength(bucketMs)}; operations counted when they completed; shaded: fault intervals.`];
  if (pending > 0) notes.push(`${formatCount(pending)} operations still pending at the end are counted as unknown in the last bucket.`);
  return `<text x="${PLOT_LEFT}" y="${HEIGHT - 10}" font-size="10" fill="#666666">${escapeXml(notes.join(" "))}</text>`;
}

// ---------------------------------------------------------------------------------------------
// Writing it all down

export const REPORT_FILES = ["history.jsonl", "faults.jsonl", "verdicts.json", "summary.txt", "timeline.svg"] as const;

export async function writeReport(dir: string, run: ChaosReportRun): Promise<{ paragraph: string; files: string[] }> {
  const { paragraph, stats } = summarize(run);
  const contents: Record<(typeof REPORT_FILES)[number], string> = {
    "history.jsonl": jsonLines(run.ops),
    "faults.jsonl": jsonLines(run.faults),
    "verdicts.json": `${JSON.stringify(run.verdicts, null, 2)}\n`,
    "summary.txt": summaryText(paragraph, stats),
    "timeline.svg": `${renderTimelineSvg(run.ops, run.faults, { durationMs: run.durationMs, title: run.title })}\n`,
  };
  await mkdir(dir, { recursive: true });
  const files = REPORT_FILES.map((name) => join(dir, name));
  await Promise.all(REPORT_FILES.map((name, i) => writeFile(files[i]!, contents[name], "utf8")));
  return { paragraph, files };
}

function jsonLines(records: readonly object[]): string {
  return records.map((r) => `${JSON.stringify(r)}\n`).join("");
}

/** The paragraph for people, then the numbers laid out for grep. */
export function summaryText(paragraph: string, stats: RunStats): string {
  const window = stats.longestUnavailability;
  const lines = [
    paragraph,
    "",
    `validity: ${stats.validity}`,
    `operations: ${outcomeLine(stats.operations)}; pending at end ${stats.pendingAtEnd}`,
    ...Object.entries(stats.byKind).map(([kind, counts]) => `  ${kind}: ${outcomeLine(counts)}`),
    `faults: ${stats.faultsInjected}${Object.entries({ ...stats.faultsByKind, ...stats.deferredByKind })
      .map(([kind, n]) => `; ${kind} ${n}`)
      .join("")}`,
    `longest unavailability: ${window.lengthS.toFixed(3)} s, from ${window.startS.toFixed(3)} s to ${window.endS.toFixed(3)} s`,
  ];
  return `${lines.join("\n")}\n`;
}

function outcomeLine(counts: OutcomeCounts): string {
  return `attempted ${counts.attempted}, ok ${counts.ok}, fail ${counts.fail}, unknown ${counts.unknown}`;
}
