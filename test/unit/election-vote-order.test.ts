/**
 * Vote order: (peerEpoch, zxid, leader id), the higher wins — ZooKeeper's totalOrderPredicate.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Vote } from "../../src/election/types.js";
import { compareVotes, NO_VOTE } from "../../src/election/vote.js";
import { makeZxid } from "../../src/store/zxid.js";

const v = (leader: number, peerEpoch: number, counter: number, zxidEpoch = peerEpoch): Vote => ({
  leader,
  peerEpoch,
  zxid: makeZxid(zxidEpoch, counter),
});

test("votes are ordered by peer epoch, then zxid, then leader id", () => {
  const rows: [string, Vote, Vote, -1 | 0 | 1][] = [
    ["higher epoch beats higher zxid and id", v(1, 3, 0), v(9, 2, 500), 1],
    ["lower epoch loses to a lower zxid", v(9, 2, 500), v(1, 3, 0), -1],
    ["same epoch: higher zxid beats higher id", v(1, 2, 8), v(9, 2, 7), 1],
    ["same epoch and zxid: higher id wins", v(3, 2, 7), v(2, 2, 7), 1],
    ["same epoch and zxid: lower id loses", v(2, 2, 7), v(3, 2, 7), -1],
    ["identical votes are equal", v(2, 2, 7), v(2, 2, 7), 0],
    ["peer epoch counts before the zxid's own epoch", v(1, 4, 9, 3), v(2, 3, 9, 3), 1],
    ["zxid counter differences above 2^32 compare exactly", v(1, 0, 0, 300_000), v(1, 0, 2 ** 32 - 1, 299_999), 1],
    ["any vote beats nobody", v(1, 0, 0), NO_VOTE, 1],
    ["nobody loses to any vote", NO_VOTE, v(1, 0, 0), -1],
  ];
  for (const [name, a, b, expected] of rows) assert.equal(Math.sign(compareVotes(a, b)), expected, name);
});
