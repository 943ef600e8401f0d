/**
 * kazoo's own test suite (Debian's python3-kazoo ships it in kazoo/tests) run with pytest against
 * servers someone else started: test/kazoo/corral_kazoo_plugin.py points kazoo's test harness at
 * the connect string instead of the ZooKeeper it would launch, and skips the tests on its one
 * named list. The result comes from pytest's JUnit XML, one entry per test, and is judged here:
 * no failure, no error, and no skip that is neither the plugin's (its reasons carry
 * SKIP_PREFIX) nor one kazoo decides itself for a reason of its environment (KAZOO_OWN_SKIP_REASONS).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync } from "node:fs";
import { copyFile, mkdir, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ServerProcess } from "./server-process.js";
import { makeTempDir } from "./temp-dir.js";

/** The plugin's directory: test/kazoo in the source tree (tsc does not copy .py files into dist). */
export const PLUGIN_DIR = fileURLToPath(new URL("../../../test/kazoo", import.meta.url));

/** Reasons the plugin gives start with this (corral_kazoo_plugin.SKIP_PREFIX). */
export const SKIP_PREFIX = "corral-skip: ";

/**
 * Skips kazoo's tests decide on their own, and that a real ZooKeeper 3.8 on this machine gets too:
 * none of them is about what the server answers. Any other skip by kazoo fails the run (a
 * "Must use Zookeeper 3.5 or above" would mean corral's `envi` version broke).
 */
export const KAZOO_OWN_SKIP_REASONS: readonly RegExp[] = [
  /^Only run build config tests on Travis\.$/, // test_build: TRAVIS only
  /^Test Kerberos environ not setup\.$/, // test_sasl GSSAPI: needs a KDC (KRB5_TEST_ENV)
  /^Kerberos support not available\.$/, // test_sasl GSSAPI: python3-kerberos absent
];

const INSTALL_HINT = "apt-get install python3-kazoo python3-pytest python3-mock python3-objgraph python3-gevent python3-eventlet";

/** Debian's interpreter, where the python3-* packages live (a pyenv or venv python3 on PATH has none of them). */
export function kazooPython(): string {
  if (process.env.KAZOO_PYTHON) return process.env.KAZOO_PYTHON;
  return existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

/** The directory of kazoo's tests; throws with the packages to install when kazoo or pytest is missing. */
export function kazooTestsDir(python = kazooPython()): string {
  const probe = spawnSync(python, ["-c", "import os, pytest, kazoo.tests; print(os.path.dirname(kazoo.tests.__file__))"], {
    encoding: "utf8",
  });
  if (probe.status !== 0) {
    throw new Error(`${python} cannot import kazoo.tests and pytest (${(probe.stderr || String(probe.error)).trim()}): ${INSTALL_HINT}`);
  }
  return probe.stdout.trim();
}

export type Outcome = "passed" | "failed" | "error" | "skipped";

export interface KazooCase {
  /** kazoo/tests/<file>.py::<Class>::<test> */
  id: string;
  outcome: Outcome;
  /** The failure, error or skip message. */
  message: string;
  /** Seconds, as pytest measured them (setup, call and teardown). */
  seconds: number;
  /** A failed or errored case's traceback and captured output, as the JUnit XML has them. */
  detail?: string;
  /** Why the plugin ran the case a second time (a known race in kazoo's client lost once). */
  rerun?: string;
}

export interface KazooRun {
  cases: KazooCase[];
  counts: Record<Outcome, number>;
  /** The pytest process's exit code. */
  exitCode: number | null;
  /** Whether pytest was killed for running past `timeoutMs`. */
  timedOut: boolean;
  wallMs: number;
  /** Where pytest's console output went. */
  logFile: string;
  /** The last lines of that output (the summary, failures first). */
  tail: string;
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function unescapeXml(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (whole, name: string) => {
    if (name.startsWith("#x")) return String.fromCodePoint(parseInt(name.slice(2), 16));
    if (name.startsWith("#")) return String.fromCodePoint(parseInt(name.slice(1), 10));
    return ENTITIES[name] ?? whole;
  });
}

function attributes(tag: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const m of tag.matchAll(/([\w:-]+)="([^"]*)"/g)) found.set(m[1]!, unescapeXml(m[2]!));
  return found;
}

