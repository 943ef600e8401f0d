/**
 * Reconfiguration membership decisions against golden traces (etcd raft's datadriven tests,
 * docs/architecture.md practice 13): each scenario sets up one member's state — the configuration
 * in force, reconfigurations logged and not applied, those heard of from peers — and asks the pure
 * decisions of src/replica/reconfig-membership.ts what follows; the trace of inputs and decisions
 * is compared with test/unit/testdata/membership/<name>.txt. After an intended change, regenerate
 * with UPDATE_GOLDEN=1 and review the diff.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import type { MemberAddress } from "../../src/common/membership.js";
import type { LogRecord } from "../../src/consensus/messages.js";
import { configText, reconfigTxnData, type ClusterConfig, type MemberRole } from "../../src/replica/cluster-config.js";
import {
  configsInPlay,
  electionView,
  hearPending,
  learnerPlaceChange,
  notificationViews,
  outsideEveryConfig,
  outsiderView,
  parseOffered,
  pendingReconfig,
  provedCommitted,
  sameView,
  transportMembers,
  type ElectionView,
  type MembershipState,
} from "../../src/replica/reconfig-membership.js";
import { encodeTxn } from "../../src/store/txn-codec.js";
import { makeZxid } from "../../src/store/zxid.js";

const DATA = fileURLToPath(new URL("../../../test/unit/testdata/membership/", import.meta.url));

/** "1,2,3/4": voters 1, 2, 3 and observer 4, at `version`. */
function config(version: number, members: string): ClusterConfig {
  const [voters = "", observers = ""] = members.split("/");
  const ids = (list: string, type: MemberRole): MemberAddress[] =>
    list === "" ? [] : list.split(",").map((id) => ({ serverId: Number(id), host: "127.0.0.1", quorumPort: 2000 + Number(id), electionPort: 3000 + Number(id), type }));
  return { version, members: [...ids(voters, "participant"), ...ids(observers, "observer")] };
}

const v = (version: number) => (version === 0 ? "v0" : `v${version.toString(16)}`);

function describe(c: ClusterConfig): string {
  const of = (type: MemberRole) =>
    c.members
      .filter((m) => m.type === type)
      .map((m) => m.serverId)
      .join(",");
  return `${v(c.version)} ${of("participant")}/${of("observer")}`;
}

function describeView(view: ElectionView | undefined): string {
  if (view === undefined) return "none";
  const quorums = view.quorum.configs.map((q) => `${[...q.voters].join(",")}/${[...q.observers].join(",")}`).join(" + ");
  return `${view.role} in ${quorums}`;
}

/** One member's state, changed by the script, and the trace of what was asked and decided. */
class Script {
  readonly trace: string[] = [];
  private state: MembershipState;

  constructor(serverId: number, inForce: ClusterConfig) {
    this.state = { serverId, inForce, unapplied: [], heard: new Map() };
    this.trace.push(`start: server ${serverId}, in force ${describe(inForce)}`);
  }

  /** This server logged a reconfiguration (a txn at zxid = its version) and has not applied it. */
  log(c: ClusterConfig): void {
    const record: LogRecord = {
      zxid: c.version,
      record: encodeTxn({ header: { sessionId: 1n, cxid: 1, zxid: c.version, timeMs: 0 }, body: { type: "reconfig", data: reconfigTxnData(c) } }),
    };
    this.state = { ...this.state, unapplied: [...this.state.unapplied, record] };
    this.trace.push(`log ${describe(c)}`);
  }

  /** A configuration came into force here (applied, or adopted from a peer). */
  inForce(c: ClusterConfig): void {
    this.state = {
      ...this.state,
      inForce: c,
      unapplied: this.state.unapplied.filter((r) => r.zxid > c.version),
      heard: new Map([...this.state.heard].filter(([version]) => version > c.version)),
    };
    this.trace.push(`in force ${describe(c)}`);
  }

  /** A peer's notification says it logged `c` and has not seen it committed. */
  hear(c: ClusterConfig): void {
    const before = electionView(this.state);
    const heard = hearPending(this.state, c);
    this.trace.push(`hear pending ${describe(c)}`);
    if (heard === undefined) {
      this.trace.push("  known already: nothing changes");
      return;
    }
    this.state = { ...this.state, heard };
    const after = electionView(this.state);
    this.trace.push(`  heard: ${[...heard.keys()].map(v).join(" ")}`);
    this.trace.push(`  election view ${sameView(before, after) ? "unchanged" : `changed: ${describeView(after)}`} (a looking server restarts its election when it changes)`);
  }

