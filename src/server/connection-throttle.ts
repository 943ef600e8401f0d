/**
 * ZooKeeper's connection token bucket (zookeeper.connection_throttle_tokens, _fill_time,
 * _fill_count; its BlueThrottle without the optional BLUE drop and session weights): every
 * ConnectRequest, on either door, takes a token; the bucket holds at most `tokens`, starts full,
 * and gains `fillCount` every `fillTimeMs`. A connect finding it empty is refused and its connection
 * closed (ZooKeeper's ClientCnxnLimitException, counted as connection_rejected); its client retries.
 * `tokens` 0 turns it off.
 */
export interface ConnectionThrottleSettings {
  tokens: number;
  fillTimeMs: number;
  fillCount: number;
}

export class ConnectionThrottle {
  private available: number;
  private lastFillMs: number;

  constructor(
    private readonly settings: ConnectionThrottleSettings,
    private readonly nowMs: () => number,
    /** A connect was refused (ZooKeeper's connection_rejected). */
    private readonly onRejected: () => void,
  ) {
    this.available = settings.tokens;
    this.lastFillMs = nowMs();
  }

  /** Whether a ConnectRequest may go on; takes its token if so. */
  admit(): boolean {
    const { tokens, fillTimeMs, fillCount } = this.settings;
    if (tokens === 0) return true;
    const nowMs = this.nowMs();
    const elapsedMs = nowMs - this.lastFillMs;
    if (elapsedMs > fillTimeMs) {
      this.available = Math.min(tokens, this.available + Math.floor((elapsedMs * fillCount) / fillTimeMs));
      this.lastFillMs = nowMs;
    }
    if (this.available < 1) {
      this.onRejected();
      return false;
    }
    this.available -= 1;
    return true;
  }
}
