/**
 * deploy/k8s/corral.yaml's start script and its header's grow and shrink steps, run for real on
 * loopback addresses: each "pod" is the manifest's start script with its own 127.x.y.<id> address
 * standing for corral-<ordinal>.corral-hs (ports and the image's paths mapped too), so that the
 * pods, like Kubernetes', all use the same ports. Three initial pods form the cluster; pods 3 and 4
 * start as joiners; the header's `corral shell` sessions, run as written (with these addresses and
 * a password), add them and remove them again; the joiners are stopped as a scale-down stops them.
 * Writes made through all of it are on the remaining members.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { probe } from "../../src/cli/health.js";
import { generateDigest } from "../../src/common/digest.js";
import { parseMembership } from "../../src/common/membership.js";
import { Client } from "../../src/index.js";
import { CLI, runScript } from "../helpers/cli-process.js";
import { loadK8s, plainEnv, shellSessions, startScript } from "../helpers/k8s-manifest.js";
import { TEST_PORT_MAX, TEST_PORT_MIN } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";

const PASSWORD = "loopback-test";
const IMAGE_MAIN = "/app/dist/src/cli/main.js";
const STEP_MS = 90_000;

const k8s = loadK8s();
const manifestEnv = plainEnv(k8s.container.env);
/** The manifest's ports (client, ZooKeeper, quorum, election), read from the member template. */
const TEMPLATE_PORTS = /:(\d+):(\d+):(\d+):participant:(\d+)$/.exec(manifestEnv["CORRAL_MEMBER_TEMPLATE"]!)!.slice(1).map(Number) as [
  number,
  number,
  number,
  number,
];
/** Pods 0..4: the initial three and the two the header's steps add. */
const PODS = 5;

/** A loopback network 127.a.b.0/24 of our own: pod N is 127.a.b.(N+1). */
const net = `127.${100 + Math.floor(Math.random() * 150)}.${1 + Math.floor(Math.random() * 250)}`;
const podIp = (ordinal: number) => `${net}.${ordinal + 1}`;

function canListen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/** One port per manifest port, free on every pod's address. */
async function loopbackPorts(): Promise<Map<number, number>> {
  const ports = new Map<number, number>();
  for (const manifestPort of TEMPLATE_PORTS) {
    for (let attempt = 0; ; attempt++) {
      assert.ok(attempt < 200, "no free port on the loopback addresses");
      const port = TEST_PORT_MIN + Math.floor(Math.random() * (TEST_PORT_MAX - TEST_PORT_MIN));
      if ([...ports.values()].includes(port)) continue;
      const free = await Promise.all(Array.from({ length: PODS }, (_, o) => canListen(podIp(o), port)));
      if (free.every(Boolean)) {
        ports.set(manifestPort, port);
        break;
      }
    }
  }
  return ports;
}

let ports: Map<number, number>;
/** The manifest's text with its pod names and ports on loopback: corral-N.corral-hs → 127.a.b.(N+1). */
function onLoopback(text: string): string {
  const podName = new RegExp(`${k8s.name}-(\\d+|\\{ordinal\\})\\.${k8s.serviceName}`, "g");
  return text
    .replace(podName, (_, ordinal: string) => (ordinal === "{ordinal}" ? `${net}.{id}` : podIp(Number(ordinal))))
    .replace(/:(\d+)\b/g, (whole, port: string) => (ports.has(Number(port)) ? `:${ports.get(Number(port))}` : whole));
}

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let bin: string;
const pods = new Map<number, { child: ChildProcess; stderr: () => string; closed: Promise<void> }>();
const clients: Client[] = [];

