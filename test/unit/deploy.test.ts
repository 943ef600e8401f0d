/**
 * deploy/ checked against the code, since no Docker engine runs these tests: every compose service
 * (and every StatefulSet pod) is fed through the real config loader; the list of servers must be
 * one list, name every service, and agree with the published/exposed ports, the volumes and the
 * health checks; the Dockerfile's ENTRYPOINT and HEALTHCHECK must run files its build produces.
 * Every server has a ZooKeeper-protocol port too (zkClientPort), held to the same agreement as its
 * gRPC client port: listed, exposed, published, EXPOSEd, a container and service port.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, posix, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { parse, parseAllDocuments } from "yaml";
import { healthTarget } from "../../src/cli/health.js";
import {
  clusterConnectString,
  clusterZkConnectString,
  loadConfig,
  quorumMembers,
  type ServerConfig,
  type ServerEntry,
} from "../../src/server/config.js";
import { ANSWERED_FOUR_LETTER_WORDS } from "../../src/server/zk-wire/four-letter-words.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const DEPLOY = join(ROOT, "deploy");
const COMPOSE_FILE = join(DEPLOY, "docker-compose.yml");
const DOCKERFILE = join(DEPLOY, "Dockerfile");
const K8S_FILE = join(DEPLOY, "k8s", "corral.yaml");

// ---------------------------------------------------------------------------------------------
// docker-compose.yml

type Json = Record<string, unknown>;
const compose = parse(readFileSync(COMPOSE_FILE, "utf8"), { merge: true }) as Json;
const services = Object.entries(compose["services"] as Record<string, Json>);

/** `environment:` in either of compose's forms (map, or list of KEY=VALUE), values as strings. */
function environment(service: Json): NodeJS.ProcessEnv {
  const raw = service["environment"];
  const env: NodeJS.ProcessEnv = {};
  if (Array.isArray(raw)) {
    for (const item of raw as string[]) {
      const eq = item.indexOf("=");
      env[eq < 0 ? item : item.slice(0, eq)] = eq < 0 ? "" : item.slice(eq + 1);
    }
  } else if (raw && typeof raw === "object") {
    for (const [key, value] of Object.entries(raw)) env[key] = value === null ? "" : String(value);
  }
  return env;
}

interface PortMapping {
  hostIp: string | undefined;
  published: number | undefined;
  target: number;
}
/** A `ports:` item: short syntax "[[ip:]host:]container[/proto]" or the long form. */
function portMapping(item: unknown): PortMapping {
  if (typeof item === "object" && item !== null) {
    const long = item as Json;
    return {
      hostIp: long["host_ip"] as string | undefined,
      published: long["published"] === undefined ? undefined : Number(long["published"]),
      target: Number(long["target"]),
    };
  }
  const parts = String(item).replace(/\/(tcp|udp)$/, "").split(":");
  const target = Number(parts.pop());
  const published = parts.length > 0 ? Number(parts.pop()) : undefined;
  return { hostIp: parts.length > 0 ? parts.join(":") : undefined, published, target };
}

interface LoadedService {
  name: string;
  service: Json;
  config: ServerConfig;
  self: ServerEntry;
}
/** Each service through the config loader; what failed to load is kept for the first test to report. */
const failures: string[] = [];
const loaded: LoadedService[] = services.flatMap(([name, service]) => {
  try {
    const config = loadConfig({ env: environment(service) });
    const self = config.servers.find((s) => s.id === config.serverId);
    if (!self) throw new Error(`server ${config.serverId} is not in its own list`);
    return [{ name, service, config, self }];
  } catch (error) {
    failures.push(`${name}: ${(error as Error).message}`);
    return [];
  }
});

test("compose: every service's environment loads through the config loader as a distinct cluster member", () => {
  assert.deepEqual(failures, []);
  assert.ok(loaded.length > 0);
  for (const { name, config } of loaded) {
    assert.ok(config.servers.length > 0, `${name} is a cluster member, not a standalone server`);
    assert.ok(environment(loaded.find((l) => l.name === name)!.service)["CORRAL_SERVER_ID"], `${name} sets CORRAL_SERVER_ID`);
  }
  const ids = loaded.map((l) => l.config.serverId);
  assert.equal(new Set(ids).size, ids.length, `server ids are unique: ${ids.join(", ")}`);
});

