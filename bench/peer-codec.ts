/**
 * CPU cost of the peer codec per message: encode and decode of QuorumBatch frames holding
 * proposals (100-byte records by default), acks and commits, at several batch sizes, beside
 * @grpc/proto-loader's reflective codec on the same frames for scale.
 *
 *   node .build-peer/bench/peer-codec.js [--record-bytes 100] [--batches 1,16,256,1024] [--ms 400]
 *
 * Prints a table on stderr and one JSON line per case on stdout. Each case is timed in --runs runs
 * of at least --ms each, after a warm-up; the table shows the best run (the least disturbed by
 * whatever else shares the CPU), the JSON both the best and the median.
 */
import { parseArgs } from "node:util";

import type { QuorumMessage } from "../src/consensus/messages.js";
import { decodeQuorumBatch, encodeQuorumBatch, quorumBodySize } from "../src/server/peer/peer-codec.js";
import { referenceMethods } from "../src/server/peer/peer-wire.js";

const { values } = parseArgs({
  options: {
    "record-bytes": { type: "string", default: "100" },
    batches: { type: "string", default: "1,16,256,1024" },
    ms: { type: "string", default: "400" },
    runs: { type: "string", default: "7" },
    "skip-reference": { type: "boolean", default: false },
  },
});
const recordBytes = Number(values["record-bytes"]);
const batchSizes = values.batches.split(",").map(Number);
const runMs = Number(values.ms);
const runs = Number(values.runs);

let sink = 0;

interface Figure {
  best: number;
  median: number;
}

/** ns per message over `runs` runs, each repeating `fn` (which handles `perCall` messages) for at least runMs. */
function measure(perCall: number, fn: () => void): Figure {
  const warmUntil = performance.now() + Math.min(runMs, 200);
  while (performance.now() < warmUntil) fn();
  const results: number[] = [];
  for (let run = 0; run < runs; run++) {
    let calls = 0;
    const started = performance.now();
    let elapsed: number;
    do {
      for (let i = 0; i < 64; i++) fn();
      calls += 64;
      elapsed = performance.now() - started;
    } while (elapsed < runMs);
    results.push((elapsed * 1e6) / (calls * perCall));
  }
  results.sort((a, b) => a - b);
  return { best: round(results[0]!), median: round(results[results.length >> 1]!) };
}

function proposals(n: number): QuorumMessage[] {
  const out: QuorumMessage[] = [];
  for (let i = 0; i < n; i++) {
    const record = new Uint8Array(recordBytes);
    for (let j = 0; j < recordBytes; j++) record[j] = (i * 31 + j) & 0xff;
    out.push({ type: "proposal", zxid: 7 * 2 ** 32 + 1000 + i, record });
  }
  return out;
}
const acks = (n: number): QuorumMessage[] => Array.from({ length: n }, (_, i) => ({ type: "ack", zxid: 7 * 2 ** 32 + 1000 + i }));
const commits = (n: number): QuorumMessage[] => Array.from({ length: n }, (_, i) => ({ type: "commit", zxid: 7 * 2 ** 32 + 1000 + i }));

function toLoader(m: QuorumMessage): object {
  switch (m.type) {
    case "proposal":
      return { proposal: { zxid: String(m.zxid), record: Buffer.from(m.record) } };
    case "ack":
      return { ack: { zxid: String(m.zxid) } };
    case "commit":
      return { commit: { zxid: String(m.zxid) } };
    default:
      throw new Error(m.type);
  }
}

interface Row {
  message: string;
  batch: number;
  frameBytes: number;
  encodeNsPerMessage: Figure;
  encodeWithSizesNsPerMessage: Figure;
  decodeNsPerMessage: Figure;
  referenceEncodeNsPerMessage: Figure | null;
  referenceDecodeNsPerMessage: Figure | null;
}

const follow = referenceMethods().follow;
const rows: Row[] = [];
for (const [name, make] of [
  ["proposal", proposals],
  ["ack", acks],
  ["commit", commits],
] as const) {
  for (const batch of batchSizes) {
    const messages = make(batch);
    const frame = encodeQuorumBatch(messages);
    const sizes = messages.map(quorumBodySize);
    const encode = measure(batch, () => {
      sink += encodeQuorumBatch(messages).length;
    });
    // As the transport does it: body sizes computed once when each message is queued (that
    // computation included here), then the frame written from them.
    const encodeWithSizes = measure(batch, () => {
      for (let i = 0; i < messages.length; i++) sizes[i] = quorumBodySize(messages[i]!);
      sink += encodeQuorumBatch(messages, sizes).length;
    });
    const decode = measure(batch, () => {
      sink += decodeQuorumBatch(frame).length;
    });
    let referenceEncode: Figure | null = null;
    let referenceDecode: Figure | null = null;
    if (!values["skip-reference"]) {
      // proto-loader needs its own object shape; the conversion is part of what it would cost.
      referenceEncode = measure(batch, () => {
        sink += follow.requestSerialize({ messages: messages.map(toLoader) }).length;
      });
      referenceDecode = measure(batch, () => {
        sink += (follow.requestDeserialize(frame) as { messages: unknown[] }).messages.length;
      });
    }
    rows.push({
      message: name,
      batch,
      frameBytes: frame.length,
      encodeNsPerMessage: encode,
      encodeWithSizesNsPerMessage: encodeWithSizes,
      decodeNsPerMessage: decode,
      referenceEncodeNsPerMessage: referenceEncode,
      referenceDecodeNsPerMessage: referenceDecode,
    });
  }
}

function round(ns: number): number {
  return Math.round(ns * 10) / 10;
}

const header = ["message", "batch", "frame B", "encode ns", "enc+sizes ns", "decode ns", "ref enc ns", "ref dec ns"];
const table = [
  header,
  ...rows.map((r) =>
    [
      r.message,
      r.batch,
      r.frameBytes,
      r.encodeNsPerMessage.best,
      r.encodeWithSizesNsPerMessage.best,
      r.decodeNsPerMessage.best,
      r.referenceEncodeNsPerMessage?.best ?? "-",
      r.referenceDecodeNsPerMessage?.best ?? "-",
    ].map(String),
  ),
];
const widths = header.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
process.stderr.write(`peer codec, ${recordBytes}-byte records, ns per message (best of ${runs} runs), node ${process.version}\n`);
for (const row of table) process.stderr.write(row.map((cell, c) => cell.padStart(widths[c]!)).join("  ") + "\n");
for (const r of rows) process.stdout.write(JSON.stringify({ bench: "peer-codec", recordBytes, ...r }) + "\n");
if (sink === 42) process.stderr.write("\n");