/**
 * Node id of a JUnit test case: pytest's classname is the dotted module path (from the rootdir,
 * here the site-packages directory holding `kazoo`) followed by the class.
 */
function caseId(classname: string, name: string): string {
  const parts = classname.split(".");
  const fileAt = parts.findIndex((p) => p.startsWith("test_"));
  if (fileAt < 0) return `${classname}::${name}`;
  const file = parts.slice(0, fileAt + 1).join("/") + ".py";
  return [file, ...parts.slice(fileAt + 1), name].join("::");
}

/** An element's text: its tags dropped, its entities read. */
function textOf(xml: string): string {
  return unescapeXml(xml.replace(/<[^>]*>/g, ""));
}

/** The test cases of pytest's JUnit XML (junit_family xunit1 or xunit2). */
export function parseJunit(xml: string): KazooCase[] {
  const cases: KazooCase[] = [];
  const re = /<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g;
  for (const m of xml.matchAll(re)) {
    const attrs = attributes(m[1]!);
    const body = m[3] ?? "";
    const id = caseId(attrs.get("classname") ?? "", attrs.get("name") ?? "");
    const seconds = Number(attrs.get("time") ?? "0");
    const child = (tag: string) => {
      const c = new RegExp(`<${tag}\\b([^>]*?)(?:/>|>([\\s\\S]*?)</${tag}>)`).exec(body);
      if (!c) return undefined;
      const message = attributes(c[1]!).get("message") ?? "";
      return message || unescapeXml(c[2] ?? "").split("\n")[0] || "";
    };
    // An error in teardown after a pass or failure is an error of that test too.
    const error = child("error");
    const failure = child("failure");
    const skipped = child("skipped");
    const rerun = /<property name="corral-rerun" value="([^"]*)"/.exec(body);
    const also = rerun === null ? {} : { rerun: unescapeXml(rerun[1]!) };
    if (error !== undefined) cases.push({ id, outcome: "error", message: error, seconds, detail: textOf(body), ...also });
    else if (failure !== undefined) cases.push({ id, outcome: "failed", message: failure, seconds, detail: textOf(body), ...also });
    else if (skipped !== undefined) cases.push({ id, outcome: "skipped", message: skipped, seconds, ...also });
    else cases.push({ id, outcome: "passed", message: "", seconds, ...also });
  }
  return cases;
}

export function countOutcomes(cases: readonly KazooCase[]): Record<Outcome, number> {
  const counts: Record<Outcome, number> = { passed: 0, failed: 0, error: 0, skipped: 0 };
  for (const c of cases) counts[c.outcome]++;
  return counts;
}

/** Where a skip comes from: the plugin's list, kazoo deciding for a reason of its environment, or neither. */
export function skipOrigin(message: string): "plugin" | "kazoo" | "unexpected" {
  if (message.startsWith(SKIP_PREFIX)) return "plugin";
  if (KAZOO_OWN_SKIP_REASONS.some((re) => re.test(message))) return "kazoo";
  return "unexpected";
}

/** What makes a run fail the gate, one line each; empty when it passes. */
export function verdict(run: Pick<KazooRun, "cases" | "exitCode"> & { timedOut?: boolean }): string[] {
  const problems: string[] = [];
  if (run.timedOut) problems.push("pytest did not finish in time and was killed (the cases after the one running then are missing)");
  if (run.cases.length === 0) problems.push("pytest reported no test case at all");
  for (const c of run.cases) {
    if (c.outcome === "failed" || c.outcome === "error") problems.push(`${c.outcome}: ${c.id}: ${c.message}`);
    else if (c.outcome === "skipped" && skipOrigin(c.message) === "unexpected")
      problems.push(`skipped, neither on the plugin's list nor one of kazoo's own: ${c.id}: ${c.message}`);
  }
  // 0: all passed; 1: some failed. Anything else (interrupted, usage error, internal error) is a failure even with a clean XML.
  if (run.exitCode !== 0 && run.exitCode !== 1) problems.push(`pytest exited with code ${run.exitCode}`);
  if (run.exitCode === 1 && problems.length === 0) problems.push("pytest exited with code 1 but its report shows no failure");
  return problems;
}

