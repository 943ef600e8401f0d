/**
 * Election scenarios as small scripts with golden output, one file each under
 * test/unit/testdata/election/ (docs/architecture.md practice 13; the format is
 * test/helpers/datadriven.ts's, after etcd's datadriven tests): where the sequence of notifications
 * is the point, the whole trace is the assertion. The network is the simulator's twin with every notification taking exactly 1 ms, so
 * delivery is FIFO and a trace only changes when behaviour does.
 *
 * Script commands:
 *   voters 1@1:5 2@1:7   servers id@epoch:counter (their current epoch and last zxid)
 *   observers 4          observers
 *   start 1 2 3          those servers start looking
 *   flush                deliver everything in flight, and what that sends, oldest first
 *   lose-all             lose everything in flight (no link breaks, so nothing is resent for it)
 *   advance 200          deliver what arrives within 200 ms, move time to its end, tick every server
 *   partition 1 2 | 3    cut every link between the two groups (sends on a cut link are dropped);
 *   heal                 restores them, and each cut link resends the last notification it dropped
 *   states               print each server's state, leader and round
 *
 * Trace lines: "t=T a→b state rN vote" is a delivery; indented lines are what the receiver did;
 * "(cut: 3)" names the receivers a send did not reach; a vote is
 * "leader(e<peerEpoch> z<zxid epoch>:<zxid counter>)". UPDATE_GOLDEN=1 rewrites the files with the
 * actual traces. The network's links come up before the script starts, at t=1.
 */
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { aboutOf, goldenFiles, intArgs, runDataDrivenFile, type Directive } from "../helpers/datadriven.js";
import { ElectionNetwork, formatVote, type ServerSpec } from "./election-network.js";

const DATA = fileURLToPath(new URL("../../../test/unit/testdata/election/", import.meta.url));

/** One scenario's state: the servers it declares, then the network they run on. */
class ElectionScript {
  private voters: ServerSpec[] = [];
  private observers: number[] = [];
  private net: ElectionNetwork | undefined;

  private get network(): ElectionNetwork {
    return (this.net ??= new ElectionNetwork({ voters: this.voters, observers: this.observers, maxDelayMs: 0, trace: true }));
  }

  run(directive: Directive): string {
    const before = this.net?.trace.length ?? 0;
    switch (directive.command) {
      case "voters":
        this.voters = directive.args.map((a) => {
          const [, id, epoch, counter] = /^(\d+)@(\d+):(\d+)$/.exec(a) ?? [];
          if (id === undefined) throw new Error(`"${a}" is not id@epoch:counter`);
          return { id: Number(id), epoch: Number(epoch), counter: Number(counter) };
        });
        return "";
      case "observers":
        this.observers = intArgs(directive);
        return "";
      case "start":
        this.network.start(...intArgs(directive));
        break;
      case "flush":
        this.network.flush();
        break;
      case "lose-all":
        this.network.loseAll();
        break;
      case "advance":
        this.network.advance(intArgs(directive)[0]!);
        break;
      case "partition": {
        const bar = directive.args.indexOf("|");
        const ids = directive.args.map(Number);
        this.network.partition(ids.slice(0, bar), ids.slice(bar + 1));
        break;
      }
      case "heal":
        this.network.heal();
        break;
      case "states":
        return this.network.ids
          .map((id) => {
            const node = this.network.node(id);
            const d = node.decision;
            return d === undefined ? `${id} looking r${node.round} ${formatVote(node.currentVote)}` : `${id} ${d.state} ${d.leader} r${d.round}`;
          })
          .join("\n");
      default:
        throw new Error(`unknown script command`);
    }
    return this.network.trace.slice(before).join("\n");
  }
}

for (const { name, path } of goldenFiles(DATA)) {
  test(`scenario ${name}: ${aboutOf(path)}`, () => {
    const script = new ElectionScript();
    runDataDrivenFile(path, (directive) => script.run(directive));
  });
}
