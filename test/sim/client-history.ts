/**
 * The checks of what one simulated client sees, whichever protocol it speaks: session order and a
 * single system image (across reconnects and the client's successive sessions), sync-then-read, the
 * ACL verdict of every read, and the watch contract (an event reaches the client before the change
 * it tells of can be read, one session's events come in zxid order, a one-time watch fires once).
 */
import { ZkErrorCode } from "../../src/common/errors.js";
import type { WatchPaths } from "../../src/client/watch-registry.js";
import type { ClientRequest } from "../../src/replica/requests.js";
import { WatchEventType } from "../../src/store/types.js";
import { formatZxid } from "../../src/store/zxid.js";
import { identityOf, readRefused } from "./acl-workload.js";
import type { Checker } from "./checker.js";
import type { SimAnswer, SimEvent, SimSessionState } from "./sim-session.js";

/** One request the client sent, as the checks remember it. */
export interface Token {
  kind: "write" | "read" | "sync" | "auth" | "watch" | "reconfig";
  request: ClientRequest;
  xid: number;
  /** The write-ack high-water mark when it was sent (a sync must reach it). */
  ackedZxidMaxAtSend: number;
}

/** A watch the client holds, with what it had read when it set it. */
interface HeldWatch {
  kind: "data" | "exist" | "child";
  path: string;
  /** data: the node's mzxid; child: its pzxid; exist: 0 (the node was absent). */
  seenZxid: bigint;
}

/** What the history needs of the world: the checker, the counters, the trace. */
export interface HistoryWorld {
  readonly checker: Checker;
  count(stat: "ackedWrites" | "aclRefusals" | "watchEvents" | "reconfigsAcked"): void;
  reconfigAcked(version: number): void;
  log(line: string): void;
}

const ORDER = "client order and single system image";

export class ClientHistory {
  /** Requests sent and not yet answered or failed, in the order sent. */
  private pending: Token[] = [];
  private readonly watches = new Map<string, HeldWatch>();
  /**
   * Persistent watches (addWatch), by path: whether recursive, and what this client knows of the
   * node — its mzxid, "absent", or undefined when unknown (after a reconnect: ZooKeeper does not
   * replay changes missed by a persistent watch).
   */
  private readonly persistent = new Map<string, { recursive: boolean; seen: bigint | "absent" | undefined }>();
  private lastEventZxid = 0n;
  /** What this client has seen, across connections and sessions: reads never go back (single system image; see the read-only exception). */
  private lastZxidSeen = 0n;
  private lastWriteZxid = 0n;
  /** The write-ack high-water mark when the last completed sync was sent: reads after it must reach it. */
  private syncFloor = 0;

  constructor(
    private readonly clientId: number,
    private readonly world: HistoryWorld,
  ) {}

  get inFlight(): number {
    return this.pending.length;
  }

  hasPersistentWatch(path: string): boolean {
    return this.persistent.has(path);
  }

  /** A new session begins: nothing is in flight and no watch is held; what the client saw stays. */
  sessionStarted(): void {
    this.pending = [];
    this.watches.clear();
    this.persistent.clear();
    this.lastEventZxid = 0n;
  }

  sent(token: Token): void {
    this.pending.push(token);
  }

  failed(token: Token): void {
    const at = this.pending.indexOf(token);
    if (at >= 0) this.pending.splice(at, 1);
  }

  /** The session announced `state`; `readOnly`: it is served read-only now. */
  stateChanged(state: SimSessionState, readOnly: boolean): void {
    // A new session taken read-only may be served by a member cut off for any length of time: from
    // here the order it sees is its own (ZooKeeper promises it per session; across a client's
    // sessions the checks hold corral to it only where a quorum serves).
    if (state === "connected" && readOnly) {
      this.lastZxidSeen = 0n;
      this.syncFloor = 0;
    }
    // Changes a persistent watch missed while disconnected are not replayed (as in ZooKeeper).
    if (state === "reconnected") for (const watch of this.persistent.values()) watch.seen = undefined;
  }

  /** The paths to re-register on a new connection, with the client's last zxid. */
  watchedPaths(): WatchPaths {
    const of = (kind: HeldWatch["kind"]) => [...this.watches.values()].filter((w) => w.kind === kind).map((w) => w.path);
    const persistent = (recursive: boolean) => [...this.persistent].filter(([, w]) => w.recursive === recursive).map(([path]) => path);
    return {
      dataWatches: of("data"),
      existWatches: of("exist"),
      childWatches: of("child"),
      persistentWatches: persistent(false),
      persistentRecursiveWatches: persistent(true),
    };
  }

