/**
 * The simulator's state checker (TigerBeetle's, docs/architecture.md practice 7): it watches every apply,
 * establishment, ack and client answer as they happen and records each broken property. Safety
 * is checked continuously; convergence and durability of acknowledged writes at the end.
 */
import { epochOf, formatZxid } from "../../src/store/zxid.js";

export const PROPERTIES = [
  "one leader establishes each epoch",
  "no ack of a proposal from an older epoch, none before it is durable",
  "committed prefixes agree",
  "acknowledged writes survive",
  "convergence after healing",
  "a quiet cluster applies every committed txn everywhere",
  "a connected quorum elects a leader and converges",
  "client order and single system image",
  "ephemerals of an expired session disappear on every server",
  "the leader deletes only empty containers and expired TTL nodes",
  "empty containers and expired TTL nodes are deleted",
  "ACL decisions follow each node's ACL",
  "watch events arrive before the change can be read",
  "a session's watch events arrive in zxid order",
  "a one-time watch fires at most once",
  "a ping's answer never follows the answer to a request sent after it",
  "no write from a server the session has left is applied",
  "no write of a session that is gone is applied",
  "configurations form one chain",
  "an acknowledged reconfiguration is in force after healing",
  "the client doors read within their inbound bounds",
] as const;
export type Property = (typeof PROPERTIES)[number];

export interface Violation {
  property: Property;
  message: string;
}

export interface AckedWrite {
  zxid: number;
  sessionId: bigint;
  cxid: number;
}

export class Checker {
  readonly violations: Violation[] = [];
  /** The one committed sequence every server's applies must follow. */
  private readonly sequence: number[] = [0];
  private readonly indexOf = new Map<number, number>([[0, 0]]);
  private readonly records = new Map<number, Uint8Array>();
  /** Each server's last applied zxid. */
  private readonly cursor = new Map<number, number>();
  private readonly digests = new Map<number, { digest: string; server: number }>();
  private readonly establishedBy = new Map<number, string>();
  readonly ackedWrites: AckedWrite[] = [];
  /** Highest zxid of any write answered to any client so far. */
  ackedZxidMax = 0;

  /** Where violations are also noted, with the simulated time (the simulation's trace). */
  onViolation: ((line: string) => void) | undefined;

  fail(property: Property, message: string): void {
    if (this.violations.length < 50) this.violations.push({ property, message });
    this.onViolation?.(`VIOLATION [${property}] ${message}`);
  }

  get committedLength(): number {
    return this.sequence.length - 1;
  }

  lastCommitted(): number {
    return this.sequence[this.sequence.length - 1]!;
  }

  recordOf(zxid: number): Uint8Array | undefined {
    return this.records.get(zxid);
  }

  /** Server `id` now holds the state at `zxid` (start, restart from a snapshot, SNAP install). */
  resetServer(id: number, zxid: number, digest: string): void {
    if (!this.indexOf.has(zxid)) {
      this.fail("committed prefixes agree", `server ${id} holds state at ${formatZxid(zxid)}, which was never committed`);
    }
    this.cursor.set(id, zxid);
    this.digestAt(id, zxid, digest);
  }

  applied(id: number, zxid: number, record: Uint8Array): void {
    const at = this.cursor.get(id) ?? 0;
    const index = this.indexOf.get(at);
    if (index === undefined) {
      this.fail("committed prefixes agree", `server ${id} applied ${formatZxid(zxid)} after unknown ${formatZxid(at)}`);
      return;
    }
    if (zxid <= at) this.fail("committed prefixes agree", `server ${id} applied ${formatZxid(zxid)} after ${formatZxid(at)}`);
    const successor = this.sequence[index + 1];
    if (successor === undefined) {
      this.sequence.push(zxid);
      this.indexOf.set(zxid, this.sequence.length - 1);
      this.records.set(zxid, record);
    } else if (successor !== zxid) {
      this.fail("committed prefixes agree", `server ${id} applied ${formatZxid(zxid)} after ${formatZxid(at)}, others applied ${formatZxid(successor)}`);
    } else if (!equalBytes(this.records.get(zxid)!, record)) {
      this.fail("committed prefixes agree", `server ${id} applied a different txn at ${formatZxid(zxid)}`);
    }
    this.cursor.set(id, zxid);
  }

  /** Trees at equal zxids must have equal digests. */
  digestAt(id: number, zxid: number, digest: string): void {
    const known = this.digests.get(zxid);
    if (known === undefined) this.digests.set(zxid, { digest, server: id });
    else if (known.digest !== digest) {
      this.fail("committed prefixes agree", `tree digests differ at ${formatZxid(zxid)}: server ${id} vs server ${known.server}`);
    }
  }

  established(epoch: number, id: number, term: number): void {
    const who = `server ${id} (term ${term})`;
    const known = this.establishedBy.get(epoch);
    if (known !== undefined && known !== who) this.fail("one leader establishes each epoch", `epoch ${epoch} established by ${known} and by ${who}`);
    this.establishedBy.set(epoch, who);
  }

  /**
   * A follower of a leader in `leaderEpoch` acked `zxid`; its durable log ends at `durableZxid`;
   * `first` tells whether this is its newLeader ack (the only one that may name an older epoch).
   */
  ackSent(id: number, zxid: number, followerEpoch: number | undefined, leaderEpoch: number | undefined, first: boolean, durableZxid: number): void {
    const property = "no ack of a proposal from an older epoch, none before it is durable";
    if (followerEpoch === undefined || followerEpoch !== leaderEpoch) {
      this.fail(property, `server ${id} acked ${formatZxid(zxid)} in epoch ${followerEpoch} to a leader of epoch ${leaderEpoch}`);
    }
    if (!first && epochOf(zxid) !== followerEpoch)
      this.fail(property, `server ${id} acked ${formatZxid(zxid)}, a proposal of another epoch than ${followerEpoch}`);
    if (zxid > durableZxid) this.fail(property, `server ${id} acked ${formatZxid(zxid)} with its log durable only to ${formatZxid(durableZxid)}`);
  }

  writeAcked(write: AckedWrite): void {
    this.ackedWrites.push(write);
    this.ackedZxidMax = Math.max(this.ackedZxidMax, write.zxid);
  }

  /** At the end: every acknowledged write is in the committed sequence, as the txn that was answered. */
  checkAckedWrites(headerOf: (zxid: number) => { sessionId: bigint; cxid: number } | undefined, finalZxid: number): void {
    for (const write of this.ackedWrites) {
      const header = this.indexOf.has(write.zxid) ? headerOf(write.zxid) : undefined;
      if (header === undefined || header.sessionId !== write.sessionId || header.cxid !== write.cxid || write.zxid > finalZxid) {
        this.fail("acknowledged writes survive", `write ${write.sessionId}:${write.cxid} answered at ${formatZxid(write.zxid)} is not in the final history`);
      }
    }
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}
