/**
 * One load process of `npm run bench:overload` (bench/overload.ts runs several at once, so that the
 * storm's client CPU and memory never sit in the bystander's event loop):
 *
 *   storm      N sessions, each keeping K setData of V bytes in flight over a set of znodes, for D s
 *   bystander  one session doing one small setData every I ms on its own znode, for D s
 *   probe      a new session: how long until it connects and reads the bystander's znode
 *
 * Each prints one JSON line on stdout when done; progress goes to stderr. Through either client:
 * node-zookeeper-client against a ZooKeeper-protocol port (`--target zookeeper`), or corral's SDK
 * against its gRPC port (`--target corral`), by bench/targets/.
 */
import { parseArgs } from "node:util";
import { LatencyHistogram } from "./histogram.js";
import { errorLabel, type BenchConnection, type BenchTarget } from "./target.js";

/** Generous: the point is to see whether sessions survive the storm, not to expire them early. */
const SESSION_TIMEOUT_MS = 10_000;
/** How long a worker waits for requests still in flight after its duration, before it gives up on them. */
const DRAIN_MS = 15_000;

export interface StormResult {
  role: "storm";
  clients: number;
  inflight: number;
  valueBytes: number;
  durationS: number;
  acked: number;
  ackedBytes: number;
  /** Requests still unanswered when the worker gave up on them. */
  unanswered: number;
  errors: Record<string, number>;
  connectFailures: number;
}

export interface BystanderResult {
  role: "bystander";
  ok: number;
  failed: number;
  errors: Record<string, number>;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
  /** The value of the last acknowledged write ("" when none was). */
  lastAcked: string;
}

export interface ProbeResult {
  role: "probe";
  /** From the probe's start to a connected session, ms; null if it never connected. */
  connectMs: number | null;
  /** From the start to the bystander's znode read, ms; null if the read failed. */
  readMs: number | null;
  value: string | null;
  error: string | null;
}

async function loadTarget(name: string): Promise<BenchTarget> {
  if (name === "zookeeper") return (await import("./targets/zookeeper.js")).createZookeeperTarget({ spinDelayMs: 100 });
  if (name === "corral") return (await import("./targets/corral.js")).corralTarget;
  throw new Error(`unknown --target ${name}`);
}

function count(table: Record<string, number>, label: string): void {
  table[label] = (table[label] ?? 0) + 1;
}

async function storm(
  target: BenchTarget,
  hosts: string[],
  options: { clients: number; inflight: number; valueBytes: number; znodes: string[]; durationS: number },
): Promise<StormResult> {
  const result: StormResult = {
    role: "storm",
    clients: options.clients,
    inflight: options.inflight,
    valueBytes: options.valueBytes,
    durationS: options.durationS,
    acked: 0,
    ackedBytes: 0,
    unanswered: 0,
    errors: {},
    connectFailures: 0,
  };
  // One buffer for every write: the generator's own memory stays small however many are in flight.
  const value = new Uint8Array(options.valueBytes).fill(0x61);
  const connections = await Promise.all(
    Array.from({ length: options.clients }, async (_, i) => {
      try {
        return await target.connect(hosts[i % hosts.length]!, { sessionTimeoutMs: SESSION_TIMEOUT_MS });
      } catch {
        result.connectFailures += 1;
        return undefined;
      }
    }),
  );
  const deadline = Date.now() + options.durationS * 1000;
  let next = 0;
  let inFlight = 0;
  const slot = async (connection: BenchConnection): Promise<void> => {
    while (Date.now() < deadline) {
      const path = options.znodes[next++ % options.znodes.length]!;
      inFlight += 1;
      try {
        await connection.setData(path, value);
        if (Date.now() <= deadline) {
          result.acked += 1;
          result.ackedBytes += options.valueBytes;
        }
      } catch (error) {
        count(result.errors, errorLabel(error));
        // A lost connection fails every request at once: do not spin on it.
        await new Promise((resolve) => setTimeout(resolve, 10));
      } finally {
        inFlight -= 1;
      }
    }
  };
  const slots = connections.flatMap((connection) => (connection === undefined ? [] : Array.from({ length: options.inflight }, () => slot(connection))));
  const drained = Promise.all(slots);
  await new Promise((resolve) => setTimeout(resolve, options.durationS * 1000));
  await Promise.race([drained, new Promise((resolve) => setTimeout(resolve, DRAIN_MS))]);
  result.unanswered = inFlight;
  await Promise.race([
    Promise.all(connections.map((c) => (c === undefined ? undefined : c.close().catch(() => undefined))).filter((p) => p !== undefined)),
    new Promise((resolve) => setTimeout(resolve, 5_000)),
  ]);
  return result;
}

