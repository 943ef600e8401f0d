/**
 * Reconfiguration membership decisions against golden scripts (etcd raft's datadriven tests,
 * docs/architecture.md practice 13): each scenario sets up one member's state — the configuration
 * in force, reconfigurations logged and not applied, those heard of from peers — and asks the pure
 * decisions of src/replica/reconfig-membership.ts what follows. One file each under
 * test/unit/testdata/membership/ (the format is test/helpers/datadriven.ts's). After an intended
 * change, regenerate with UPDATE_GOLDEN=1 and review the diff.
 *
 * Script commands (versions are zxids written epoch.counter, or 0; members "1,2,3/4" are voters
 * 1, 2, 3 and observer 4):
 *   server 4 0 1,2,3/4     this is server 4, with configuration 0 (1,2,3/4) in force
 *   log 1.1 1,2,3,4        it logged the reconfiguration at 1.1 and has not applied it
 *   log-to 3.7             it logged other txns up to 3.7 (the log's end: the tree's zxid or the last logged)
 *   in-force 1.1 1,2,3,4   that configuration came into force here (its tree applied it)
 *   hear 1.1 1,2,3,4       a peer's notification says it logged 1.1 and has not seen it committed
 *   applied-to 3.7         this server's tree applied txns up to 3.7 (what its notifications carry)
 *   peer-applied 0 3.7     a peer's notification says 0 is in force there and its tree applied up to 3.7
 *   decide                 everything decided from the state as it stands
 *   place participant 1    a learner in a term as participant under leader 1: stays, or re-elects?
 *   offer 1.1 1,2,3,4      a notification offers this configuration (its text made from the members)
 *   offer-text 1.1 TEXT    ... or this raw text (a version past 2^53 may be given as a number)
 */
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import type { MemberAddress, MemberRole } from "../../src/common/membership.js";
import type { LogRecord } from "../../src/consensus/messages.js";
import { configText, reconfigTxnData, type ClusterConfig } from "../../src/replica/cluster-config.js";
import {
  configsInPlay,
  electionView,
  hearApplied,
  hearPending,
  learnerPlaceChange,
  notificationViews,
  outsideEveryConfig,
  outsiderView,
  parseOffered,
  pendingReconfig,
  provedCommitted,
  sameView,
  settledByLog,
  transportMembers,
  type ElectionView,
  type MembershipState,
  type PeerApplied,
} from "../../src/replica/reconfig-membership.js";
import { encodeTxn } from "../../src/store/txn-codec.js";
import { makeZxid } from "../../src/store/zxid.js";
import { aboutOf, goldenFiles, runDataDrivenFile, type Directive } from "../helpers/datadriven.js";

const DATA = fileURLToPath(new URL("../../../test/unit/testdata/membership/", import.meta.url));

/** "1.1" → the zxid of epoch 1, counter 1; "0" → 0; any other number as it is (an offer may be out of range). */
function version(text: string | undefined): number {
  if (text === undefined) throw new Error("a version is missing");
  const match = /^(\d+)\.(\d+)$/.exec(text);
  if (match !== null) return makeZxid(Number(match[1]), Number(match[2]));
  const n = Number(text);
  if (Number.isNaN(n)) throw new Error(`"${text}" is not a version`);
  return n;
}

/** "1,2,3/4": voters 1, 2, 3 and observer 4, at `version`. */
function config(at: number, members: string | undefined): ClusterConfig {
  if (members === undefined) throw new Error("the members are missing");
  const [voters = "", observers = ""] = members.split("/");
  const ids = (list: string, type: MemberRole): MemberAddress[] =>
    list === ""
      ? []
      : list.split(",").map((id) => ({ serverId: Number(id), host: "127.0.0.1", quorumPort: 2000 + Number(id), electionPort: 3000 + Number(id), role: type }));
  return { version: at, members: [...ids(voters, "participant"), ...ids(observers, "observer")] };
}

const v = (at: number) => (at === 0 ? "0" : Number.isSafeInteger(at) ? `${Math.floor(at / 2 ** 32)}.${at % 2 ** 32}` : String(at));

function describe(c: ClusterConfig): string {
  const of = (type: MemberRole) =>
    c.members
      .filter((m) => m.role === type)
      .map((m) => m.serverId)
      .join(",");
  return `${v(c.version)} ${of("participant")}/${of("observer")}`;
}

function describeView(view: ElectionView | undefined): string {
  if (view === undefined) return "none";
  const quorums = view.quorum.configs.map((q) => `${[...q.voters].join(",")}/${[...q.observers].join(",")}`).join(" + ");
  return `${view.role} in ${quorums}`;
}

/** One member's state, changed by the script. */
class MembershipScript {
  private state: MembershipState | undefined;

  private get s(): MembershipState {
    if (this.state === undefined) throw new Error("no server yet: start with `server`");
    return this.state;
  }