test("compose: one server list, identical in every service, naming every service exactly once", () => {
  const reference = loaded[0]!.config.servers;
  for (const { name, config } of loaded) assert.deepEqual(config.servers, reference, `${name} has the same server list`);
  assert.deepEqual(
    reference.map((s) => s.id).sort((a, b) => a - b),
    loaded.map((l) => l.config.serverId).sort((a, b) => a - b),
    "every listed server is a service and every service is listed",
  );
  for (const { name, service, self } of loaded) {
    // Peers and clients on the compose network reach a service by its name.
    assert.equal(self.host, name, `server ${self.id}'s host is its service name`);
    if (service["hostname"] !== undefined) assert.equal(service["hostname"], name);
  }
  // The shape: three voters and one observer, services corral1..corral4.
  const { voters, observers } = quorumMembers(loaded[0]!.config);
  assert.equal(voters.length, 3);
  assert.equal(observers.length, 1);
  assert.deepEqual(loaded.map((l) => l.name).sort(), ["corral1", "corral2", "corral3", "corral4"]);
});

/** The ZooKeeper-protocol port of a server entry; fails the test if the entry has none. */
function zkPortOf(entry: ServerEntry, where: string): number {
  assert.ok(entry.zkClientPort !== undefined, `${where}: server ${entry.id}'s entry gives a ZooKeeper client port (...:ROLE:ZK_CLIENT_PORT)`);
  return entry.zkClientPort;
}

test("compose: every server has a ZooKeeper client port, listed in CORRAL_SERVERS and served by that server", () => {
  assert.ok(loaded.length > 0);
  for (const { name, config, self } of loaded) {
    for (const entry of config.servers) zkPortOf(entry, name);
    assert.equal(config.zkClientPort, zkPortOf(self, name), `${name} serves the ZooKeeper port its entry lists`);
  }
});

test("compose: published, exposed and listed ports agree", () => {
  const published = new Set<string>();
  for (const { name, service, self } of loaded) {
    const zkPort = zkPortOf(self, name);
    const ports = ((service["ports"] as unknown[]) ?? []).map(portMapping);
    assert.ok(ports.length > 0, `${name} publishes its client port`);
    for (const port of ports) {
      assert.ok(
        port.target === self.clientPort || port.target === zkPort,
        `${name} publishes only its client port (${self.clientPort}) and its ZooKeeper port (${zkPort}), not ${port.target}`,
      );
      assert.ok(port.published !== undefined && port.published > 0, `${name} publishes on a fixed host port`);
      const key = `${port.hostIp ?? "0.0.0.0"}:${port.published}`;
      assert.ok(!published.has(key), `host port ${key} is published once`);
      published.add(key);
    }
    assert.deepEqual(
      ports.map((p) => p.target).sort((a, b) => a - b),
      [self.clientPort, zkPort].sort((a, b) => a - b),
      `${name} publishes its client port and its ZooKeeper port, each once`,
    );
    const [client, zk] = [self.clientPort, zkPort].map((target) => ports.find((p) => p.target === target)!);
    assert.equal(zk!.hostIp, client!.hostIp, `${name} publishes its ZooKeeper port on the same host address as its client port`);
    const expose = ((service["expose"] as unknown[]) ?? []).map((p) => Number(String(p).replace(/\/tcp$/, "")));
    for (const port of [self.clientPort, zkPort, self.quorumPort, self.electionPort]) {
      assert.ok(expose.includes(port), `${name} exposes ${port}; it exposes ${expose.join(", ")}`);
    }
  }
});

