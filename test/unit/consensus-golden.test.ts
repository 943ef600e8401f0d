/**
 * Zab flows against golden traces (etcd raft's datadriven tests, docs/architecture.md practice 13): each
 * scenario is a short script; its full message-and-event trace is compared with
 * test/unit/testdata/zab/<name>.txt. After an intended protocol change, regenerate with
 * UPDATE_GOLDEN=1 and review the diff.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { Harness } from "./consensus-harness.js";
import { makeZxid } from "../../src/store/zxid.js";

const DATA = fileURLToPath(new URL("../../../test/unit/testdata/zab/", import.meta.url));
const enc = (s: string) => new TextEncoder().encode(s);
const z = makeZxid;

const scenarios: Record<string, { about: string; run: (h: Harness) => void; voters?: number[]; observers?: number[] }> = {
  "establish-and-broadcast": {
    about: "three fresh servers: discovery, empty DIFFs, newLeader, upToDate; two pipelined proposals commit",
    run: (h) => {
      h.start(1);
      h.start(2, 1);
      h.start(3, 1);
      h.deliver();
      h.propose("a");
      h.propose("b");
      h.deliver();
    },
  },
  "trunc-uncommitted-tail": {
    about: "server 3 logged 1.3 in epoch 1 that nobody else has; leader 1 has 2.1: server 3 is truncated to 1.2, then gets 2.1",
    run: (h) => {
      const committed = [
        { zxid: z(1, 1), record: enc("a") },
        { zxid: z(1, 2), record: enc("b") },
      ];
      for (const id of [1, 2, 3]) Object.assign(h.server(id), { acceptedEpoch: 2, currentEpoch: 2, log: committed.slice() });
      h.server(1).log.push({ zxid: z(2, 1), record: enc("c") });
      h.server(3).log.push({ zxid: z(1, 3), record: enc("stale") });
      h.start(1);
      h.start(2, 1);
      h.start(3, 1);
      h.deliver();
    },
  },
  "snap-behind-window": {
    about: "a window of two records: server 3 joins after six commits and gets a SNAP, then the next proposal",
    run: (h) => {
      h.committedLogRecordsMax = 2;
      h.start(1);
      h.start(2, 1);
      h.deliver();
      for (let i = 0; i < 6; i++) h.propose(`t${i}`);
      h.deliver();
      h.start(3, 1);
      h.deliver();
      h.propose("after");
      h.deliver();
    },
  },
  "join-with-proposals-in-flight": {
    about: "server 2 does not fsync; server 3 joins while 1.1 and 1.2 are outstanding: it gets them as uncommitted syncTxns, its newLeader ack commits them",
    run: (h) => {
      h.start(1);
      h.start(2, 1);
      h.deliver();
      h.server(2).autoDurable = false;
      h.propose("x");
      h.propose("y");
      h.deliver();
      h.start(3, 1);
      h.deliver();
    },
  },
  "observer-informed": {
    about: "an observer is synced like a follower, gets inform instead of proposal + commit, and never acks a proposal",
    voters: [1, 2, 3],
    observers: [4],
    run: (h) => {
      h.start(1);
      h.start(2, 1);
      h.start(4, 1);
      h.deliver();
      h.propose("o");
      h.deliver();
    },
  },
};

for (const [name, scenario] of Object.entries(scenarios)) {
  test(`golden trace: ${name}`, () => {
    const h = new Harness(scenario.voters ?? [1, 2, 3], scenario.observers ?? []);
    scenario.run(h);
    const text = [`# ${scenario.about}`, ...h.trace, ""].join("\n");
    const file = `${DATA}${name}.txt`;
    if (process.env.UPDATE_GOLDEN === "1") writeFileSync(file, text);
    assert.equal(text, readFileSync(file, "utf8"), `trace of ${name} differs from ${file} (UPDATE_GOLDEN=1 rewrites it)`);
  });
}
