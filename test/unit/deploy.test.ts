/**
 * deploy/ checked against the code, since no Docker engine runs these tests: every compose service
 * (and every StatefulSet pod) is fed through the real config loader; the list of servers must be
 * one list, name every service, and agree with the published/exposed ports, the volumes and the
 * health checks; the Dockerfile's ENTRYPOINT and HEALTHCHECK must run files its build produces.
 * Every server has a ZooKeeper-protocol port too (zkClientPort), held to the same agreement as its
 * gRPC client port: listed, exposed, published, EXPOSEd, a container and service port. Every server
 * has a metrics and an admin port: the probes ask the admin port's /readyz and /healthz, the
 * monitoring profile's Prometheus scrapes exactly the servers' metrics ports, and the alert rules
 * and the Grafana dashboard name only metrics a corral server exports. The StatefulSet's start
 * script (a ConfigMap) is run for every ordinal: the initial members list each other, a later pod
 * joins with the initial members and itself; the header's grow and shrink steps are checked against
 * what the script gives those pods, and the image puts the `corral` they exec on the PATH.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, posix, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { parse, parseAllDocuments } from "yaml";
import { adminTarget, healthTarget } from "../../src/cli/health.js";
import { ServerMetrics } from "../../src/server/metrics.js";
import { generateDigest } from "../../src/common/digest.js";
import { parseMember } from "../../src/common/membership.js";
import { clusterConnectString, clusterZkConnectString, quorumMembers, type ServerEntry } from "../../src/server/cluster-servers.js";
import { loadConfig, type ServerConfig } from "../../src/server/config.js";
import { ANSWERED_FOUR_LETTER_WORDS } from "../../src/server/zk-wire/four-letter-words.js";
import { loadK8s, plainEnv, shellSessions, startScript, type K8sManifest } from "../helpers/k8s-manifest.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const DEPLOY = join(ROOT, "deploy");
const PROMETHEUS_FILE = join(DEPLOY, "prometheus", "prometheus.yml");
const ALERTS_FILE = join(DEPLOY, "prometheus", "alerts.yml");
const DASHBOARD_FILE = join(DEPLOY, "grafana", "corral-dashboard.json");
const COMPOSE_FILE = join(DEPLOY, "docker-compose.yml");
const DOCKERFILE = join(DEPLOY, "Dockerfile");
const K8S_FILE = join(DEPLOY, "k8s", "corral.yaml");

// ---------------------------------------------------------------------------------------------
// docker-compose.yml

type Json = Record<string, unknown>;
const compose = parse(readFileSync(COMPOSE_FILE, "utf8"), { merge: true }) as Json;
const allServices = Object.entries(compose["services"] as Record<string, Json>);
/** The image deploy/Dockerfile builds: the services that build it name it. */
const corralImage = allServices.find(([, s]) => s["build"] !== undefined)?.[1]["image"];
/** corral's servers; the rest (Prometheus, Grafana) are the monitoring profile's. */
const services = allServices.filter(([, s]) => s["image"] === corralImage);
const monitoring = allServices.filter(([, s]) => s["image"] !== corralImage);

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
  const parts = String(item)
    .replace(/\/(tcp|udp)$/, "")
    .split(":");
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
  for (const { name, service, self, config } of loaded) {
    const zkPort = zkPortOf(self, name);
    const ports = ((service["ports"] as unknown[]) ?? []).map(portMapping);
    assert.ok(ports.length > 0, `${name} publishes its client port`);
    for (const port of ports) {
      assert.ok(
        port.target === self.clientPort || port.target === zkPort || port.target === config.adminPort,
        `${name} publishes only its client port (${self.clientPort}), its ZooKeeper port (${zkPort}) and its admin port (${config.adminPort}), not ${port.target}`,
      );
      assert.ok(port.published !== undefined && port.published > 0, `${name} publishes on a fixed host port`);
      const key = `${port.hostIp ?? "0.0.0.0"}:${port.published}`;
      assert.ok(!published.has(key), `host port ${key} is published once`);
      published.add(key);
    }
    assert.deepEqual(
      ports.map((p) => p.target).sort((a, b) => a - b),
      [self.clientPort, zkPort, config.adminPort].sort((a, b) => a - b),
      `${name} publishes its client port, its ZooKeeper port and its admin port, each once`,
    );
    const [client, zk, admin] = [self.clientPort, zkPort, config.adminPort].map((target) => ports.find((p) => p.target === target)!);
    assert.equal(zk!.hostIp, client!.hostIp, `${name} publishes its ZooKeeper port on the same host address as its client port`);
    assert.equal(admin!.hostIp, "127.0.0.1", `${name} publishes its admin port (sessions, paths, environment) on loopback only`);
    const expose = ((service["expose"] as unknown[]) ?? []).map((p) => Number(String(p).replace(/\/tcp$/, "")));
    for (const port of [self.clientPort, zkPort, self.quorumPort, self.electionPort, config.metricsPort, config.adminPort]) {
      assert.ok(expose.includes(port), `${name} exposes ${port}; it exposes ${expose.join(", ")}`);
    }
  }
});

