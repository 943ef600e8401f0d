/**
 * Replica-level scenarios against golden traces (etcd raft's datadriven tests, docs/architecture.md
 * practice 13): real replicas, built by `buildReplica` over the simulator's twins with every delay
 * fixed (replica-scenario-cluster.ts), and scripted clients speaking either door's real protocol
 * (replica-scenario-client.ts). Each scenario is a short script beside the trace every command
 * produces, one file each under test/unit/testdata/replica/ (the format is
 * test/helpers/datadriven.ts's). After an intended change, regenerate with UPDATE_GOLDEN=1 and
 * review the diff.
 *
 * Script commands:
 *   start 1 2 3            these servers start; runs until one leads and every server serves
 *   connect c1 2 zk        client c1 connects to server 2 through the ZooKeeper door (zk) or the
 *                          gRPC door (sdk); its first connect makes a session, later ones resume it
 *   send c1 setData /a v1 [version]   c1 sends a request: create PATH DATA, setData PATH DATA
 *                          [VERSION], delete PATH [VERSION], getData|exists PATH [watch], sync PATH
 *   ping c1                c1 pings its server
 *   hang-up c1             c1 gives up on its connection (what is pending on it fails)
 *   settle [clients]       run until no message, fsync or client frame is left (held ones wait);
 *                          `clients`: show only what reached the clients
 *   advance 100            let 100 ms pass
 *   hold 2 3 / release 2 3 the quorum traffic from server 2 to server 3 waits / arrives
 *   crash 2 / restart 2    server 2's process dies (what it had not fsynced is lost) / starts again
 *   isolate 2 / heal       server 2 is cut off from the other servers / every link is restored
 *   node /a                what each server holds at /a
 *   roles                  each server's role
 *
 * Trace lines: "2→3 …" a quorum message arriving (a forwarded "request", "proposal", "ack",
 * "commit", "revalidate"…), "[held]" when it waits on a held link; "3 logged Z" a record durable;
 * "3 applies Z …" a txn applied; "c1→2 …" a client frame leaving, "c1←2 …" one arriving,
 * "c1✗2 …" its connection ending. Sessions are named s1, s2… in order of appearance.
 */
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import type { ClientRequest } from "../../src/replica/requests.js";
import { aboutOf, goldenFiles, intArgs, runDataDrivenFile, type Directive } from "../helpers/datadriven.js";
import { ScriptedClient, type Door } from "./replica-scenario-client.js";
import { ReplicaScenario } from "./replica-scenario-cluster.js";

const DATA = fileURLToPath(new URL("../../../test/unit/testdata/replica/", import.meta.url));
const enc = (s: string) => new TextEncoder().encode(s);

class ReplicaScript {
  private scenarioValue: ReplicaScenario | undefined;
  private readonly clients = new Map<string, ScriptedClient>();

  private get scenario(): ReplicaScenario {
    if (this.scenarioValue === undefined) throw new Error("no servers yet: start with `start`");
    return this.scenarioValue;
  }

  run(d: Directive): string {
    const [a, b, c] = d.args;
    switch (d.command) {
      case "start":
        this.scenarioValue = new ReplicaScenario(intArgs(d));
        return this.scenario.start();
      case "connect":
        this.client(a, c).connect(intArgs({ ...d, args: [b ?? ""] })[0]!);
        break;
      case "send":
        this.client(a).submit(request(d.args.slice(1)));
        break;
      case "ping":
        this.client(a).ping();
        break;
      case "hang-up":
        this.client(a).hangUp();
        break;
      case "settle":
        this.scenario.settle();
        if (a === "clients") return clientLines(this.scenario.takeTrace());
        if (a !== undefined) throw new Error("settle [clients]");
        break;
      case "advance":
        this.scenario.advance(intArgs(d)[0]!);
        break;
      case "hold":
        this.scenario.hold(...link(d));
        break;
      case "release":
        this.scenario.release(...link(d));
        break;
      case "crash":
        this.scenario.crash(intArgs(d)[0]!);
        break;
      case "restart":
        this.scenario.restart(intArgs(d)[0]!);
        break;
      case "isolate":
        this.scenario.isolate(intArgs(d)[0]!);
        break;
      case "heal":
        this.scenario.heal();
        break;
      case "node":
        return this.scenario.node(a ?? "/");
      case "roles":
        return this.scenario.roles();
      default:
        throw new Error("unknown script command");
    }
    return this.scenario.takeTrace();
  }

  /** The client named `name`; `door` is needed the first time. */
  private client(name: string | undefined, door?: string): ScriptedClient {
    if (name === undefined || !/^c\d+$/.test(name)) throw new Error("a client is named c1, c2, …");
    let client = this.clients.get(name);
    if (client === undefined) {
      if (door !== "zk" && door !== "sdk") throw new Error(`client ${name} is new: say its door, zk or sdk`);
      client = new ScriptedClient(name, door satisfies Door, this.scenario);
      this.clients.set(name, client);
    }
    return client;
  }
}

/** "hold 2 3": the link from server 2 to server 3. */
function link(d: Directive): [number, number] {
  const [from, to] = intArgs(d);
  if (from === undefined || to === undefined) throw new Error(`${d.command} FROM TO`);
  return [from, to];
}

/** Only what the clients saw: for the steps a scenario is not about. */
function clientLines(trace: string): string {
  return trace
    .split("\n")
    .filter((line) => /^c\d+[←✗]/.test(line))
    .join("\n");
}

/** "setData /a v1 0" → the request (version -1 unless given). */
function request(words: readonly string[]): ClientRequest {
  const [op, path, third, fourth] = words;
  if (path === undefined) throw new Error("a request needs a path");
  const version = (text: string | undefined): number => {
    if (text === undefined) return -1;
    if (!Number.isSafeInteger(Number(text))) throw new Error(`"${text}" is not a version`);
    return Number(text);
  };
  switch (op) {
    case "create":
      return { op: "create", path, data: enc(third ?? ""), acl: [], mode: "persistent", ttlMs: 0 };
    case "setData":
      return { op: "setData", path, data: enc(third ?? ""), version: version(fourth) };
    case "delete":
      return { op: "delete", path, version: version(third) };
    case "getData":
    case "exists":
      return { op, path, watch: third === "watch" };
    case "sync":
      return { op: "sync", path };
    default:
      throw new Error(`no request "${op ?? ""}" in scenarios`);
  }
}

for (const { name, path } of goldenFiles(DATA)) {
  test(`replica scenario ${name}: ${aboutOf(path)}`, () => {
    const script = new ReplicaScript();
    runDataDrivenFile(path, (directive) => script.run(directive));
  });
}
