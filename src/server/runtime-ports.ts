/** The replica's clock, entropy and (for a standalone server) peer ports, over Node. */
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Clock, Entropy, PeerPort } from "../replica/ports.js";

export const systemClock: Clock = {
  // Monotonic, and near the wall clock's reading at start (so early deadlines are not near zero).
  nowMs: () => performance.timeOrigin + performance.now(),
  wallMs: () => Date.now(),
  every: (intervalMs, run) => {
    // Each tick runs after the loop's I/O poll, not in its timers phase: after the process was held
    // up (a long turn, a pause), what peers sent meanwhile is read before a tick judges who fell
    // silent, so a server that was itself stalled does not blame the others for its stall.
    let stopped = false;
    const timer = setInterval(
      () =>
        setImmediate(() => {
          if (!stopped) run();
        }),
      intervalMs,
    );
    return () => {
      stopped = true;
      clearInterval(timer);
    };
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