test("compose: the header's connect strings are the published host ports and the network addresses", () => {
  const header = readFileSync(COMPOSE_FILE, "utf8").split("\n").filter((l) => l.startsWith("#")).join("\n");
  const byId = [...loaded].sort((a, b) => a.config.serverId - b.config.serverId);
  /** Where the host reaches each server's `target` port, in id order. */
  const onHost = (target: (self: ServerEntry) => number) =>
    byId
      .map(({ service, self }) => {
        const mapping = ((service["ports"] as unknown[]) ?? []).map(portMapping).find((p) => p.target === target(self));
        assert.ok(mapping, `server ${self.id} publishes ${target(self)}`);
        return `${mapping.hostIp ?? "127.0.0.1"}:${mapping.published}`;
      })
      .join(",");
  assert.equal(/Clients on the host connect with (\S+)/.exec(header)?.[1], onHost((s) => s.clientPort));
  assert.equal(/zkCli\.sh -server (\S+)/.exec(header)?.[1], onHost((s) => zkPortOf(s, "compose")));
  const config = loaded[0]!.config;
  assert.ok(header.replace(/\n#\s*/g, " ").includes(clusterConnectString(config)), `the header names ${clusterConnectString(config)}`);
  const zkNetwork = clusterZkConnectString(config);
  assert.ok(zkNetwork !== undefined && header.includes(zkNetwork), `the header names ${zkNetwork}`);
});

/** A whitelist must name words corral answers: a misspelt word would be refused without a trace. */
function assertAnsweredWords(whitelist: string, where: string): void {
  for (const item of whitelist.split(",")) {
    const word = item.trim();
    if (word === "" || word === "*") continue;
    assert.ok((ANSWERED_FOUR_LETTER_WORDS as readonly string[]).includes(word), `${where}: four-letter word ${JSON.stringify(word)} is one corral answers`);
  }
}

test("compose: the four-letter words whitelisted on the ZooKeeper port are one list of words corral answers", () => {
  const whitelist = loaded[0]!.config.fourLetterWordWhitelist;
  for (const { name, config } of loaded) {
    assert.equal(config.fourLetterWordWhitelist, whitelist, `${name} has the same whitelist`);
    assertAnsweredWords(config.fourLetterWordWhitelist, name);
  }
});

test("compose: one named volume per service, mounted at its data dir and used by no other", () => {
  const declared = Object.keys((compose["volumes"] as Json | undefined) ?? {});
  const used = new Set<string>();
  for (const { name, service, config } of loaded) {
    const volumes = (service["volumes"] as unknown[]) ?? [];
    assert.equal(volumes.length, 1, `${name} has one volume`);
    const volume = volumes[0];
    const [source, target] =
      typeof volume === "string" ? volume.split(":") : [(volume as Json)["source"] as string, (volume as Json)["target"] as string];
    assert.ok(source && declared.includes(source), `${name}'s volume ${source} is a named volume declared under volumes:`);
    assert.equal(target, config.dataDir, `${name} mounts its volume at its data dir`);
    assert.ok(!used.has(source), `${source} is not shared`);
    used.add(source);
  }
});

const MAIN_IN_IMAGE = "/app/dist/src/cli/main.js";

test("compose: every service has a health check running `corral health` against its own client port", () => {
  for (const { name, service, config, self } of loaded) {
    const check = service["healthcheck"] as Json | undefined;
    assert.ok(check && check["disable"] !== true, `${name} has a healthcheck`);
    const command = check["test"] as string[];
    assert.ok(Array.isArray(command) && command[0] === "CMD", `${name}: exec-form CMD`);
    assert.deepEqual(command.slice(1, 4), ["node", MAIN_IN_IMAGE, "health"], name);
    const connect = command.indexOf("--connect");
    // Without --connect, `corral health` derives its target from the same CORRAL_* environment.
    const target = connect >= 0 ? command[connect + 1] : healthTarget(config);
    assert.equal(target, `127.0.0.1:${self.clientPort}`, `${name}'s health check reaches its client port`);
  }
});

test("compose: every service builds (or shares) the image of deploy/Dockerfile from the repository root", () => {
  const images = new Set(loaded.map((l) => l.service["image"]));
  assert.equal(images.size, 1, "one image for all servers");
  for (const { name, service } of loaded) {
    const build = service["build"] as Json | undefined;
    if (build === undefined) continue;
    const context = resolve(dirname(COMPOSE_FILE), String(build["context"]));
    assert.equal(relative(ROOT, context), "", `${name} builds with the repository root as context`);
    assert.equal(resolve(context, String(build["dockerfile"] ?? "Dockerfile")), DOCKERFILE, `${name} builds deploy/Dockerfile`);
  }
  assert.ok(loaded.some((l) => l.service["build"] !== undefined), "some service builds the image");
});

// ---------------------------------------------------------------------------------------------
// Dockerfile

interface Instruction {
  keyword: string;
  args: string;
}
interface Stage {
  from: string;
  name: string | undefined;
  instructions: Instruction[];
}
function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  let pending = "";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (pending === "" && (line === "" || line.startsWith("#"))) continue;
    if (line.startsWith("#")) continue; // comment lines inside a continuation
    if (line.endsWith("\\")) {
      pending += line.slice(0, -1) + " ";
      continue;
    }
    const full = (pending + line).trim();
    pending = "";
    const match = /^(\S+)\s*(.*)$/.exec(full)!;
    const keyword = match[1]!.toUpperCase();
    const args = match[2]!.trim();
    if (keyword === "FROM") {
      const from = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args)!;
      stages.push({ from: from[1]!, name: from[2], instructions: [] });
    } else {
      assert.ok(stages.length > 0, `${keyword} before FROM`);
      stages.at(-1)!.instructions.push({ keyword, args });
    }
  }
  return stages;
}
const stages = parseDockerfile(readFileSync(DOCKERFILE, "utf8"));
const all = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword).map((i) => i.args);
const workdir = (stage: Stage) => all(stage, "WORKDIR").reduce((dir, next) => posix.resolve(dir, next), "/");
/** An exec-form JSON array (the only form the image uses, so signals reach node). */
const execForm = (args: string): string[] => {
  const parsed = JSON.parse(args) as unknown;
  assert.ok(Array.isArray(parsed), `exec form: ${args}`);
  return parsed as string[];
};