test("compose: the header's connect strings are the published host ports and the network addresses", () => {
  const header = readFileSync(COMPOSE_FILE, "utf8")
    .split("\n")
    .filter((l) => l.startsWith("#"))
    .join("\n");
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
  assert.equal(
    /Clients on the host connect with (\S+)/.exec(header)?.[1],
    onHost((s) => s.clientPort),
  );
  assert.equal(
    /zkCli\.sh -server (\S+)/.exec(header)?.[1],
    onHost((s) => zkPortOf(s, "compose")),
  );
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
    const [source, target] = typeof volume === "string" ? volume.split(":") : [(volume as Json)["source"] as string, (volume as Json)["target"] as string];
    assert.ok(source && declared.includes(source), `${name}'s volume ${source} is a named volume declared under volumes:`);
    assert.equal(target, config.dataDir, `${name} mounts its volume at its data dir`);
    assert.ok(!used.has(source), `${source} is not shared`);
    used.add(source);
  }
});

const MAIN_IN_IMAGE = "/app/dist/src/cli/main.js";

test("compose: every server has metrics and admin ports on every interface of its container", () => {
  for (const { name, config } of loaded) {
    assert.ok(config.metricsPort > 0 && config.adminPort > 0, `${name} serves metrics and admin ports`);
    assert.equal(config.metricsHost, "0.0.0.0", `${name}'s metrics port is reachable from Prometheus`);
    assert.equal(config.adminHost, "0.0.0.0", `${name}'s admin port is reachable through its published port`);
  }
});

test("compose: every service's health check asks its own admin port's /readyz with `corral health --probe readyz`", () => {
  for (const { name, service, config } of loaded) {
    const check = service["healthcheck"] as Json | undefined;
    assert.ok(check && check["disable"] !== true, `${name} has a healthcheck`);
    const command = check["test"] as string[];
    assert.ok(Array.isArray(command) && command[0] === "CMD", `${name}: exec-form CMD`);
    assert.deepEqual(command.slice(1, 4), ["node", MAIN_IN_IMAGE, "health"], name);
    assert.equal(command[command.indexOf("--probe") + 1], "readyz", `${name} probes /readyz`);
    assert.ok(!command.includes("--connect"), `${name}: the target comes from the server's own CORRAL_* settings`);
    // Without --connect, `corral health` derives its target from the same CORRAL_* environment.
    assert.equal(adminTarget(config), `127.0.0.1:${config.adminPort}`, `${name}'s health check reaches its admin port`);
  }
});

