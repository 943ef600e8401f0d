/**
 * Ordering writes on a server that is its own quorum: prep decides each txn, the log makes it
 * durable (group commit), and the database applies it in zxid order once durable. The replicated
 * leader keeps the same shape with a Zab proposal between prep and apply.
 */
import type { RevalidationOutcome, WriteBroadcast } from "./broadcast.js";
import type { ServerDatabase } from "./database.js";
import type { Prep } from "./prep.js";
import type { WriteRequest } from "./requests.js";
import { encodeTxn } from "../store/txn-codec.js";
import type { Id, Txn, TxnBody } from "../store/types.js";

export class StandaloneBroadcast implements WriteBroadcast {
  private lastProposedZxid: number;
  private failed = false;

  constructor(
    private readonly database: ServerDatabase,
    private readonly prep: Prep,
    private readonly nowMs: () => number,
    /** The log refused a write: the server must stop rather than answer (fail-stop). */
    private readonly onFatal: (error: unknown) => void,
  ) {
    this.lastProposedZxid = database.tree.lastProcessedZxid;
  }

  get serving(): boolean {
    return !this.failed;
  }

  submitWrite(sessionId: bigint, cxid: number, request: WriteRequest, authInfo: readonly Id[]): void {
    const zxid = this.lastProposedZxid + 1;
    this.propose(sessionId, cxid, zxid, this.prep.prepare(request, sessionId, zxid, authInfo));
  }

  submitCreateSession(sessionId: bigint, timeoutMs: number, password: Uint8Array): void {
    this.propose(sessionId, 0, this.lastProposedZxid + 1, { type: "createSession", timeoutMs, password });
  }

  submitExpireSession(sessionId: bigint): void {
    const zxid = this.lastProposedZxid + 1;
    this.propose(sessionId, 0, zxid, this.prep.prepareCloseSession(sessionId, zxid));
  }

  /** Server-made deletes of the nodes a cleanup scan picked, each re-checked by prep (see QuorumPeer.cleanUp). */
  deleteContainers(paths: readonly string[], nowMs: number): number {
    let proposed = 0;
    for (const path of paths) {
      if (this.failed) break;
      const prepared = this.prep.prepareDeleteContainer(path, nowMs, () => this.lastProposedZxid + 1);
      if (!prepared) continue;
      this.propose(0n, 0, prepared.zxid, prepared.body, nowMs);
      proposed += 1;
    }
    return proposed;
  }

  requestSync(ready: (zxid: number) => void): void {
    ready(this.lastProposedZxid);
  }

  /** One server: the pipeline's own check (password, not closing) is the whole answer. */
  revalidateSession(_sessionId: bigint, _timeoutMs: number, done: (outcome: RevalidationOutcome) => void): void {
    done(this.failed ? "unavailable" : "valid");
  }

  private propose(sessionId: bigint, cxid: number, zxid: number, body: TxnBody, timeMs = this.nowMs()): void {
    if (this.failed) return;
    this.lastProposedZxid = zxid;
    const txn: Txn = { header: { sessionId, cxid, zxid, timeMs }, body };
    this.database.log.append(zxid, encodeTxn(txn)).then(
      () => {
        if (this.failed) return;
        this.database.apply(txn);
        this.prep.applied(zxid);
      },
      (error: unknown) => {
        if (this.failed) return;
        this.failed = true;
        this.onFatal(error);
      },
    );
  }
}
