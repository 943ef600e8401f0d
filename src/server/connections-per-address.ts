/**
 * ZooKeeper's maxClientCnxns: how many connections one client address may hold open to this
 * server at once (0: no limit). A connection past it is closed as soon as it is accepted, before
 * anything is read from it, and counted (ZooKeeper's connection_rejected) with ZooKeeper's warning.
 * Unlike ZooKeeper, whose plain and secure ports count apart, one count covers every client port
 * of the server: the ZooKeeper ports and the gRPC port, where each session stream is a connection.
 */
import type { Logger } from "pino";

const WARN_INTERVAL_MS = 1000;

export class ConnectionsPerAddress {
  private readonly open = new Map<string, number>();
  /** A storm of refused connects is one warning a second, with how many it stands for. */
  private lastWarnMs = -Infinity;
  private unwarned = 0;

  constructor(
    /** ZooKeeper's maxClientCnxns; 0 for no limit. */
    readonly maxClientCnxns: number,
    private readonly logger: Logger,
    /** A connection was refused (ZooKeeper's connection_rejected counter). */
    private readonly onRejected: () => void,
  ) {}

  /** Whether a new connection from `address` may stay open; if so it counts until `release`. */
  admit(address: string): boolean {
    const count = this.open.get(address) ?? 0;
    if (this.maxClientCnxns > 0 && count >= this.maxClientCnxns) {
      this.onRejected();
      this.unwarned += 1;
      const nowMs = Date.now();
      if (nowMs - this.lastWarnMs >= WARN_INTERVAL_MS) {
        this.logger.warn(
          { address, maxClientCnxns: this.maxClientCnxns, refused: this.unwarned },
          `Too many connections from ${address} - max is ${this.maxClientCnxns}`,
        );
        this.lastWarnMs = nowMs;
        this.unwarned = 0;
      }
      return false;
    }
    this.open.set(address, count + 1);
    return true;
  }

  /** A connection `admit` let in has closed. */
  release(address: string): void {
    const count = this.open.get(address) ?? 0;
    if (count <= 1) this.open.delete(address);
    else this.open.set(address, count - 1);
  }
}