/** Starts pod `ordinal` as the StatefulSet does: HOSTNAME corral-N, the container's env, `sh start.sh`. */
function startPod(ordinal: number): void {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...manifestEnv,
    PATH: `${bin}:${process.env["PATH"] ?? "/usr/bin:/bin"}`,
    HOSTNAME: `${k8s.name}-${ordinal}`,
    CORRAL_MEMBER_TEMPLATE: onLoopback(manifestEnv["CORRAL_MEMBER_TEMPLATE"]!),
    // The Secret's key; the data volume; every port on the pod's own address (0.0.0.0 is shared here).
    CORRAL_SUPER_DIGEST: generateDigest(`super:${PASSWORD}`),
    CORRAL_DATA_DIR: join(dir.path, `pod-${ordinal}`),
    CORRAL_CLIENT_HOST: podIp(ordinal),
    CORRAL_METRICS_PORT: "-1",
    CORRAL_ADMIN_PORT: "-1",
    // Short ticks for a test; the manifest's 2 s are for real networks.
    CORRAL_TICK_MS: "200",
    CORRAL_LOG_LEVEL: "info",
  };
  const child = spawn("sh", [join(bin, "start.sh")], { env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  pods.set(ordinal, { child, stderr: () => stderr, closed });
}

const clientAddress = (ordinal: number) => `${podIp(ordinal)}:${ports.get(TEMPLATE_PORTS[0])}`;

async function serves(ordinal: number): Promise<void> {
  await waitFor(
    `pod ${ordinal} to serve`,
    async () => {
      const pod = pods.get(ordinal)!;
      assert.equal(pod.child.exitCode, null, `pod ${ordinal} exited:\n${pod.stderr()}`);
      return probe(clientAddress(ordinal), 2_000).then(
        () => true,
        () => undefined,
      );
    },
    STEP_MS,
  );
}

/** Runs one of the header's shell sessions as `kubectl exec` would, on loopback, with the password. */
async function runSession(index: number): Promise<string> {
  const session = shellSessions(k8s.header)[index]!;
  assert.equal(session.pod, `${k8s.name}-0`);
  const connect = onLoopback(session.connect).replace(/^localhost:/, `${podIp(0)}:`);
  const shell = runScript(CLI, ["shell", "--connect", connect]);
  shell.child.stdin.end(onLoopback(session.script).replaceAll("$PASSWORD", PASSWORD) + "\n");
  assert.equal(await shell.exit, 0, `${session.script}\n${shell.out()}\n${shell.err()}`);
  return session.script;
}

async function configAt(ordinal: number): Promise<{ voters: number[]; version: bigint }> {
  const client = await Client.connect(clientAddress(ordinal), { sessionTimeoutMs: 10_000, connectTimeoutMs: 30_000 });
  clients.push(client);
  await client.sync("/");
  const config = await client.getConfig();
  const voters = parseMembership(config.text)
    .members.filter((m) => m.role === "participant")
    .map((m) => m.serverId)
    .sort((a, b) => a - b);
  return { voters, version: config.version };
}

before(async () => {
  dir = await makeTempDir("corral-k8s-start-");
  ports = await loopbackPorts();
  bin = join(dir.path, "bin");
  mkdirSync(bin);
  writeFileSync(join(bin, "start.sh"), startScript(k8s));
  // The image's `node` and its CLI path: this checkout's compiled CLI stands in for /app/dist.
  writeFileSync(
    join(bin, "node"),
    `#!/bin/sh\nif [ "$1" = ${IMAGE_MAIN} ]; then shift; set -- ${JSON.stringify(CLI)} "$@"; fi\nexec ${JSON.stringify(process.execPath)} "$@"\n`,
  );
  chmodSync(join(bin, "node"), 0o755);
});

after(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  for (const { child } of pods.values()) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await Promise.all([...pods.values()].map(({ closed }) => closed));
  await dir?.remove();
});

test("the manifest's pods on loopback: three initial members, two joiners added and removed by the header's shell sessions", async (t) => {
  const initial = Number(manifestEnv["CORRAL_INITIAL_MEMBERS"]);
  assert.equal(initial, 3);
  for (let ordinal = 0; ordinal < initial; ordinal++) startPod(ordinal);
  for (let ordinal = 0; ordinal < initial; ordinal++) await serves(ordinal);
  const writer = await Client.connect([0, 1, 2].map(clientAddress).join(","), { sessionTimeoutMs: 10_000, connectTimeoutMs: 30_000 });
  clients.push(writer);
  await writer.create("/before", "three members");

  // kubectl scale --replicas=5: the joiners start, learn from the leader, and are not members yet.
  for (const ordinal of [3, 4]) startPod(ordinal);
  for (const ordinal of [3, 4]) await serves(ordinal);
  for (const ordinal of [3, 4]) assert.match(pods.get(ordinal)!.stderr(), new RegExp(`server ${ordinal + 1} starts as a joiner`));
  assert.deepEqual((await configAt(0)).voters, [1, 2, 3]);

  t.diagnostic(`add: ${await runSession(0)}`);
  const grown = await configAt(4);
  assert.deepEqual(grown.voters, [1, 2, 3, 4, 5]);
  await writer.create("/grown", "five members");

  t.diagnostic(`remove: ${await runSession(1)}`);
  const shrunk = await configAt(2);
  assert.deepEqual(shrunk.voters, [1, 2, 3]);
  assert.ok(shrunk.version > grown.version);
  // kubectl scale --replicas=3 stops the highest ordinals.
  for (const ordinal of [3, 4]) {
    const { child, closed } = pods.get(ordinal)!;
    child.kill("SIGTERM");
    await closed;
  }
  await writer.create("/shrunk", "three members again");
  for (const ordinal of [0, 1, 2]) {
    const client = await Client.connect(clientAddress(ordinal), { sessionTimeoutMs: 10_000, connectTimeoutMs: 30_000 });
    clients.push(client);
    await client.sync("/");
    for (const path of ["/before", "/grown", "/shrunk"]) assert.notEqual(await client.exists(path), null, `${path} on pod ${ordinal}`);
  }
});