test("compose: the monitoring profile's Prometheus scrapes exactly every server's metrics port, with the alert rules", () => {
  const prometheusConfig = parse(readFileSync(PROMETHEUS_FILE, "utf8")) as {
    rule_files: string[];
    scrape_configs: { job_name: string; metrics_path?: string; static_configs: { targets: string[] }[] }[];
  };
  const job = prometheusConfig.scrape_configs.find((c) => c.job_name === "corral");
  assert.ok(job, 'a scrape job named corral (the dashboard and the alerts select job="corral")');
  assert.equal(job.metrics_path ?? "/metrics", "/metrics");
  assert.deepEqual(
    job.static_configs.flatMap((c) => c.targets).sort(),
    loaded.map(({ name, config }) => `${name}:${config.metricsPort}`).sort(),
    "every server's metrics port, and nothing else",
  );
  const byName = new Map(monitoring);
  const prometheus = byName.get("prometheus");
  const grafana = byName.get("grafana");
  assert.ok(prometheus && grafana, "the monitoring profile has Prometheus and Grafana");
  for (const [name, service] of monitoring) {
    assert.deepEqual(service["profiles"], ["monitoring"], `${name} starts only with --profile monitoring`);
    for (const port of ((service["ports"] as unknown[]) ?? []).map(portMapping))
      assert.equal(port.hostIp, "127.0.0.1", `${name} is published on loopback only`);
  }
  /** Where a bind mount of the compose file puts a file of deploy/ in its container. */
  const mounts = (service: Json) =>
    new Map(
      ((service["volumes"] as string[]) ?? [])
        .filter((v) => v.startsWith("./"))
        .map((v) => {
          const [source, target] = v.split(":") as [string, string];
          return [target, resolve(dirname(COMPOSE_FILE), source)];
        }),
    );
  const prometheusMounts = mounts(prometheus);
  const command = (prometheus["command"] as string[]).find((c) => c.startsWith("--config.file="))!.split("=")[1]!;
  assert.equal(prometheusMounts.get(command), PROMETHEUS_FILE, "Prometheus reads deploy/prometheus/prometheus.yml");
  for (const rules of prometheusConfig.rule_files) assert.equal(prometheusMounts.get(rules), ALERTS_FILE, `${rules} is deploy/prometheus/alerts.yml`);
  const grafanaMounts = [...mounts(grafana)];
  assert.ok(
    grafanaMounts.some(([, source]) => source === DASHBOARD_FILE),
    "Grafana gets the dashboard",
  );
  for (const [, source] of grafanaMounts) assert.ok(existsSync(source), `${source} exists`);
});

test("compose: every service builds (or shares) the image of deploy/Dockerfile from the repository root", () => {
  const images = new Set(loaded.map((l) => l.service["image"]));
  assert.equal(images.size, 1, "one image for all servers");
  for (const { name, service } of loaded) {
    const build = service["build"] as Json | undefined;
    if (build === undefined) continue;
    const context = resolve(dirname(COMPOSE_FILE), String(build["context"]));
    assert.equal(relative(ROOT, context), "", `${name} builds with the repository root as context`);
    const dockerfile: unknown = build["dockerfile"] ?? "Dockerfile";
    assert.equal(resolve(context, String(dockerfile)), DOCKERFILE, `${name} builds deploy/Dockerfile`);
  }
  assert.ok(
    loaded.some((l) => l.service["build"] !== undefined),
    "some service builds the image",
  );
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
  assert.ok(
    all(build, "RUN").some((r) => /^npm ci\b/.test(r)),
    "build installs with npm ci",
  );
  assert.ok(
    all(build, "RUN").some((r) => /^npm run build\b/.test(r)),
    "build compiles with npm run build",
  );
  assert.ok(
    all(runtime, "RUN").some((r) => /^npm ci\b.*--omit=dev/.test(r)),
    "runtime installs production dependencies only",
  );
  assert.ok(!all(runtime, "COPY").some((c) => /(^|\s)(src|test|node_modules)(\s|$)/.test(c)), "runtime copies no sources and no dev node_modules");
  const user = all(runtime, "USER").at(-1);
  assert.ok(user !== undefined && !/^(root|0)(:|$)/.test(user), `runtime runs as a non-root user, not ${user}`);
});

