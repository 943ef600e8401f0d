/**
 * The recipe workloads under chaos on three voters: unique ids under partitions and kills; the
 * queue, counter and watch workloads under partitions, kills and pauses.
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { describe, test } from "node:test";
import { COUNTER_CHECKER, QUEUE_CHECKER, UNIQUE_IDS_CHECKER, WATCHES_CHECKER } from "./checkers/index.js";
import { explain, run, RUN_LIMIT_MS, SECONDS } from "./chaos-harness.js";

/** Three voters for up to 30 s, without the register, set and lock workloads: each test adds its own. */
const RECIPE_RUN = { voters: 3, timeMs: Math.min(SECONDS, 30) * 1000, registerWorkers: 0, setWorkers: 0, lockWorkers: 0 };

describe(`chaos: recipe workloads for up to 30 s on three voters`, () => {
  test(
    "unique ids: sequential creates under partitions and kills take ids never handed out twice, increasing in real time, none lost",
    { timeout: RUN_LIMIT_MS },
    async () => {
      const { result, seed, dir } = await run("ids", {
        ...RECIPE_RUN,
        nemeses: ["partition", "kill"],
        idWorkers: 4,
      });
      assert.ok(result.faults.length > 0, "the nemesis injected faults");
      const ids = result.verdicts.find((v) => v.checker === UNIQUE_IDS_CHECKER);
      assert.ok(
        (ids?.stats["acknowledged"] ?? 0) > 100 && (ids?.stats["serversRead"] ?? 0) === 3,
        `ids were taken and read back: ${JSON.stringify(ids?.stats)}`,
      );
      assert.equal(result.valid, true, explain(result, seed, dir));
      await rm(dir, { recursive: true, force: true });
    },
  );

  test(
    "queue, counter and watches under partitions, kills and pauses: items taken at most once and none lost, increments counted, every watcher in step",
    { timeout: RUN_LIMIT_MS },
    async () => {
      const { result, seed, dir } = await run("recipes", {
        ...RECIPE_RUN,
        nemeses: ["partition", "kill", "pause"],
        idWorkers: 0,
        queueWorkers: 3,
        counterWorkers: 3,
        watchWorkers: 4,
      });
      assert.ok(result.faults.length > 0, "the nemesis injected faults");
      const stats = (checker: string) => result.verdicts.find((v) => v.checker === checker)?.stats ?? {};
      const queue = stats(QUEUE_CHECKER);
      const counter = stats(COUNTER_CHECKER);
      const watches = stats(WATCHES_CHECKER);
      assert.ok((queue["taken"] ?? 0) > 50 && queue["serversRead"] === 3, `items were queued and taken: ${JSON.stringify(queue)}`);
      assert.ok((counter["acknowledged"] ?? 0) > 50 && (counter["reads"] ?? 0) > 20, `the counter was incremented and read: ${JSON.stringify(counter)}`);
      assert.ok(
        (watches["oneShotEvents"] ?? 0) > 20 && (watches["persistentEvents"] ?? 0) > 50,
        `watchers of both kinds were told of changes: ${JSON.stringify(watches)}`,
      );
      assert.equal(result.valid, true, explain(result, seed, dir));
      await rm(dir, { recursive: true, force: true });
    },
  );
});