test("Dockerfile: node:20-slim, a build stage and a runtime stage with production dependencies only", () => {
  assert.equal(stages.length, 2);
  for (const stage of stages) assert.equal(stage.from, "node:20-slim");
  const [build, runtime] = stages as [Stage, Stage];
  assert.ok(all(build, "RUN").some((r) => /^npm ci\b/.test(r)), "build installs with npm ci");
  assert.ok(all(build, "RUN").some((r) => /^npm run build\b/.test(r)), "build compiles with npm run build");
  assert.ok(all(runtime, "RUN").some((r) => /^npm ci\b.*--omit=dev/.test(r)), "runtime installs production dependencies only");
  assert.ok(!all(runtime, "COPY").some((c) => /(^|\s)(src|test|node_modules)(\s|$)/.test(c)), "runtime copies no sources and no dev node_modules");
  const user = all(runtime, "USER").at(-1);
  assert.ok(user !== undefined && !/^(root|0)(:|$)/.test(user), `runtime runs as a non-root user, not ${user}`);
});

test("Dockerfile: ENTRYPOINT and HEALTHCHECK run dist/src/cli/main.js, which the build stage produces", () => {
  const [build, runtime] = stages as [Stage, Stage];
  // What `npm run build` writes, from package.json and tsconfig.json.
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string>; bin: Record<string, string> };
  assert.match(pkg.scripts["build"]!, /^tsc -p tsconfig\.json$/);
  const tsconfig = JSON.parse(readFileSync(join(ROOT, "tsconfig.json"), "utf8")) as { compilerOptions: { outDir: string; rootDir: string } };
  const source = "src/cli/main.ts";
  assert.ok(existsSync(join(ROOT, source)));
  const emitted = posix.join(tsconfig.compilerOptions.outDir, posix.relative(tsconfig.compilerOptions.rootDir, source)).replace(/\.ts$/, ".js");
  assert.equal(emitted, "dist/src/cli/main.js");
  assert.equal(pkg.bin["corral"], emitted, "the package's own bin is the same file");
  const builtAt = posix.join(workdir(build), emitted);
  // The build stage has the sources it compiles.
  assert.ok(all(build, "COPY").some((c) => /^src\s/.test(c)), "build copies src/");
  assert.ok(all(build, "COPY").some((c) => /^tsconfig\.json\s/.test(c)), "build copies tsconfig.json");

  // Where the runtime stage puts it: follow its COPY --from=build lines.
  let inRuntime: string | undefined;
  for (const copy of all(runtime, "COPY")) {
    const m = /^--from=(\S+)\s+(\S+)\s+(\S+)$/.exec(copy);
    if (!m || m[1] !== build.name) continue;
    const from = posix.resolve(workdir(build), m[2]!);
    const to = posix.resolve(workdir(runtime), m[3]!);
    if (builtAt === from || builtAt.startsWith(from + "/")) inRuntime = posix.join(to, posix.relative(from, builtAt));
  }
  assert.equal(inRuntime, MAIN_IN_IMAGE, `the runtime stage holds ${builtAt} from the build stage`);

  const entrypoint = execForm(all(runtime, "ENTRYPOINT").at(-1)!);
  assert.deepEqual(entrypoint, ["node", inRuntime, "server"]);
  const healthcheck = all(runtime, "HEALTHCHECK").at(-1)!;
  const cmd = /\bCMD\s+(\[.*\])$/.exec(healthcheck);
  assert.ok(cmd, `HEALTHCHECK uses CMD: ${healthcheck}`);
  assert.deepEqual(execForm(cmd[1]!).slice(0, 3), ["node", inRuntime, "health"]);

  // The compiled code loads the proto files from ../../../proto beside dist/src/protocol.
  const wire = readFileSync(join(ROOT, "src/protocol/client-wire.ts"), "utf8");
  const protoRel = /new URL\("([^"]+)\/client\.proto", import\.meta\.url\)/.exec(wire)?.[1];
  assert.ok(protoRel, "client-wire.ts locates proto/client.proto relative to itself");
  const protoInImage = posix.resolve(posix.dirname(inRuntime.replace("/cli/main.js", "/protocol/client-wire.js")), protoRel);
  const protoCopied = all(runtime, "COPY")
    .map((c) => /^(?!--)(\S+)\s+(\S+)$/.exec(c))
    .some((m) => m !== null && m[1] === "proto" && posix.resolve(workdir(runtime), m[2]!) === protoInImage);
  assert.ok(protoCopied, `the runtime stage copies proto/ to ${protoInImage}`);
});

