/**
 * Server counters worth watching from outside (what ZooKeeper's mntr reports). Plain numbers,
 * bumped where the event happens; reporting them is the front door's job.
 */
export class ServerMetrics {
  /** Writes that went past a quota limit (soft or hard, refused or not). */
  quotaExceeded = 0;
}
