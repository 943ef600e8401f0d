/**
 * Txn log append throughput with N appends in flight (group commit at work).
 *
 *   node .build-disk/bench/log-append.js [--in-flight 1,8,64,256] [--seconds 3] [--record-bytes 200] [--dir /path]
 *
 * Each writer appends, waits until its record is durable, and appends again; N writers share one
 * increasing zxid counter. The log lives in a fresh temp directory under --dir (default: the OS temp
 * dir), removed afterwards; put --dir on the disk the server will use, since fsync cost is the figure.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

import { LevelTxnLog } from "../src/store/disk/txn-log.js";

interface Result {
  inFlight: number;
  records: number;
  seconds: number;
  recordsPerSecond: number;
  batches: number;
  recordsPerBatch: number;
  latencyMsP50: number;
  latencyMsP99: number;
  /** Process CPU (user + system, every thread: JS, LevelDB's writer, fsync) per record. */
  cpuUsPerRecord: number;
}

function percentile(sorted: number[], fraction: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
}

async function run(baseDir: string, inFlight: number, seconds: number, recordBytes: number): Promise<Result> {
  const dir = await mkdtemp(join(baseDir, "corral-bench-log-"));
  const log = await LevelTxnLog.open(join(dir, "log"));
  try {
    const record = new Uint8Array(recordBytes).fill(0x61);
    const latenciesMs: number[] = [];
    let nextZxid = 1;
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    const deadline = started + seconds * 1000;
    const writer = async (): Promise<void> => {
      while (performance.now() < deadline) {
        const zxid = nextZxid++;
        const before = performance.now();
        await log.append(zxid, record);
        latenciesMs.push(performance.now() - before);
      }
    };
    await Promise.all(Array.from({ length: inFlight }, writer));
    const elapsedSeconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const stats = log.stats();
    latenciesMs.sort((a, b) => a - b);
    return {
      inFlight,
      records: stats.recordsWritten,
      seconds: elapsedSeconds,
      recordsPerSecond: stats.recordsWritten / elapsedSeconds,
      batches: stats.batchesWritten,
      recordsPerBatch: stats.recordsWritten / Math.max(1, stats.batchesWritten),
      latencyMsP50: percentile(latenciesMs, 0.5),
      latencyMsP99: percentile(latenciesMs, 0.99),
      cpuUsPerRecord: (cpu.user + cpu.system) / Math.max(1, stats.recordsWritten),
    };
  } finally {
    await log.close();
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      "in-flight": { type: "string", default: "1,64" },
      seconds: { type: "string", default: "3" },
      "record-bytes": { type: "string", default: "200" },
      dir: { type: "string", default: tmpdir() },
      json: { type: "boolean", default: false },
    },
  });
  const inFlights = values["in-flight"].split(",").map((n) => Number.parseInt(n, 10));
  const seconds = Number(values.seconds);
  const recordBytes = Number.parseInt(values["record-bytes"], 10);
  const results: Result[] = [];
  for (const inFlight of inFlights) results.push(await run(values.dir, inFlight, seconds, recordBytes));
  if (values.json) {
    console.log(JSON.stringify({ recordBytes, dir: values.dir, results }, null, 2));
    return;
  }
  console.log(`txn log append, ${recordBytes}-byte records, LevelDB sync batches, dir ${values.dir}`);
  console.log("in flight   records/s   batches   records/batch   p50 ms   p99 ms   cpu µs/record");
  for (const r of results) {
    console.log(
      `${String(r.inFlight).padStart(9)}  ${r.recordsPerSecond.toFixed(0).padStart(10)}  ${String(r.batches).padStart(8)}` +
        `  ${r.recordsPerBatch.toFixed(1).padStart(14)}  ${r.latencyMsP50.toFixed(2).padStart(7)}  ${r.latencyMsP99.toFixed(2).padStart(7)}` +
        `  ${r.cpuUsPerRecord.toFixed(2).padStart(14)}`,
    );
  }
}

await main();
