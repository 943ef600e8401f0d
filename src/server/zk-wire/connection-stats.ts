/**
 * What `cons`, `srvr` and `mntr` report of the ZooKeeper port's connections (ZooKeeper's ServerCnxn
 * and ServerStats): packets in and out, the last operation, its xid and zxid, and request latency,
 * per connection and over the port. Kept at the socket edge, on the server's clock: the session's
 * codec tells what it read and answered (JuteRequestObserver), the socket what it moved.
 */
import type { JuteRequestObserver } from "./zk-session-codec.js";
import { OpCode } from "./records.js";

export class LatencyStats {
  count = 0;
  totalMs = 0;
  minMs = 0;
  maxMs = 0;
  lastMs = 0;
  record(ms: number): void {
    this.minMs = this.count === 0 ? ms : Math.min(this.minMs, ms);
    this.maxMs = Math.max(this.maxMs, ms);
    this.count += 1;
    this.totalMs += ms;
    this.lastMs = ms;
  }
  get avgMs(): number {
    return this.count === 0 ? 0 : this.totalMs / this.count;
  }
}

/** Over every connection a port ever had: what srvr and mntr report as the server's. */
export class PortStats {
  readonly latency = new LatencyStats();
  packetsReceived = 0;
  packetsSent = 0;
}

/** What `cons` and `mntr` report of one connection (ZooKeeper's ServerCnxn stats). */
export interface ZkConnectionStats {
  remoteHost: string;
  remotePort: number;
  packetsReceived: number;
  packetsSent: number;
  outstandingRequests: number;
  session?: {
    sessionId: bigint;
    establishedMs: number;
    sessionTimeoutMs: number;
    lastOperation: string;
    lastCxid: number;
    lastZxid: bigint;
    lastResponseMs: number;
    latency: LatencyStats;
  };
}

/** One connection's counters; the marks it hands the codec are the times requests were read. */
export class ConnectionStatsRecorder implements JuteRequestObserver {
  packetsReceived = 0;
  packetsSent = 0;
  establishedMs = 0;
  lastOperation = "NA";
  lastCxid = -1;
  lastZxid = -1n;
  lastResponseMs = 0;
  readonly latency = new LatencyStats();

  constructor(
    private readonly totals: PortStats,
    private readonly nowMs: () => number,
  ) {}

  received(): void {
    this.packetsReceived += 1;
    this.totals.packetsReceived += 1;
  }

  sent(): void {
    this.packetsSent += 1;
    this.totals.packetsSent += 1;
  }

  read(xid: number, type: number): number {
    this.lastCxid = xid;
    this.lastOperation = OPERATION_NAMES.get(type) ?? "UNKN";
    return this.nowMs();
  }

  answered(readAtMs: number, zxid: number): void {
    const now = this.nowMs();
    this.latency.record(now - readAtMs);
    this.totals.latency.record(now - readAtMs);
    this.lastZxid = BigInt(zxid);
    this.lastResponseMs = now;
  }

  established(): void {
    this.establishedMs = this.nowMs();
  }
}

/** ZooKeeper's short names for the last operation of a connection (cons's lop). */
const OPERATION_NAMES: ReadonlyMap<number, string> = new Map([
  [OpCode.create, "CREA"],
  [OpCode.create2, "CREA"],
  [OpCode.createContainer, "CREA"],
  [OpCode.createTTL, "CREA"],
  [OpCode.delete, "DELE"],
  [OpCode.deleteContainer, "DELE"],
  [OpCode.exists, "EXIS"],
  [OpCode.getData, "GETD"],
  [OpCode.setData, "SETD"],
  [OpCode.getACL, "GETA"],
  [OpCode.setACL, "SETA"],
  [OpCode.getChildren, "GETC"],
  [OpCode.getChildren2, "GETC"],
  [OpCode.sync, "SYNC"],
  [OpCode.ping, "PING"],
  [OpCode.check, "CHEC"],
  [OpCode.multi, "MULT"],
  [OpCode.multiRead, "MLTR"],
  [OpCode.reconfig, "RECO"],
  [OpCode.checkWatches, "CHKW"],
  [OpCode.removeWatches, "REMW"],
  [OpCode.auth, "AUTH"],
  [OpCode.setWatches, "SETW"],
  [OpCode.setWatches2, "STW2"],
  [OpCode.getEphemerals, "GETE"],
  [OpCode.getAllChildrenNumber, "GETACN"],
  [OpCode.addWatch, "ADDW"],
  [OpCode.whoAmI, "HOMI"],
  [OpCode.closeSession, "CLOSE"],
  [OpCode.sasl, "SASL"],
]);
