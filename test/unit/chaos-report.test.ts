/**
 * The chaos report's arithmetic and rendering on hand-made histories: bucket counts, the longest
 * unavailability window, the paragraph's verdict wording, the SVG's well-formedness, and the five
 * files writeReport leaves behind.
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { AddOp, FaultRecord, Op, Outcome, ReadOp, Verdict, WriteOp } from "../chaos/history.js";
import {
  bucketize,
  escapeXml,
  faultColour,
  formatCount,
  longestUnavailability,
  overallValidity,
  renderTimelineSvg,
  summarize,
  writeReport,
  type ChaosReportRun,
} from "../chaos/report.js";

// ---------------------------------------------------------------------------------------------
// Hand-made histories

let nextId = 0;

function base(outcome: Outcome, invokedAt: number, completedAt: number | undefined) {
  return { id: nextId++, process: 0, session: "0x1", invokedAt, outcome, ...(completedAt === undefined ? {} : { completedAt }) };
}

function read(outcome: Outcome, invokedAt: number, completedAt?: number): ReadOp {
  return { ...base(outcome, invokedAt, completedAt), f: "read", key: "k" };
}

function write(outcome: Outcome, invokedAt: number, completedAt?: number): WriteOp {
  return { ...base(outcome, invokedAt, completedAt), f: "write", key: "k", value: `v${nextId}` };
}

function add(outcome: Outcome, invokedAt: number, completedAt?: number): AddOp {
  return { ...base(outcome, invokedAt, completedAt), f: "add", element: `e${nextId}` };
}

function verdict(checker: string, valid: Verdict["valid"], violations: string[] = []): Verdict {
  return { checker, valid, violations, stats: {} };
}

const FAULTS: FaultRecord[] = [
  { kind: "partition", description: "partition {1,2} | {3}", startedAt: 10_000, endedAt: 15_000 },
  { kind: "kill", description: "kill -9 server 2 (leader)", startedAt: 12_000, endedAt: 13_000 },
  { kind: "pause", description: "SIGSTOP server 1", startedAt: 40_000 },
];

// ---------------------------------------------------------------------------------------------
// A small XML well-formedness check: enough to catch unescaped text, broken attributes and
// unbalanced tags, which is what a hand-built SVG gets wrong.

const OPEN_TAG = /^<([A-Za-z][\w:.-]*)((?:\s+[A-Za-z][\w:.-]*="[^"<]*")*)\s*(\/?)>$/;
const CLOSE_TAG = /^<\/([A-Za-z][\w:.-]*)\s*>$/;
const BARE_AMPERSAND = /&(?!(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);)/;

function assertWellFormedXml(xml: string): void {
  const stack: string[] = [];
  let roots = 0;
  for (const token of xml.split(/(<[^>]*>)/)) {
    if (token === "") continue;
    if (!token.startsWith("<")) {
      assert.ok(!token.includes(">") && !BARE_AMPERSAND.test(token), `bad text: ${JSON.stringify(token.slice(0, 80))}`);
      if (stack.length === 0) assert.equal(token.trim(), "", "text outside the root element");
      continue;
    }
    const close = CLOSE_TAG.exec(token);
    if (close !== null) {
      assert.equal(stack.pop(), close[1], `mismatched ${token}`);
      continue;
    }
    const open = OPEN_TAG.exec(token);
    assert.ok(open !== null, `malformed tag: ${token.slice(0, 120)}`);
    assert.ok(!BARE_AMPERSAND.test(open[2]!), `bare & in attributes: ${token.slice(0, 120)}`);
    if (stack.length === 0) roots += 1;
    if (open[3] !== "/") stack.push(open[1]!);
  }
  assert.deepEqual(stack, [], "unclosed elements");
  assert.equal(roots, 1, "exactly one root element");
}

function faultRects(svg: string): string[] {
  return svg.match(/<rect class="fault"[^>]*>/g) ?? [];
}

function attr(tag: string, name: string): number {
  const match = new RegExp(` ${name}="([^"]*)"`).exec(tag);
  assert.ok(match !== null, `${name} in ${tag}`);
  return Number(match[1]);
}

// ---------------------------------------------------------------------------------------------

describe("bucketize", () => {
  it("counts completions per bucket by outcome, with a narrower last bucket", () => {
    const ops: Op[] = [
      read("ok", 0, 100),
      read("ok", 500, 999),
      write("ok", 900, 1000), // exactly on a boundary: the later bucket
      write("fail", 1100, 1500),
      add("unknown", 1200, 2100),
      read("ok", 3000, 3400),
    ];
    const buckets = bucketize(ops, 3500, 1000);
    assert.deepEqual(
      buckets.map((b) => [b.startMs, b.widthMs, b.ok, b.fail, b.unknown, b.pending]),
      [
        [0, 1000, 2, 0, 0, 0],
        [1000, 1000, 1, 1, 0, 0],
        [2000, 1000, 0, 0, 1, 0],
        [3000, 500, 1, 0, 0, 0],
      ],
    );
  });

  it("puts never-completed unknowns and stragglers after the end into the last bucket", () => {
    const ops: Op[] = [add("unknown", 500), add("unknown", 1500), read("ok", 2900, 3200), read("unknown", 100, 150)];
    const buckets = bucketize(ops, 3000, 1000);
    assert.equal(buckets.length, 3);
    assert.deepEqual(
      buckets.map((b) => [b.ok, b.unknown, b.pending]),
      [
        [0, 1, 0],
        [0, 0, 0],
        [1, 2, 2],
      ],
    );
  });

  it("takes the median and max latency of the ok operations in each bucket", () => {
    const ops: Op[] = [
      read("ok", 0, 10), // 10 ms
      read("ok", 100, 140), // 40 ms
      read("ok", 200, 220), // 20 ms
      read("ok", 300, 400), // 100 ms
      read("fail", 0, 900), // not ok: no latency
      read("ok", 1000, 1003), // bucket 1: 3 ms
    ];
    const buckets = bucketize(ops, 3000, 1000);
    assert.deepEqual(buckets[0]!.okLatency, { medianMs: 30, maxMs: 100 });
    assert.deepEqual(buckets[1]!.okLatency, { medianMs: 3, maxMs: 3 });
    assert.equal(buckets[2]!.okLatency, undefined);
  });

  it("defaults to 1 s buckets and refuses a non-positive width", () => {
    assert.equal(bucketize([], 60_000).length, 60);
    assert.equal(bucketize([], 0).length, 1);
    assert.throws(() => bucketize([], 1000, 0), RangeError);
  });
});

describe("longestUnavailability", () => {
  it("finds the longest gap between ok completions, ignoring fails and never-completed ops", () => {
    const ops: Op[] = [
      read("ok", 0, 1000),
      write("ok", 1200, 1500),
      write("fail", 1600, 2000), // completes, but not ok: does not end a window
      add("unknown", 1700), // never completed
      add("ok", 1800), // malformed (ok without completion): ignored rather than trusted
      read("ok", 3900, 4000),
      read("ok", 4500, 4600),
    ];
    assert.deepEqual(longestUnavailability(ops, 5000), { startMs: 1500, endMs: 4000 });
  });

  it("counts the stretch before the first ok completion", () => {
    const ops: Op[] = [add("unknown", 0), read("ok", 2500, 3000), read("ok", 3000, 3100), read("ok", 4000, 5000)];
    assert.deepEqual(longestUnavailability(ops, 6000), { startMs: 0, endMs: 3000 });
  });

  it("counts the stretch after the last ok completion, and the whole run when nothing succeeded", () => {
    assert.deepEqual(longestUnavailability([read("ok", 0, 500), read("ok", 600, 1000)], 10_000), { startMs: 1000, endMs: 10_000 });
    assert.deepEqual(longestUnavailability([read("fail", 0, 500), add("unknown", 100)], 8000), { startMs: 0, endMs: 8000 });
  });

  it("does not depend on the order of the history, and ties go to the earliest window", () => {
    const ops: Op[] = [read("ok", 0, 3000), read("ok", 0, 1000), read("ok", 0, 5000)];
    assert.deepEqual(longestUnavailability(ops, 6000), { startMs: 1000, endMs: 3000 });
  });
});

describe("renderTimelineSvg", () => {
  const ops: Op[] = [read("ok", 0, 120), write("ok", 500, 1600), write("fail", 2000, 2010), add("unknown", 3000, 9000), add("unknown", 59_000)];
  const render = (title: string, faults: readonly FaultRecord[] = FAULTS) => renderTimelineSvg(ops, faults, { durationMs: 60_000, title });

  it("is one well-formed svg element", () => {
    const svg = render("corral chaos: partition");
    assert.ok(svg.startsWith("<svg"));
    assert.ok(svg.trimEnd().endsWith("</svg>"));
    assert.ok(svg.includes('xmlns="http://www.w3.org/2000/svg"'));
    assertWellFormedXml(svg);
  });

  it("shades one rect per fault, labelled with its kind, open-ended faults running to the end", () => {
    const svg = render("t");
    const rects = faultRects(svg);
    assert.equal(rects.length, FAULTS.length);
    for (const fault of FAULTS) {
      assert.ok(
        rects.some((r) => r.includes(`data-kind="${fault.kind}"`)),
        `rect for ${fault.kind}`,
      );
      assert.ok(svg.includes(`>${fault.kind}</text>`), `label for ${fault.kind}`);
    }
    const partition = rects.find((r) => r.includes('data-kind="partition"'))!;
    const pause = rects.find((r) => r.includes('data-kind="pause"'))!;
    const kill = rects.find((r) => r.includes('data-kind="kill"'))!;
    // 5 s of a 60 s axis; the pause never healed, so it reaches the right edge of the plot.
    const axisWidth = attr(pause, "width") / (20 / 60);
    assert.ok(Math.abs(attr(partition, "width") - axisWidth * (5 / 60)) < 0.2);
    assert.ok(Math.abs(attr(pause, "x") + attr(pause, "width") - (attr(partition, "x") + axisWidth * (50 / 60))) < 0.2);
    assert.notEqual(faultColour("partition"), faultColour("kill"));
    assert.ok(kill.includes(`fill="${faultColour("kill")}"`));
  });

  it("gives unknown fault kinds the default colour and escapes every piece of text", () => {
    const odd: FaultRecord = { kind: "bit<flip>&", description: `"weird" fault <on> 'disk'`, startedAt: 1000, endedAt: 2000 };
    const svg = render("a < b & c", [odd]);
    assertWellFormedXml(svg);
    assert.ok(svg.includes("a &lt; b &amp; c"));
    assert.ok(!svg.includes("a < b"));
    assert.ok(svg.includes(">bit&lt;flip&gt;&amp;</text>"));
    assert.equal(faultColour("bit<flip>&"), faultColour("no-such-kind"));
    assert.ok(faultRects(svg)[0]!.includes(`fill="${faultColour("no-such-kind")}"`));
  });

  it("marks operations still pending at the end", () => {
    assert.match(render("t"), /class="pending-marker"/);
    assert.match(render("t"), /1 pending at end/);
  });

  it("renders the same bytes for the same input, and copes with an empty history", () => {
    assert.equal(render("same"), render("same"));
    const empty = renderTimelineSvg([], [], { durationMs: 0, title: "empty" });
    assertWellFormedXml(empty);
    assert.match(empty, /no operation completed ok/);
  });

  it("escapes XML metacharacters and drops characters XML cannot hold", () => {
    assert.equal(escapeXml(`<a href="x">'&'</a>\u0001`), "&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;");
  });
});

describe("summarize", () => {
  const ops: Op[] = [
    read("ok", 0, 500),
    read("ok", 600, 1000),
    write("ok", 1000, 1200),
    write("fail", 1300, 1400),
    write("ok", 1500, 3600), // 2.4 s after the previous ok at 1.2 s
    add("unknown", 1600, 1700),
    add("unknown", 59_000),
  ];
  const run = {
    durationMs: 4000,
    nemeses: ["partition"],
    servers: 3,
    ops,
    faults: [FAULTS[0]!, { ...FAULTS[0]!, startedAt: 20_000, endedAt: 21_000 }],
    verdicts: [verdict("linearizable-register", true), verdict("set", true)],
  };

  it("writes the plain-English paragraph for a clean run", () => {
    const { paragraph, stats } = summarize(run);
    assert.equal(
      paragraph,
      "corral chaos: 3 voters, 4 s, nemesis partition. 7 operations attempted: 4 ok, 1 failed, 2 unknown (1 still pending at the end). " +
        "2 faults injected (partition 2). Longest unavailability: 2.4 s (from 1.2 s). Verdicts: linearizable-register valid, set valid. No violation found.",
    );
    assert.equal(stats.validity, "valid");
  });

  it("counts outcomes overall and per kind, faults per kind, and the unavailability window in seconds", () => {
    const { stats } = summarize({ ...run, faults: FAULTS });
    assert.deepEqual(stats.operations, { attempted: 7, ok: 4, fail: 1, unknown: 2 });
    assert.equal(stats.pendingAtEnd, 1);
    assert.deepEqual(stats.byKind, {
      write: { attempted: 3, ok: 2, fail: 1, unknown: 0 },
      read: { attempted: 2, ok: 2, fail: 0, unknown: 0 },
      add: { attempted: 2, ok: 0, fail: 0, unknown: 2 },
    });
    assert.deepEqual(stats.faultsByKind, { partition: 1, kill: 1, pause: 1 });
    assert.equal(stats.faultsInjected, 3);
    assert.deepEqual(stats.longestUnavailability, { startS: 1.2, endS: 3.6, lengthS: 2.4 });
  });

  it("counts deferred faults apart from those injected, and draws none of them", () => {
    const deferral = {
      kind: "corrupt-deferred",
      description: "no server may be damaged: voters {1,2,3} would keep 1 good copies",
      startedAt: 900,
      endedAt: 900,
    };
    const deferredRun = { ...run, faults: [...FAULTS, deferral] };
    const { paragraph, stats } = summarize(deferredRun);
    assert.equal(stats.faultsInjected, 3);
    assert.deepEqual(stats.faultsByKind, { partition: 1, kill: 1, pause: 1 });
    assert.deepEqual(stats.deferredByKind, { "corrupt-deferred": 1 });
    assert.match(paragraph, /3 faults injected \(partition 1, kill 1, pause 1\)\. Deferred: corrupt-deferred 1\./);
    assert.doesNotMatch(renderTimelineSvg(deferredRun.ops, deferredRun.faults, { durationMs: 60_000, title: "deferred" }), /corrupt-deferred/);
  });

  it("names each invalid checker with its first violation", () => {
    const { paragraph, stats } = summarize({
      ...run,
      verdicts: [
        verdict("linearizable-register", true),
        verdict("read-consistency", false, ["read 0x2 saw version 3 after\nversion 4 was acknowledged.", "second finding"]),
        verdict("set", false, ["element e17 acknowledged but missing on server 2"]),
        verdict("fenced-lock", "unknown"),
      ],
    });
    assert.equal(stats.validity, "invalid");
    assert.deepEqual(stats.invalidCheckers, ["read-consistency", "set"]);
    assert.match(paragraph, /Violations found: /);
    assert.match(paragraph, /read-consistency: read 0x2 saw version 3 after version 4 was acknowledged \(and 1 more\)/);
    assert.match(paragraph, /set: element e17 acknowledged but missing on server 2/);
    assert.ok(!paragraph.includes("second finding"));
    assert.ok(!paragraph.includes("No violation found"));
    assert.ok(!paragraph.includes("\n"));
  });

  it("calls a run with an undecided checker inconclusive, not valid", () => {
    const { paragraph, stats } = summarize({ ...run, verdicts: [verdict("linearizable-register", "unknown"), verdict("set", true)] });
    assert.equal(stats.validity, "inconclusive");
    assert.match(paragraph, /linearizable-register inconclusive/);
    assert.match(paragraph, /Result inconclusive: no violation found, but linearizable-register could not decide\./);
    assert.equal(overallValidity([]), "inconclusive");
    assert.equal(overallValidity([verdict("a", "unknown"), verdict("b", false)]), "invalid");
  });

  it("groups thousands and handles a run with nothing ok, no faults and no nemesis", () => {
    assert.equal(formatCount(4812), "4,812");
    assert.equal(formatCount(1_234_567), "1,234,567");
    assert.equal(formatCount(999), "999");
    const { paragraph } = summarize({ ...run, nemeses: [], servers: 1, faults: [], ops: [read("fail", 0, 10)] });
    assert.match(paragraph, /^corral chaos: 1 voter, 4 s, no nemesis\. 1 operation attempted: 0 ok, 1 failed, 0 unknown\. No faults injected\. /);
    assert.match(paragraph, /No operation completed ok in the whole 4 s\./);
  });
});

describe("writeReport", () => {
  it("writes the five files into a directory it creates", async () => {
    const root = await mkdtemp(join(tmpdir(), "corral-chaos-report-"));
    try {
      const dir = join(root, "run-1", "report");
      const ops: Op[] = [read("ok", 0, 100), write("unknown", 50), add("fail", 60, 70)];
      const verdicts = [verdict("set", true, []), verdict("linearizable-register", false, ["bad read"])];
      const run: ChaosReportRun = { title: "run <1>", durationMs: 2000, nemeses: ["kill"], servers: 5, ops, faults: FAULTS.slice(0, 1), verdicts };
      const { paragraph, files } = await writeReport(dir, run);

      assert.deepEqual(
        files,
        ["history.jsonl", "faults.jsonl", "verdicts.json", "summary.txt", "timeline.svg"].map((f) => join(dir, f)),
      );
      assert.deepEqual((await readdir(dir)).sort(), ["faults.jsonl", "history.jsonl", "summary.txt", "timeline.svg", "verdicts.json"]);

      const history = (await readFile(join(dir, "history.jsonl"), "utf8"))
        .trimEnd()
        .split("\n")
        .map((line) => JSON.parse(line) as unknown);
      assert.deepEqual(history, JSON.parse(JSON.stringify(ops)));
      const faults = (await readFile(join(dir, "faults.jsonl"), "utf8"))
        .trimEnd()
        .split("\n")
        .map((line) => JSON.parse(line) as unknown);
      assert.deepEqual(faults, FAULTS.slice(0, 1));
      assert.deepEqual(JSON.parse(await readFile(join(dir, "verdicts.json"), "utf8")), verdicts);

      const summary = await readFile(join(dir, "summary.txt"), "utf8");
      assert.ok(summary.startsWith(`${paragraph}\n`));
      assert.match(summary, /validity: invalid/);
      assert.match(paragraph, /linearizable-register: bad read/);

      const svg = await readFile(join(dir, "timeline.svg"), "utf8");
      assert.ok(svg.startsWith("<svg"));
      assertWellFormedXml(svg);
      assert.ok(svg.includes("run &lt;1&gt;"));
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