test("Dockerfile: data volume, exposed ports and environment agree with the compose services", () => {
  const runtime = stages[1]!;
  const volumes = all(runtime, "VOLUME").flatMap((v) => (v.startsWith("[") ? execForm(v) : v.split(/\s+/)));
  const exposed = all(runtime, "EXPOSE").flatMap((e) => e.split(/\s+/)).map((p) => Number(p.replace(/\/tcp$/, "")));
  for (const { name, config, self } of loaded) {
    assert.ok(volumes.includes(config.dataDir), `${name}'s data dir ${config.dataDir} is a VOLUME of the image`);
    for (const port of [self.clientPort, zkPortOf(self, name), self.quorumPort, self.electionPort]) {
      assert.ok(exposed.includes(port), `the image EXPOSEs ${port}`);
    }
  }
  // The image's own defaults, alone, make a valid standalone server on its volume.
  const env: NodeJS.ProcessEnv = {};
  for (const line of all(runtime, "ENV")) for (const m of line.matchAll(/(\w+)=(\S+)/g)) env[m[1]!] = m[2]!;
  const standalone = loadConfig({ env });
  assert.ok(volumes.includes(standalone.dataDir), "the default data dir is the volume");
  assert.equal(healthTarget(standalone), "127.0.0.1:2181", "the image's health check reaches a default server");
  // The image fixes no ZooKeeper port: an explicit one must match the server's entry, so a cluster
  // whose entries list none would not start.
  assert.equal(standalone.zkClientPort, -1, "the image leaves the ZooKeeper port to the configuration");
  assert.doesNotThrow(() => loadConfig({ env: { ...env, CORRAL_SERVERS: "1=a:2181:2888:3888", CORRAL_SERVER_ID: "1" } }));
});