/** A log line without its leading time of day, to tell repeats of one message apart from new ones. */
const LEADING_TIME = /^\d\d:\d\d:\d\d\.\d{3} /;

/** `text` with each run of lines that differ only in their leading time written once, with its count ("(× 40)"). */
export function collapseRepeatedLines(text: string): string {
  const out: string[] = [];
  let first: string | undefined;
  let key: string | undefined;
  let count = 0;
  const flush = () => {
    if (first !== undefined) out.push(count > 1 ? `${first}   (× ${count})` : first);
  };
  for (const line of text.split("\n")) {
    const lineKey = line.replace(LEADING_TIME, "");
    if (lineKey === key) {
      count += 1;
      continue;
    }
    flush();
    first = line;
    key = lineKey;
    count = 1;
  }
  flush();
  return out.join("\n");
}

/**
 * What a failed run's report shows of each failed case: its traceback and the log lines pytest
 * captured for it (clients left by earlier tests repeat theirs, so runs are collapsed).
 */
export function failedCaseDetails(run: Pick<KazooRun, "cases">, charsPerCase = 6_000): string {
  return run.cases
    .filter((c) => c.detail !== undefined)
    .map((c) => `--- ${c.outcome}: ${c.id} (${c.seconds.toFixed(1)} s) ---\n${collapseRepeatedLines(c.detail!).slice(-charsPerCase)}`)
    .join("\n");
}

/** pytest processes still running when the test process exits are killed with their process group. */
const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
});

/**
 * The plugin's way to stop and start the servers, as kazoo's tests do with the ZooKeepers their
 * harness launched (ManagedZooKeeper.stop / run): POST /servers/<i>/stop or /servers/<i>/run, i
 * the server's place in the connect string. stop is a SIGTERM and waits for the exit; run waits
 * until the restarted server listens again. Answers 200 with the new state, or 500 with the error.
 */
async function startControl(servers: readonly ServerProcess[]): Promise<{ url: string; close: () => Promise<void> }> {
  let queue: Promise<unknown> = Promise.resolve();
  const http: Server = createServer((req, res) => {
    const m = /^\/servers\/(\d+)\/(stop|run)$/.exec(req.url ?? "");
    const server = m ? servers[Number(m[1])] : undefined;
    if (req.method !== "POST" || !m || !server) {
      res.writeHead(404).end(`no such control: ${req.method} ${req.url}\n`);
      return;
    }
    // One change at a time, in the order asked.
    const change = queue.then(async () => {
      if (m[2] === "stop") await server.stop();
      else if (!server.running) await server.restart();
    });
    queue = change.catch(() => undefined);
    change.then(
      () => res.writeHead(200).end(server.running ? "running\n" : "stopped\n"),
      (error: unknown) => res.writeHead(500).end(`${String(error)}\n`),
    );
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => http.close(() => resolve())),
  };
}

export interface KazooRunOptions {
  /** Connect string of the servers, without chroot. */
  hosts: string;
  /**
   * The servers of `hosts`, in its order: kazoo's tests may then stop and restart them
   * (CORRAL_KAZOO_CONTROL). Without them, a test that tries fails.
   */
  servers?: readonly ServerProcess[];
  /** Extra pytest arguments (e.g. "-k", "...") put before the tests directory; the plugin's stale-list check is then off. */
  pytestArgs?: string[];
  /** A file path or test id under kazoo/tests to run instead of the whole directory. */
  select?: string[];
  /** Kill pytest after this long (its process group, so kazoo's handler threads go too). */
  timeoutMs?: number;
  /** More environment for pytest (e.g. KRB5_TEST_ENV and KRB5_CONFIG for test_sasl.py's GSSAPI tests). */
  env?: Record<string, string>;
  signal?: AbortSignal;
}