async function bystander(target: BenchTarget, host: string, path: string, intervalMs: number, durationS: number): Promise<BystanderResult> {
  const histogram = new LatencyHistogram();
  const result: BystanderResult = { role: "bystander", ok: 0, failed: 0, errors: {}, p50Ms: null, p99Ms: null, maxMs: null, lastAcked: "" };
  let connection: BenchConnection | undefined;
  const deadline = Date.now() + durationS * 1000;
  let sequence = 0;
  for (let due = Date.now(); due < deadline; due += intervalMs) {
    const wait = due - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const value = String(++sequence % 100).padStart(2, "0");
    const started = performance.now();
    try {
      // A session lost to the storm counts its writes as failed until a new one connects.
      connection ??= await target.connect(host, { sessionTimeoutMs: SESSION_TIMEOUT_MS });
      await connection.setData(path, new TextEncoder().encode(value));
      histogram.record(Math.round((performance.now() - started) * 1000));
      result.ok += 1;
      result.lastAcked = value;
    } catch (error) {
      result.failed += 1;
      const label = errorLabel(error);
      count(result.errors, label);
      if (label === "SESSIONEXPIRED" || label === "Error") connection = undefined;
    }
  }
  await connection?.close().catch(() => undefined);
  if (histogram.count > 0) {
    result.p50Ms = histogram.percentileUs(50) / 1000;
    result.p99Ms = histogram.percentileUs(99) / 1000;
    result.maxMs = histogram.maxUs / 1000;
  }
  return result;
}

async function probe(target: BenchTarget, host: string, path: string, limitMs: number): Promise<ProbeResult> {
  const started = performance.now();
  const result: ProbeResult = { role: "probe", connectMs: null, readMs: null, value: null, error: null };
  const connecting = target.connect(host, { sessionTimeoutMs: SESSION_TIMEOUT_MS });
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no session within ${limitMs} ms`)), limitMs));
  try {
    const connection = await Promise.race([connecting, timeout]);
    result.connectMs = performance.now() - started;
    result.value = new TextDecoder().decode(await Promise.race([connection.getData(path), timeout]));
    result.readMs = performance.now() - started;
    await connection.close();
  } catch (error) {
    result.error = error instanceof Error ? error.message : String(error);
  }
  return result;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      role: { type: "string" },
      target: { type: "string" },
      hosts: { type: "string" },
      clients: { type: "string", default: "1" },
      inflight: { type: "string", default: "1" },
      "value-bytes": { type: "string", default: "2" },
      znodes: { type: "string", default: "" },
      path: { type: "string", default: "" },
      "interval-ms": { type: "string", default: "20" },
      "duration-s": { type: "string", default: "30" },
      "limit-ms": { type: "string", default: "20000" },
    },
  });
  const target = await loadTarget(values.target ?? "");
  const hosts = (values.hosts ?? "").split(",").filter((h) => h !== "");
  let result: StormResult | BystanderResult | ProbeResult;
  switch (values.role) {
    case "storm":
      result = await storm(target, hosts, {
        clients: Number(values.clients),
        inflight: Number(values.inflight),
        valueBytes: Number(values["value-bytes"]),
        znodes: values.znodes.split(","),
        durationS: Number(values["duration-s"]),
      });
      break;
    case "bystander":
      result = await bystander(target, hosts[0]!, values.path, Number(values["interval-ms"]), Number(values["duration-s"]));
      break;
    case "probe":
      result = await probe(target, hosts[0]!, values.path, Number(values["limit-ms"]));
      break;
    default:
      throw new Error(`unknown --role ${values.role}`);
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
  // Client libraries may keep sockets or timers alive after close: the result is out, so end here.
  process.exit(0);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