  run(d: Directive): string {
    const [a, b, c] = d.args;
    switch (d.command) {
      case "server":
        this.state = {
          serverId: Number(a),
          inForce: config(version(b), c),
          unapplied: [],
          lastLoggedZxid: version(b),
          lastAppliedZxid: version(b),
          heard: new Map(),
          leftOut: new Set(),
        };
        return "";
      case "log": {
        const logged = config(version(a), b);
        const record: LogRecord = {
          zxid: logged.version,
          record: encodeTxn({ header: { sessionId: 1n, cxid: 1, zxid: logged.version, timeMs: 0 }, body: { type: "reconfig", data: reconfigTxnData(logged) } }),
        };
        this.state = { ...this.s, unapplied: [...this.s.unapplied, record], lastLoggedZxid: Math.max(this.s.lastLoggedZxid, record.zxid) };
        return "";
      }
      case "log-to": {
        const zxid = version(a);
        if (zxid < this.s.lastLoggedZxid) throw new Error("a log never goes back here: log-to takes a later zxid");
        this.state = { ...this.s, lastLoggedZxid: zxid };
        return "";
      }
      case "applied-to": {
        const zxid = version(a);
        if (zxid < this.s.lastAppliedZxid) throw new Error("a tree never goes back here: applied-to takes a later zxid");
        this.state = { ...this.s, lastAppliedZxid: zxid, lastLoggedZxid: Math.max(this.s.lastLoggedZxid, zxid) };
        return "";
      }
      case "peer-applied":
        return this.peerApplied({ inForce: version(a), applied: version(b) });
      case "in-force": {
        const inForce = config(version(a), b);
        this.state = {
          ...this.s,
          inForce,
          lastAppliedZxid: Math.max(this.s.lastAppliedZxid, inForce.version),
          unapplied: this.s.unapplied.filter((r) => r.zxid > inForce.version),
          heard: new Map([...this.s.heard].filter(([at]) => at > inForce.version)),
        };
        return "";
      }
      case "hear":
        return this.hear(config(version(a), b));
      case "decide":
        return this.decide();
      case "place": {
        if (a !== "participant" && a !== "observer") throw new Error("place participant|observer LEADER");
        const change = learnerPlaceChange(this.s.inForce, this.s.serverId, a, Number(b));
        return change === undefined ? "stays" : `re-elects: ${change}`;
      }
      case "offer":
      case "offer-text": {
        const at = version(a);
        const text = d.command === "offer" ? configText(config(at, b)) : (b ?? "");
        const parsed = parseOffered({ version: at, text });
        return parsed === undefined ? "ignored: malformed" : `parsed: ${describe(parsed)}`;
      }
      default:
        throw new Error("unknown script command");
    }
  }

  private hear(offered: ClusterConfig): string {
    const before = electionView(this.s);
    const heard = hearPending(this.s, offered);
    if (heard === undefined) {
      return settledByLog(this.s, offered.version) && pendingReconfig(this.s)?.version !== offered.version
        ? "settled by this server's log (at or below its end, and not pending here): nothing changes"
        : "known already: nothing changes";
    }
    this.state = { ...this.s, heard };
    const after = electionView(this.s);
    return [
      `heard: ${[...heard.keys()].map(v).join(" ")}`,
      sameView(before, after) ? "election view unchanged" : `election view changed (a looking server restarts its election): ${describeView(after)}`,
    ].join("\n");
  }

  private peerApplied(peer: PeerApplied): string {
    const before = electionView(this.s);
    const leftOut = hearApplied(this.s, peer);
    if (leftOut === undefined) return "nothing changes";
    this.state = { ...this.s, leftOut };
    const after = electionView(this.s);
    return [
      `never commit: ${[...leftOut].map(v).join(" ")}`,
      sameView(before, after) ? "election view unchanged" : `election view changed (a looking server restarts its election): ${describeView(after)}`,
    ].join("\n");
  }

  private decide(): string {
    const s = this.s;
    const proved = provedCommitted(s);
    const pending = pendingReconfig(s);
    const views = notificationViews(s);
    return [
      `proved committed: ${proved === undefined ? "none" : describe(proved)}`,
      `pending logged: ${pending === undefined ? "none" : describe(pending)}`,
      `in play: ${configsInPlay(s).map(describe).join(" | ")}`,
      `election view: ${describeView(electionView(s))}`,
      ...(outsideEveryConfig(s) ? [`outside every configuration: looks as ${describeView(outsiderView(s))}`] : []),
      `transport dials: ${transportMembers(s)
        .map((m) => `${m.serverId}${m.role === "participant" ? "p" : "o"}`)
        .join(" ")}`,
      `notifications carry: config ${views.config === undefined ? "none" : v(views.config.version)}, pending ${views.pending === undefined ? "none" : v(views.pending.version)}, applied ${views.applied === undefined ? "none" : v(views.applied)}`,
    ].join("\n");
  }
}

for (const { name, path } of goldenFiles(DATA)) {
  test(`membership golden ${name}: ${aboutOf(path)}`, () => {
    const script = new MembershipScript();
    runDataDrivenFile(path, (directive) => script.run(directive));
  });
}