/** pytest's arguments with the plugin and its settings, rooted at `rootdir`, writing JUnit XML to `junit`. */
export function pytestWithPlugin(rootdir: string, junit: string): string[] {
  return [
    "-m",
    "pytest",
    "-p",
    "corral_kazoo_plugin",
    "-p",
    "no:cacheprovider",
    "-c",
    join(PLUGIN_DIR, "pytest.ini"),
    "--rootdir",
    rootdir,
    `--junitxml=${junit}`,
    "-q",
  ];
}

export async function runKazooSuite(options: KazooRunOptions): Promise<KazooRun> {
  const python = kazooPython();
  const testsDir = kazooTestsDir(python);
  const siteDir = dirname(dirname(testsDir));
  const dir = await makeTempDir("corral-kazoo-");
  const junit = join(dir.path, "junit.xml");
  const logFile = join(dir.path, "pytest.log");
  const whole = options.select === undefined && options.pytestArgs === undefined;
  const targets = options.select?.map((s) => join(testsDir, s)) ?? [testsDir];
  const args = [...pytestWithPlugin(siteDir, junit), "-rfEs", ...(options.pytestArgs ?? []), ...targets];
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("ZOOKEEPER_") && k !== "TRAVIS") env[k] = v;
  Object.assign(env, {
    CORRAL_KAZOO_HOSTS: options.hosts,
    CORRAL_KAZOO_WHOLE_SUITE: whole ? "1" : "0",
    PYTHONPATH: PLUGIN_DIR,
    PYTHONDONTWRITEBYTECODE: "1",
    PYTHONUNBUFFERED: "1",
    ...options.env,
  });

  try {
    return await runPytest(python, args, env, dir.path, junit, logFile, options);
  } catch (error) {
    await dir.remove();
    throw error;
  }
}

async function runPytest(
  python: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  junit: string,
  logFile: string,
  options: KazooRunOptions,
): Promise<KazooRun> {
  const control = options.servers === undefined ? undefined : await startControl(options.servers);
  if (control) env.CORRAL_KAZOO_CONTROL = control.url;

  const started = Date.now();
  const log = createWriteStream(logFile);
  let tail = "";
  const child = spawn(python, args, { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  const keep = (chunk: Buffer) => {
    log.write(chunk);
    tail = (tail + chunk.toString("utf8")).slice(-20_000);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const kill = () => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  };
  let timedOut = false;
  const timer =
    options.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          kill();
        }, options.timeoutMs);
  options.signal?.addEventListener("abort", kill, { once: true });
  try {
    const exitCode = await new Promise<number | null>((resolve, reject) => {
      child.once("error", reject);
      child.once("close", (code) => resolve(code));
    });
    const wallMs = Date.now() - started;
    await new Promise<void>((resolve) => log.end(resolve));
    const xml = existsSync(junit) ? await readFile(junit, "utf8") : "";
    const cases = parseJunit(xml);
    return { cases, counts: countOutcomes(cases), exitCode, timedOut, wallMs, logFile, tail };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", kill);
    kill();
    running.delete(child);
    await control?.close();
  }
}

/**
 * Removes the run's temp dir (log and XML); with `keepIn` (a directory), its pytest.log and
 * junit.xml are first copied there as `<name>.log` and `<name>.xml`.
 */
export async function removeRunFiles(run: KazooRun, keepIn?: { dir: string; name: string }): Promise<void> {
  const runDir = dirname(run.logFile);
  if (keepIn) {
    await mkdir(keepIn.dir, { recursive: true });
    await copyFile(run.logFile, join(keepIn.dir, `${keepIn.name}.log`));
    const junit = join(runDir, "junit.xml");
    if (existsSync(junit)) await copyFile(junit, join(keepIn.dir, `${keepIn.name}.xml`));
  }
  await rm(runDir, { recursive: true, force: true });
}