  /** `token` was answered on session `sessionId`, served by `serverId`. */
  answered(token: Token, answer: SimAnswer, sessionId: bigint, serverId: number | undefined): void {
    const { checker } = this.world;
    const id = this.clientId;
    const expected = this.pending.shift();
    if (expected !== token) {
      checker.fail(ORDER, `client ${id} got the answer to ${token.xid} before ${expected?.xid}`);
      return;
    }
    const zxid = answer.zxid;
    if (token.kind === "reconfig") this.world.log(`client ${id}'s reconfig answered ${answer.err}${answer.err === 0 ? ` at ${formatZxid(Number(zxid))}` : ""}`);
    if (token.kind === "reconfig" && answer.err === 0) {
      // The answer is the new configuration, written by the reconfig's own txn.
      const version = Number(answer.stat?.mzxid ?? -1n);
      if (version !== Number(zxid))
        checker.fail(ORDER, `client ${id}'s reconfig answered at ${formatZxid(Number(zxid))} with a configuration of version ${formatZxid(version)}`);
      this.world.reconfigAcked(version);
      this.world.count("reconfigsAcked");
    }
    if ((token.kind === "write" || token.kind === "reconfig") && answer.err === 0) {
      // A write answers with its own txn's zxid, which may precede what an earlier read or sync on
      // the same session reflected; reads and syncs reflect the whole tree and never go back.
      if (zxid <= this.lastWriteZxid)
        checker.fail(
          ORDER,
          `client ${id}'s write ${token.xid} committed at ${formatZxid(Number(zxid))}, not after its earlier write at ${formatZxid(Number(this.lastWriteZxid))}`,
        );
      this.lastWriteZxid = zxid;
      checker.writeAcked({ zxid: Number(zxid), sessionId, cxid: token.xid });
      this.world.count("ackedWrites");
    }
    if (token.kind === "read" || token.kind === "sync") {
      if (zxid < this.lastZxidSeen) checker.fail(ORDER, `client ${id} saw ${formatZxid(Number(zxid))} after ${formatZxid(Number(this.lastZxidSeen))}`);
      if (token.kind === "sync" && answer.err === 0) {
        // sync then read sees every write answered before the sync began.
        this.syncFloor = token.ackedZxidMaxAtSend;
        if (Number(zxid) < token.ackedZxidMaxAtSend)
          checker.fail(ORDER, `client ${id}'s sync answered at ${formatZxid(Number(zxid))}, before ${formatZxid(token.ackedZxidMaxAtSend)} acked earlier`);
      }
      if (token.kind === "read") {
        if (Number(zxid) < this.syncFloor)
          checker.fail(ORDER, `client ${id} read at ${formatZxid(Number(zxid))} after a sync that covered ${formatZxid(this.syncFloor)}`);
        this.readSeen(token.request, answer, serverId);
      }
    }
    if (token.kind === "watch" && answer.err === 0 && token.request.op === "addWatch") {
      const { path, mode } = token.request;
      this.persistent.set(path, { recursive: mode === "persistent-recursive", seen: undefined });
      this.world.log(`client ${id} set a ${mode === "persistent-recursive" ? "recursive" : "persistent"} watch on ${path}`);
    }
    if (zxid > this.lastZxidSeen) this.lastZxidSeen = zxid;
  }

