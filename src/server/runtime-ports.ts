/** The replica's clock, entropy and (for a standalone server) peer ports, over Node. */
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Clock, Entropy, PeerPort } from "../replica/ports.js";

export const systemClock: Clock = {
  // Monotonic, and near the wall clock's reading at start (so early deadlines are not near zero).
  nowMs: () => performance.timeOrigin + performance.now(),
  wallMs: () => Date.now(),
  every: (intervalMs, run) => {
    const timer = setInterval(run, intervalMs);
    return () => clearInterval(timer);
  },
};

export const systemEntropy: Entropy = {
  bytes: (count) => randomBytes(count),
};

/** A cluster of one voter has nobody to talk to. */
export const noPeers: PeerPort = {
  sendNotification: () => {},
  followLeader: () => {},
  stopFollowing: () => {},
  sendToLeader: () => {},
  sendToLearner: () => {},
  closeLearner: () => {},
};