test("Dockerfile: everything it copies from the context exists and is not ignored", () => {
  const ignoreFile = join(DEPLOY, "Dockerfile.dockerignore");
  const ignored = existsSync(ignoreFile)
    ? readFileSync(ignoreFile, "utf8").split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"))
    : [];
  for (const stage of stages) {
    for (const copy of all(stage, "COPY")) {
      if (copy.startsWith("--from")) continue;
      const sources = copy.split(/\s+/).filter((p) => !p.startsWith("--")).slice(0, -1);
      for (const source of sources) {
        assert.ok(existsSync(join(ROOT, source)), `${source} exists in the build context`);
        assert.ok(!ignored.includes(source.replace(/\/$/, "")), `${source} is not in Dockerfile.dockerignore`);
      }
    }
  }
});

// ---------------------------------------------------------------------------------------------
// deploy/k8s/corral.yaml

interface K8sServicePort {
  name?: string;
  port: number;
  targetPort?: number | string;
}
interface K8sContainerPort {
  name?: string;
  containerPort: number;
}
/** Each of a Service's ports reaches the container port of the same number (targetPort by name or number). */
function assertServicePortsTarget(service: string, ports: K8sServicePort[], containerPorts: K8sContainerPort[]): void {
  for (const port of ports) {
    const target = port.targetPort ?? port.port;
    const reached = containerPorts.find((c) => (typeof target === "string" ? c.name === target : c.containerPort === target));
    assert.ok(reached, `${service} port ${port.port}: targetPort ${target} is a container port`);
    assert.equal(reached.containerPort, port.port, `${service} port ${port.port} reaches container port ${reached.containerPort}`);
  }
}