test("Dockerfile: ENTRYPOINT and HEALTHCHECK run dist/src/cli/main.js, which the build stage produces", () => {
  const [build, runtime] = stages as [Stage, Stage];
  // What `npm run build` writes, from package.json and tsconfig.json.
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string>; bin: Record<string, string> };
  // tsc emits the code; the console's static page is copied beside it (the image serves it from dist).
  assert.match(pkg.scripts["build"]!, /^tsc -p tsconfig\.json( && cp -R src\/console\/static dist\/src\/console\/)?$/);
  const tsconfig = JSON.parse(readFileSync(join(ROOT, "tsconfig.json"), "utf8")) as { compilerOptions: { outDir: string; rootDir: string } };
  const source = "src/cli/main.ts";
  assert.ok(existsSync(join(ROOT, source)));
  const emitted = posix.join(tsconfig.compilerOptions.outDir, posix.relative(tsconfig.compilerOptions.rootDir, source)).replace(/\.ts$/, ".js");
  assert.equal(emitted, "dist/src/cli/main.js");
  assert.equal(pkg.bin["corral"], emitted, "the package's own bin is the same file");
  const builtAt = posix.join(workdir(build), emitted);
  // The build stage has the sources it compiles.
  assert.ok(
    all(build, "COPY").some((c) => /^src\s/.test(c)),
    "build copies src/",
  );
  assert.ok(
    all(build, "COPY").some((c) => /^tsconfig\.json\s/.test(c)),
    "build copies tsconfig.json",
  );

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
  const exposed = all(runtime, "EXPOSE")
    .flatMap((e) => e.split(/\s+/))
    .map((p) => Number(p.replace(/\/tcp$/, "")));
  for (const { name, config, self } of loaded) {
    assert.ok(volumes.includes(config.dataDir), `${name}'s data dir ${config.dataDir} is a VOLUME of the image`);
    for (const port of [self.clientPort, zkPortOf(self, name), self.quorumPort, self.electionPort, config.metricsPort, config.adminPort]) {
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
  // Metrics and admin ports alike, so a cluster file's entries can give members their own; once
  // configured they listen on every interface, as the client port does.
  assert.deepEqual([standalone.metricsPort, standalone.adminPort], [-1, -1], "the image leaves the metrics and admin ports to the configuration");
  assert.deepEqual([standalone.metricsHost, standalone.adminHost], ["0.0.0.0", "0.0.0.0"]);
});

test("Dockerfile: everything it copies from the context exists and is not ignored", () => {
  const ignoreFile = join(DEPLOY, "Dockerfile.dockerignore");
  const ignored = existsSync(ignoreFile)
    ? readFileSync(ignoreFile, "utf8")
        .split("\n")
        .map((l) => l.trim())
        .filter((l) => l !== "" && !l.startsWith("#"))
    : [];
  for (const stage of stages) {
    for (const copy of all(stage, "COPY")) {
      if (copy.startsWith("--from")) continue;
      const sources = copy
        .split(/\s+/)
        .filter((p) => !p.startsWith("--"))
        .slice(0, -1);
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

interface PodStart {
  status: number | null;
  stderr: string;
  /** What the script handed the server: its id and servers list. */
  env: { CORRAL_SERVER_ID: string; CORRAL_SERVERS: string };
  /** The arguments `node` got. */
  argv: string[];
}

/** Runs the start script as pod `podName` would, with a stand-in `node` in `bin` that reports what it was given. */
function podRunner(bin: string, script: string, baseEnv: NodeJS.ProcessEnv): (podName: string, env?: NodeJS.ProcessEnv) => PodStart {
  const file = join(bin, "start.sh");
  writeFileSync(file, script);
  writeFileSync(join(bin, "node"), '#!/bin/sh\nprintf \'%s\\n\' "$CORRAL_SERVER_ID" "$CORRAL_SERVERS" "$@"\n');
  chmodSync(join(bin, "node"), 0o755);
  return (podName, env = baseEnv) => {
    const run = spawnSync("sh", [file], { env: { ...env, PATH: `${bin}:${process.env["PATH"] ?? "/usr/bin:/bin"}`, HOSTNAME: podName }, encoding: "utf8" });
    const [id = "", servers = "", ...argv] = run.stdout.trim().split("\n");
    return { status: run.status, stderr: run.stderr, env: { CORRAL_SERVER_ID: id, CORRAL_SERVERS: servers }, argv };
  };
}

/** Runs `body` with a pod runner for the manifest's start script, in a temp dir removed after. */
function withPods<T>(k8s: K8sManifest, body: (runPod: ReturnType<typeof podRunner>, baseEnv: NodeJS.ProcessEnv) => T): T {
  const bin = mkdtempSync(join(tmpdir(), "corral-k8s-"));
  try {
    const baseEnv = plainEnv(k8s.container.env);
    return body(podRunner(bin, startScript(k8s), baseEnv), baseEnv);
  } finally {
    rmSync(bin, { recursive: true, force: true });
  }
}

test("k8s: the StatefulSet's pods load as the members their start script lists, behind a headless service", () => {
  const text = readFileSync(K8S_FILE, "utf8");
  const header = text
    .split("\n")
    .filter((l) => l.startsWith("#"))
    .join("\n");
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
    env: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } } }[];
    ports: K8sContainerPort[];
    volumeMounts: { name: string; mountPath: string }[];
    readinessProbe: { httpGet: { path: string; port: number | string } };
    livenessProbe: { httpGet: { path: string; port: number | string } };
  };
  const script = startScript(loadK8s());
  // Run the start script with a stand-in `node` to see the id and servers each pod gets.
  const bin = mkdtempSync(join(tmpdir(), "corral-k8s-"));
  try {
    const baseEnv = plainEnv(container.env);
    const runPod = podRunner(bin, script, baseEnv);
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
      const pod = runPod(podName);
      assert.deepEqual(pod.argv, [MAIN_IN_IMAGE, "server"], "the pod runs the image's server command");
      const config = loadConfig({ env: { ...baseEnv, ...pod.env } });
      assert.equal(config.serverId, ordinal + 1);
      const self = config.servers.find((s) => s.id === config.serverId)!;
      assert.equal(self.host, `${podName}.${spec.serviceName}`, `server ${config.serverId} is reached at its pod's stable name`);
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
      // Readiness is /readyz (serving), liveness /healthz (alive), both on this pod's admin port.
      assert.ok(config.adminPort > 0 && config.metricsPort > 0, `${podName} serves admin and metrics ports`);
      assert.deepEqual([config.adminHost, config.metricsHost], ["0.0.0.0", "0.0.0.0"], `${podName}'s HTTP ports are reachable from the kubelet and Prometheus`);
      for (const [probe, path] of [
        [container.readinessProbe, "/readyz"],
        [container.livenessProbe, "/healthz"],
      ] as const) {
        assert.equal(probe.httpGet.path, path);
        const port = probe.httpGet.port;
        const reached = container.ports.find((c) => (typeof port === "string" ? c.name === port : c.containerPort === port));
        assert.equal(reached?.containerPort, config.adminPort, `the ${path} probe asks the admin port`);
      }
      assert.ok(containerPorts.includes(config.metricsPort), `containerPort ${config.metricsPort} (metrics)`);
      assert.ok(servicePorts.includes(config.metricsPort), `the headless service names the metrics port for a ServiceMonitor`);
      const annotations = (spec.template.metadata as { annotations?: Record<string, string> }).annotations ?? {};
      assert.deepEqual(
        [annotations["prometheus.io/scrape"], annotations["prometheus.io/port"], annotations["prometheus.io/path"]],
        ["true", String(config.metricsPort), "/metrics"],
        "the pods carry the usual scrape annotations",
      );
      if (servers) assert.deepEqual(config.servers, servers);
      servers = config.servers;
    }
    assert.equal(servers?.length, spec.replicas, "the servers list names exactly the StatefulSet's pods");
    assert.equal(Number(baseEnv["CORRAL_INITIAL_MEMBERS"]), spec.replicas, "as shipped, every pod is an initial member");
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

test("k8s: a pod past the initial members starts as a joiner, its servers the initial members and itself", () => {
  const k8s = loadK8s();
  withPods(k8s, (runPod, baseEnv) => {
    const initial = Number(baseEnv["CORRAL_INITIAL_MEMBERS"]);
    assert.ok(Number.isSafeInteger(initial) && initial >= 1, `CORRAL_INITIAL_MEMBERS: ${baseEnv["CORRAL_INITIAL_MEMBERS"]}`);
    const first = runPod(`${k8s.name}-0`);
    assert.equal(first.status, 0, first.stderr);
    const members = loadConfig({ env: { ...baseEnv, ...first.env } }).servers;
    assert.deepEqual(
      members.map((s) => s.id),
      Array.from({ length: initial }, (_, i) => i + 1),
    );
    for (const ordinal of [initial, initial + 1, initial + 4]) {
      const podName = `${k8s.name}-${ordinal}`;
      const pod = runPod(podName);
      assert.equal(pod.status, 0, pod.stderr);
      assert.deepEqual(pod.argv, [MAIN_IN_IMAGE, "server"]);
      assert.match(pod.stderr, new RegExp(`server ${ordinal + 1} starts as a joiner`));
      const config = loadConfig({ env: { ...baseEnv, ...pod.env } });
      assert.equal(config.serverId, ordinal + 1);
      assert.deepEqual(config.servers.slice(0, initial), members, `${podName} lists the initial members as they do`);
      assert.equal(config.servers.length, initial + 1, `${podName} lists the initial members and itself only`);
      const self = config.servers.at(-1)!;
      assert.equal(self.id, ordinal + 1);
      assert.equal(self.host, `${podName}.${k8s.serviceName}`, "a joiner is reached at its pod's stable name");
      assert.deepEqual(
        [self.clientPort, self.quorumPort, self.electionPort, self.role, self.zkClientPort],
        [members[0]!.clientPort, members[0]!.quorumPort, members[0]!.electionPort, "participant", members[0]!.zkClientPort],
        "on the same ports as every pod",
      );
    }
    // A pod name without an ordinal, or no initial membership, is a clear failure, not a wrong list.
    assert.match(runPod("corral").stderr, /no ordinal at the end of HOSTNAME=corral/);
    const { CORRAL_INITIAL_MEMBERS: _dropped, ...noInitial } = baseEnv;
    const refused = runPod(`${k8s.name}-0`, noInitial);
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /CORRAL_INITIAL_MEMBERS must be a positive number/);
  });
});

test("k8s: the servers run with reconfigEnabled and the super digest of the Secret the header has you create", () => {
  const k8s = loadK8s();
  const env = plainEnv(k8s.container.env);
  const superDigest = k8s.container.env.find((e) => e.name === "CORRAL_SUPER_DIGEST");
  const ref = superDigest?.valueFrom?.secretKeyRef;
  assert.ok(ref, "CORRAL_SUPER_DIGEST comes from a Secret");
  assert.equal(ref.optional, true, "without the Secret the cluster still starts (and no one can reconfigure it)");
  assert.ok(!k8s.docs.some((d) => d["kind"] === "Secret"), "no password or digest ships in the manifest");
  const create = new RegExp(`kubectl create secret generic ${ref.name} \\\\\\n\\s*--from-literal=${ref.key}="(super:\\$\\(.*\\))"`).exec(k8s.header);
  assert.ok(create, `the header creates Secret ${ref.name} with key ${ref.key}`);
  const withId = (id: string) => ({ ...env, CORRAL_SERVER_ID: id, CORRAL_SERVERS: "1=a:2181:2888:3888,2=b:2181:2888:3888,3=c:2181:2888:3888" });
  const digest = generateDigest("super:letmein");
  const config = loadConfig({ env: { ...withId("1"), CORRAL_SUPER_DIGEST: digest } });
  assert.deepEqual([config.reconfigEnabled, config.superDigest], [true, digest]);
  assert.equal(loadConfig({ env: withId("2") }).superDigest, "", "no Secret: no super user");
  // The header's recipe makes the digest ZooKeeper (and corral) compute, when openssl is at hand.
  const openssl = spawnSync("sh", ["-c", "command -v openssl"]).status === 0;
  if (openssl) {
    const made = spawnSync("sh", ["-c", `printf '%s' "${create[1]}"`], { env: { ...process.env, PASSWORD: "letmein" }, encoding: "utf8" });
    assert.equal(made.stdout, digest, made.stderr);
  }
});

test("k8s: the header grows with the joiners' own entries and shrinks by the highest ordinals, then their volumes; `corral` is on the image's PATH", () => {
  const k8s = loadK8s();
  const scales = [...k8s.header.matchAll(new RegExp(`kubectl scale statefulset ${k8s.name} --replicas=(\\d+)`, "g"))].map((m) => Number(m[1]));
  assert.equal(scales.length, 2, "one scale up, one back down");
  const [grown, shrunk] = scales as [number, number];
  assert.ok(grown > k8s.replicas && shrunk === k8s.replicas, `scale ${k8s.replicas} → ${grown} → ${shrunk}`);
  const joiners = Array.from({ length: grown - k8s.replicas }, (_, i) => k8s.replicas + i);
  withPods(k8s, (runPod, baseEnv) => {
    const clientPort = loadConfig({ env: { ...baseEnv, ...runPod(`${k8s.name}-0`).env } }).clientPort;
    const execs = shellSessions(k8s.header);
    assert.equal(execs.length, 2, "one shell session to add, one to remove");
    for (const { pod, connect, script } of execs) {
      assert.equal(pod, `${k8s.name}-0`, "run in an initial member's pod");
      assert.equal(connect, `localhost:${clientPort}`, "on the client port");
      assert.match(script, /^addauth digest super:\$PASSWORD$/m, "signed in as the super user");
    }
    const add = /^reconfig -add (\S+)$/m.exec(execs[0]!.script);
    assert.ok(add, "the first session adds");
    const lines = add[1]!.split(",").map((line) => {
      const eq = line.indexOf("=");
      return parseMember(line.slice(0, eq), line.slice(eq + 1), true);
    });
    assert.deepEqual(
      lines.map((m) => m.serverId),
      joiners.map((o) => o + 1),
    );
    for (const ordinal of joiners) {
      const pod = runPod(`${k8s.name}-${ordinal}`);
      const self = loadConfig({ env: { ...baseEnv, ...pod.env } }).servers.at(-1)!;
      const line = lines.find((m) => m.serverId === self.id)!;
      assert.deepEqual(
        [line.host, line.quorumPort, line.electionPort, line.role, line.clientHost, line.clientPort],
        [self.host, self.quorumPort, self.electionPort, self.role, self.host, self.zkClientPort],
        `server ${self.id}'s line is its own entry, with its ZooKeeper port`,
      );
    }
    const remove = /^reconfig -remove (\S+)$/m.exec(execs[1]!.script);
    assert.deepEqual(
      remove?.[1]?.split(",").map(Number),
      joiners.map((o) => o + 1),
      "the servers of the ordinals a scale-down removes",
    );
    const pvcs = /kubectl delete pvc (.+)$/m.exec(k8s.header)?.[1]?.trim().split(/\s+/);
    assert.deepEqual(
      pvcs,
      joiners.map((o) => `${k8s.claimName}-${k8s.name}-${o}`),
      "their volume claims",
    );
    assert.ok(k8s.header.indexOf("reconfig -remove") < k8s.header.indexOf(`--replicas=${shrunk}`), "reconfigured out before the scale-down");
  });
  // `corral` in the exec steps: the image links it onto the PATH, as root, to the CLI it runs.
  const runtime = stages[1]!;
  const link = runtime.instructions.findIndex((i) => i.keyword === "RUN" && i.args.includes(`ln -s ${MAIN_IN_IMAGE} /usr/local/bin/corral`));
  assert.ok(link >= 0, "the runtime stage links /usr/local/bin/corral to the CLI");
  assert.match(runtime.instructions[link]!.args, new RegExp(`chmod (755|\\+x) ${MAIN_IN_IMAGE}`), "and makes it executable");
  const user = runtime.instructions.findIndex((i) => i.keyword === "USER");
  assert.ok(user < 0 || link < user, "before the image drops root");
  assert.equal(readFileSync(join(ROOT, "src/cli/main.ts"), "utf8").split("\n")[0], "#!/usr/bin/env node", "the CLI runs as a command");
});

// ---------------------------------------------------------------------------------------------
// deploy/prometheus/alerts.yml and deploy/grafana/corral-dashboard.json

/** Every series a corral server can export: its own metrics (a summary's _sum and _count too), Node's, and Prometheus' `up`. */
async function exportedNames(): Promise<Set<string>> {
  const metrics = new ServerMetrics();
  try {
    const names = new Set<string>(["up"]);
    for (const { name, type } of metrics.metricNames()) {
      names.add(name);
      if (type === "summary") for (const suffix of ["_sum", "_count"]) names.add(name + suffix);
    }
    // Node's process metrics, as the registry renders them (histograms and summaries with their suffixes).
    for (const line of (await metrics.registry.metrics()).split("\n")) {
      const name = /^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/.exec(line)?.[1];
      if (name !== undefined) names.add(name);
    }
    return names;
  } finally {
    metrics.close();
  }
}

const PROMQL_WORDS = new Set(["and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"]);

/** The metric names a PromQL expression reads: identifiers outside label matchers, ranges and strings that are not functions. */
function metricNamesIn(expr: string): string[] {
  const bare = expr
    .replace(/"[^"]*"/g, " ")
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
  return [...bare.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g)].map((m) => m[1]!).filter((word) => !PROMQL_WORDS.has(word.toLowerCase()));
}

test("alerts: the rule file's expressions read only metrics a corral server exports", async () => {
  const known = await exportedNames();
  const rules = parse(readFileSync(ALERTS_FILE, "utf8")) as {
    groups: { name: string; rules: { alert: string; expr: string; labels?: Record<string, string> }[] }[];
  };
  const alerts = rules.groups.flatMap((g) => g.rules);
  assert.ok(alerts.length >= 5, "a handful of alerts worth setting");
  const names = new Set<string>();
  for (const rule of alerts) {
    assert.ok(rule.labels?.["severity"], `${rule.alert} has a severity`);
    const read = metricNamesIn(rule.expr);
    assert.ok(read.length > 0, `${rule.alert} reads a metric: ${rule.expr}`);
    for (const name of read) assert.ok(known.has(name), `${rule.alert}: ${name} is a metric corral exports (${rule.expr})`);
    assert.ok(!names.has(rule.alert), `${rule.alert} is named once`);
    names.add(rule.alert);
  }
  for (const essential of ["CorralServerDown", "CorralNoLeader", "CorralServerNotServing", "CorralSlowFsync"])
    assert.ok(names.has(essential), `an alert ${essential}`);
});

test("grafana: every panel's query reads only metrics a corral server exports", async () => {
  const known = await exportedNames();
  const dashboard = JSON.parse(readFileSync(DASHBOARD_FILE, "utf8")) as {
    uid: string;
    panels: { title: string; type: string; targets?: { expr: string }[] }[];
  };
  assert.equal(dashboard.uid, "corral");
  const queried = dashboard.panels.filter((p) => p.type !== "row");
  assert.ok(queried.length >= 10);
  const read = new Set<string>();
  for (const panel of queried) {
    assert.ok((panel.targets ?? []).length > 0, `${panel.title} has a query`);
    for (const { expr } of panel.targets ?? []) {
      for (const name of metricNamesIn(expr)) {
        assert.ok(known.has(name), `${panel.title}: ${name} is a metric corral exports (${expr})`);
        read.add(name);
      }
    }
  }
  for (const name of ["znode_count", "readlatency", "updatelatency", "fsynctime_sum", "corral_learner_lag_zxids", "corral_serving"])
    assert.ok(read.has(name), `the dashboard shows ${name}`);
});