  /** A read's answer: its ACL verdict, the watches it shows must have fired, the watch it sets. */
  private readSeen(request: ClientRequest, answer: SimAnswer, serverId: number | undefined): void {
    if (request.op !== "getData" && request.op !== "exists" && request.op !== "getChildren") return;
    const { checker } = this.world;
    const id = this.clientId;
    const path = request.path;
    if (request.op === "getData" && (answer.err === 0 || answer.err === ZkErrorCode.NOAUTH)) {
      if (answer.err === ZkErrorCode.NOAUTH) this.world.count("aclRefusals");
      const identity = identityOf(id);
      if (readRefused(path, identity) !== (answer.err === ZkErrorCode.NOAUTH)) {
        checker.fail(
          "ACL decisions follow each node's ACL",
          `${identity} client ${id}'s read of ${path} at server ${serverId} (${formatZxid(Number(answer.zxid))}) answered ${answer.err}`,
        );
      }
    }
    const gone = answer.err === ZkErrorCode.NONODE;
    if (!gone && answer.err !== 0) return;
    const stat = answer.stat;
    // A change this session holds a watch for must have been told before it can be read (contract item 6).
    const before = "watch events arrive before the change can be read";
    if (request.op === "getChildren") {
      const held = this.watches.get(`child:${path}`);
      if (held && (gone || (stat !== undefined && stat.pzxid > held.seenZxid)))
        checker.fail(
          before,
          `client ${id} reads ${path}'s children changed (${gone ? "node gone" : `pzxid ${formatZxid(Number(stat!.pzxid))}`}) with its child watch set at ${formatZxid(Number(held.seenZxid))} not fired`,
        );
      if (!gone && request.watch && stat !== undefined) this.watches.set(`child:${path}`, { kind: "child", path, seenZxid: stat.pzxid });
      return;
    }
    const persistent = this.persistent.get(path);
    if (persistent !== undefined && !persistent.recursive) {
      const seen = persistent.seen;
      const changed = seen === "absent" ? !gone : seen !== undefined && (gone || (stat !== undefined && stat.mzxid > seen));
      if (changed)
        checker.fail(
          before,
          `client ${id} reads ${path} ${gone ? "gone" : `at mzxid ${formatZxid(Number(stat!.mzxid))}`} with its persistent watch last told ${seen === "absent" ? "it was absent" : formatZxid(Number(seen))}`,
        );
      persistent.seen = gone ? "absent" : (stat?.mzxid ?? undefined);
    }
    const data = this.watches.get(`data:${path}`);
    if (data && (gone || (stat !== undefined && stat.mzxid > data.seenZxid)))
      checker.fail(
        before,
        `client ${id} reads ${path} changed (${gone ? "node gone" : `mzxid ${formatZxid(Number(stat!.mzxid))}`}) with its data watch set at ${formatZxid(Number(data.seenZxid))} not fired`,
      );
    const exist = this.watches.get(`exist:${path}`);
    if (exist && !gone) checker.fail(before, `client ${id} reads ${path} created with its exists watch not fired`);
    if (!request.watch) return;
    // getData on a missing node sets no watch; exists sets an exists watch there.
    if (!gone && stat !== undefined) this.watches.set(`data:${path}`, { kind: "data", path, seenZxid: stat.mzxid });
    else if (request.op === "exists") this.watches.set(`exist:${path}`, { kind: "exist", path, seenZxid: 0n });
    else return;
    this.world.log(`client ${id} set a ${gone ? "exist" : "data"} watch on ${path} (answer at ${formatZxid(Number(answer.zxid))})`);
  }

  event(event: SimEvent): void {
    const { checker } = this.world;
    const id = this.clientId;
    this.world.count("watchEvents");
    this.world.log(`client ${id} got ${eventName(event.type)} ${event.path} at ${formatZxid(Number(event.zxid))}`);
    if (event.zxid < this.lastEventZxid) {
      checker.fail(
        "a session's watch events arrive in zxid order",
        `client ${id} got ${eventName(event.type)} ${event.path} at ${formatZxid(Number(event.zxid))} after an event at ${formatZxid(Number(this.lastEventZxid))}`,
      );
    }
    this.lastEventZxid = event.zxid;
    // The watches an event fires, as ZooKeeper's client materializes them; each fires once.
    const kinds: HeldWatch["kind"][] =
      event.type === WatchEventType.NodeChildrenChanged
        ? ["child"]
        : event.type === WatchEventType.NodeDeleted
          ? ["data", "exist", "child"]
          : ["data", "exist"];
    const fired: string[] = kinds.filter((kind) => this.watches.delete(`${kind}:${event.path}`));
    const own = this.persistent.get(event.path);
    if (own !== undefined && (!own.recursive || event.type !== WatchEventType.NodeChildrenChanged)) {
      fired.push("persistent");
      if (!own.recursive && event.type !== WatchEventType.NodeChildrenChanged) own.seen = event.type === WatchEventType.NodeDeleted ? "absent" : event.zxid;
    }
    if (event.type !== WatchEventType.NodeChildrenChanged && [...this.persistent].some(([path, w]) => w.recursive && event.path.startsWith(`${path}/`)))
      fired.push("recursive");
    if (fired.length === 0)
      checker.fail(
        "a one-time watch fires at most once",
        `client ${id} got ${eventName(event.type)} ${event.path} at ${formatZxid(Number(event.zxid))} with no watch set there`,
      );
  }
}

function eventName(type: number): string {
  return Object.entries(WatchEventType).find(([, value]) => value === type)?.[0] ?? String(type);
}