test("k8s: the StatefulSet's pods load as the members CORRAL_SERVERS lists, behind a headless service", () => {
  const text = readFileSync(K8S_FILE, "utf8");
  const header = text.split("\n").filter((l) => l.startsWith("#")).join("\n");
  const docs = parseAllDocuments(text).map((d) => {
    assert.deepEqual(d.errors, []);
    return d.toJS() as Json;
  });
  const kind = (k: string) => docs.filter((d) => d["kind"] === k);
  const sts = kind("StatefulSet")[0] as { metadata: { name: string }; spec: Json };
  assert.ok(sts);
  const spec = sts.spec as {
    serviceName: string;
    replicas: number;
    template: { metadata: { labels: Record<string, string> }; spec: { containers: Json[] } };
    volumeClaimTemplates: { metadata: { name: string } }[];
  };
  const headless = kind("Service").find((s) => (s["metadata"] as Json)["name"] === spec.serviceName);
  assert.ok(headless, `the StatefulSet's serviceName ${spec.serviceName} is a Service here`);
  const headlessSpec = headless["spec"] as { clusterIP: string; publishNotReadyAddresses: boolean; ports: K8sServicePort[] };
  assert.equal(headlessSpec.clusterIP, "None");
  assert.equal(headlessSpec.publishNotReadyAddresses, true, "peers must resolve each other before any is ready");

  const container = spec.template.spec.containers[0] as {
    command: string[];
    args: string[];
    env: { name: string; value: string }[];
    ports: K8sContainerPort[];
    volumeMounts: { name: string; mountPath: string }[];
    readinessProbe: { exec: { command: string[] } };
    livenessProbe: { exec: { command: string[] } };
  };
  assert.deepEqual(container.command, ["sh", "-c"]);
  // Run the start script with a stand-in `node` to see the id each pod gets.
  const bin = mkdtempSync(join(tmpdir(), "corral-k8s-"));
  try {
    writeFileSync(join(bin, "node"), '#!/bin/sh\necho "$CORRAL_SERVER_ID $*"\n');
    chmodSync(join(bin, "node"), 0o755);
    const baseEnv: NodeJS.ProcessEnv = {};
    for (const { name, value } of container.env) baseEnv[name] = value;
    const containerPorts = container.ports.map((p) => p.containerPort);
    const servicePorts = headlessSpec.ports.map((p) => p.port);
    assertServicePortsTarget(spec.serviceName, headlessSpec.ports, container.ports);
    // The client Service: the other Service selecting these pods, for clients that take one address.
    const labels = spec.template.metadata.labels;
    const clientServices = kind("Service").filter((s) => {
      const selector = (s["spec"] as { selector?: Record<string, string> }).selector ?? {};
      return s !== headless && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);
    });
    assert.equal(clientServices.length, 1, "one client Service selects the pods");
    const clientService = clientServices[0]!;
    const clientServiceName = (clientService["metadata"] as { name: string }).name;
    const clientServicePorts = (clientService["spec"] as { ports: K8sServicePort[] }).ports;
    assertServicePortsTarget(clientServiceName, clientServicePorts, container.ports);
    let servers: ServerEntry[] | undefined;
    for (let ordinal = 0; ordinal < spec.replicas; ordinal++) {
      const podName = `${sts.metadata.name}-${ordinal}`;
      const run = spawnSync("sh", ["-c", container.args.join(" ")], {
        env: { PATH: `${bin}:${process.env["PATH"] ?? "/usr/bin:/bin"}`, HOSTNAME: podName },
        encoding: "utf8",
      });
      assert.equal(run.status, 0, run.stderr);
      const [id, ...argv] = run.stdout.trim().split(" ");
      assert.deepEqual(argv, [MAIN_IN_IMAGE, "server"], "the pod runs the image's server command");
      const config = loadConfig({ env: { ...baseEnv, CORRAL_SERVER_ID: id } });
      assert.equal(config.serverId, ordinal + 1);
      const self = config.servers.find((s) => s.id === config.serverId)!;
      assert.equal(self.host, `${podName}.${spec.serviceName}`, `server ${id} is reached at its pod's stable name`);
      for (const entry of config.servers) zkPortOf(entry, podName);
      const zkPort = zkPortOf(self, podName);
      assert.equal(config.zkClientPort, zkPort, `${podName} serves the ZooKeeper port its entry lists`);
      for (const port of [self.clientPort, zkPort, self.quorumPort, self.electionPort]) {
        assert.ok(containerPorts.includes(port), `containerPort ${port}`);
        assert.ok(servicePorts.includes(port), `headless service port ${port}`);
      }
      // Clients reach the client port and the ZooKeeper port through the client Service; peer ports stay off it.
      assert.deepEqual(
        clientServicePorts.map((p) => p.port).sort((a, b) => a - b),
        [self.clientPort, zkPort].sort((a, b) => a - b),
        `${clientServiceName} serves the client port and the ZooKeeper port`,
      );
      assertAnsweredWords(config.fourLetterWordWhitelist, podName);
      const mount = container.volumeMounts.find((m) => m.mountPath === config.dataDir);
      assert.ok(mount && spec.volumeClaimTemplates.some((t) => t.metadata.name === mount.name), "the data dir is a per-pod volume claim");
      for (const probe of [container.readinessProbe, container.livenessProbe]) {
        const command = probe.exec.command;
        assert.deepEqual(command.slice(0, 3), ["node", MAIN_IN_IMAGE, "health"]);
        assert.equal(command[command.indexOf("--connect") + 1], healthTarget(config));
      }
      if (servers) assert.deepEqual(config.servers, servers);
      servers = config.servers;
    }
    assert.equal(servers?.length, spec.replicas, "CORRAL_SERVERS lists exactly the StatefulSet's pods");
    // The header's connect strings: every member, and the client Service.
    const zkMembers = clusterZkConnectString({ servers, clientHost: "", zkClientPort: -1 });
    assert.ok(header.includes(clusterConnectString({ servers, clientHost: "", clientPort: 0 })), "the header names every member's client port");
    assert.equal(/zkCli\.sh -server (\S+)/.exec(header)?.[1], zkMembers, "the header's zkCli.sh line names every member's ZooKeeper port");
    assert.ok(header.includes(`${clientServiceName}:${servers[0]!.clientPort}`), "the header names the client Service's client port");
    assert.ok(header.includes(`${clientServiceName}:${zkPortOf(servers[0]!, "k8s")}`), "the header names the client Service's ZooKeeper port");
  } finally {
    rmSync(bin, { recursive: true, force: true });
  }
});