  /** Everything the peer decides from the state as it stands. */
  show(): void {
    const s = this.state;
    const proved = provedCommitted(s);
    const pending = pendingReconfig(s);
    const views = notificationViews(s);
    this.trace.push("decide");
    this.trace.push(`  proved committed: ${proved === undefined ? "none" : describe(proved)}`);
    this.trace.push(`  pending logged: ${pending === undefined ? "none" : describe(pending)}`);
    this.trace.push(`  in play: ${configsInPlay(s).map(describe).join(" | ")}`);
    this.trace.push(`  election view: ${describeView(electionView(s))}`);
    if (outsideEveryConfig(s)) this.trace.push(`  outside every configuration: looks as ${describeView(outsiderView(s))}`);
    this.trace.push(
      `  transport dials: ${transportMembers(s)
        .map((m) => `${m.serverId}${m.type === "participant" ? "p" : "o"}`)
        .join(" ")}`,
    );
    this.trace.push(`  notifications carry: config ${views.config === undefined ? "none" : v(views.config.version)}, pending ${views.pending === undefined ? "none" : v(views.pending.version)}`);
  }

  /** A learner in a term as `termRole` under `leaderId`: does the configuration in force keep it there? */
  place(termRole: MemberRole, leaderId: number): void {
    const change = learnerPlaceChange(this.state.inForce, this.state.serverId, termRole, leaderId);
    this.trace.push(`place as ${termRole} under leader ${leaderId}: ${change === undefined ? "stays" : `re-elects (${change})`}`);
  }

  /** A notification's configuration text, as a peer sent it. */
  offer(version: number, text: string): void {
    const parsed = parseOffered({ version, text });
    this.trace.push(`offered ${JSON.stringify(text)} at ${Number.isSafeInteger(version) ? v(version) : String(version)}: ${parsed === undefined ? "ignored (malformed)" : describe(parsed)}`);
  }
}

const z = makeZxid;

const scenarios: Record<string, { about: string; run: () => Script }> = {
  "restart-after-two-reconfigs": {
    about: "restarted with 3 → 5 → 3 voters logged and neither applied: the later proves the earlier committed; only the last is pending",
    run: () => {
      const s = new Script(1, config(0, "1,2,3"));
      s.log(config(z(1, 1), "1,2,3,4,5"));
      s.log(config(z(1, 2), "1,2,4"));
      s.show();
      s.inForce(config(z(1, 1), "1,2,3,4,5"));
      s.show();
      return s;
    },
  },
  "observer-hears-its-promotion": {
    about: "observer 4 never logged the reconfiguration that makes it a voter; it hears of it and must vote in elections",
    run: () => {
      const s = new Script(4, config(0, "1,2,3/4"));
      s.show();
      s.hear(config(z(1, 1), "1,2,3,4"));
      s.hear(config(z(1, 1), "1,2,3,4"));
      s.show();
      s.place("observer", 1);
      s.inForce(config(z(1, 1), "1,2,3,4"));
      s.place("observer", 1);
      s.place("participant", 1);
      s.show();
      return s;
    },
  },
  "heard-set-is-bounded": {
    about: "reconfigurations heard of and not logged are kept up to four, the oldest dropped first; one logged here is known already",
    run: () => {
      const s = new Script(1, config(0, "1,2,3"));
      s.log(config(z(1, 1), "1,2,3,4"));
      s.hear(config(z(1, 1), "1,2,3,4"));
      for (let i = 2; i <= 6; i++) s.hear(config(z(1, i), "1,2,3"));
      s.show();
      return s;
    },
  },
  "removed-server": {
    about: "server 3 is removed: while pending it still votes; once in force it elects as nobody's voter, still dials the others, and re-elects if it was a learner",
    run: () => {
      const s = new Script(3, config(0, "1,2,3"));
      s.log(config(z(1, 1), "1,2"));
      s.show();
      s.place("participant", 1);
      s.inForce(config(z(1, 1), "1,2"));
      s.show();
      s.place("participant", 1);
      return s;
    },
  },
  "learner-place-changes": {
    about: "a learner stays in its term while its role and its leader's vote stand; a demotion or a leader removed ends it",
    run: () => {
      const s = new Script(2, config(0, "1,2,3"));
      s.place("participant", 3);
      s.inForce(config(z(1, 1), "1,2,4"));
      s.place("participant", 3);
      s.place("participant", 1);
      s.inForce(config(z(1, 2), "1,4/2"));
      s.place("participant", 1);
      s.place("observer", 1);
      return s;
    },
  },
  "malformed-offers": {
    about: "a peer's configuration text that does not parse, or a version past 2^53, is ignored",
    run: () => {
      const s = new Script(1, config(0, "1,2,3"));
      s.offer(z(1, 1), configText(config(z(1, 1), "1,2,3,4")));
      s.offer(z(1, 1), "server.1=nowhere");
      s.offer(2 ** 60, configText(config(0, "1,2,3")));
      return s;
    },
  },
};

for (const [name, scenario] of Object.entries(scenarios)) {
  test(`membership golden trace: ${name}`, () => {
    const text = [`# ${scenario.about}`, ...scenario.run().trace, ""].join("\n");
    const file = `${DATA}${name}.txt`;
    if (process.env.UPDATE_GOLDEN === "1") writeFileSync(file, text);
    assert.equal(text, readFileSync(file, "utf8"), `trace of ${name} differs from ${file} (UPDATE_GOLDEN=1 rewrites it)`);
  });
}
