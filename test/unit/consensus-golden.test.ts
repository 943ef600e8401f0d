/**
 * Zab flows against golden traces (etcd raft's datadriven tests, docs/architecture.md practice 13):
 * each scenario is a short script beside the message-and-event trace every command produces, one
 * file each under test/unit/testdata/zab/ (the format is test/helpers/datadriven.ts's). After an
 * intended protocol change, regenerate with UPDATE_GOLDEN=1 and review the diff.
 *
 * Script commands (servers are created by the first command that is not a setup one):
 *   voters 1 2 3          the voters (default 1 2 3)
 *   observers 4           the observers (default none)
 *   window 2              the leader keeps this many committed records for DIFFs
 *   log 1 1.1:a 1.2:b     server 1's durable log: zxid epoch.counter and the record's text
 *   epochs 1 2 2          server 1's durable accepted and current epochs
 *   start 1               server 1 starts a term as leader
 *   start 2 1             server 2 starts a term following (or observing) leader 1
 *   no-fsync 2            server 2's writes stay in flight until flushed
 *   propose a b           the leader proposes records "a", then "b"
 *   deliver               deliver every message in flight, and what that sends, oldest first
 */
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { makeZxid } from "../../src/store/zxid.js";
import { aboutOf, goldenFiles, intArgs, runDataDrivenFile, type Directive } from "../helpers/datadriven.js";
import { Harness } from "./consensus-harness.js";

const DATA = fileURLToPath(new URL("../../../test/unit/testdata/zab/", import.meta.url));
const enc = (s: string) => new TextEncoder().encode(s);

/** One scenario's state: the membership it declares, then the harness it runs. */
class ZabScript {
  private voters = [1, 2, 3];
  private observers: number[] = [];
  private window: number | undefined;
  private harness: Harness | undefined;

  private get h(): Harness {
    if (this.harness === undefined) {
      this.harness = new Harness(this.voters, this.observers);
      if (this.window !== undefined) this.harness.committedLogRecordsMax = this.window;
    }
    return this.harness;
  }

  run(directive: Directive): string {
    const before = this.harness?.trace.length ?? 0;
    switch (directive.command) {
      case "voters":
        this.voters = intArgs(directive);
        return "";
      case "observers":
        this.observers = intArgs(directive);
        return "";
      case "window":
        this.window = intArgs(directive)[0]!;
        if (this.harness !== undefined) this.harness.committedLogRecordsMax = this.window;
        return "";
      case "log": {
        const [id] = intArgs({ ...directive, args: directive.args.slice(0, 1) });
        this.h.server(id!).log = directive.args.slice(1).map(parseRecord);
        return "";
      }
      case "epochs": {
        const [id, accepted, current] = intArgs(directive);
        Object.assign(this.h.server(id!), { acceptedEpoch: accepted, currentEpoch: current });
        return "";
      }
      case "start": {
        const [id, leader] = intArgs(directive);
        this.h.start(id!, leader);
        break;
      }
      case "no-fsync":
        for (const id of intArgs(directive)) this.h.server(id).autoDurable = false;
        return "";
      case "propose":
        for (const record of directive.args) this.h.propose(record);
        break;
      case "deliver":
        this.h.deliver();
        break;
      default:
        throw new Error("unknown script command");
    }
    return this.h.trace.slice(before).join("\n");
  }
}

/** "1.3:stale": the record "stale" at zxid epoch 1, counter 3. */
function parseRecord(text: string): { zxid: number; record: Uint8Array } {
  const match = /^(\d+)\.(\d+):(.*)$/.exec(text);
  if (match === null) throw new Error(`"${text}" is not epoch.counter:record`);
  return { zxid: makeZxid(Number(match[1]), Number(match[2])), record: enc(match[3]!) };
}

for (const { name, path } of goldenFiles(DATA)) {
  test(`golden trace ${name}: ${aboutOf(path)}`, () => {
    const script = new ZabScript();
    runDataDrivenFile(path, (directive) => script.run(directive));
  });
}
