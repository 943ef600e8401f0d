/**
 * The connect handshake's server side, shared by every front door (gRPC and ZooKeeper's jute
 * protocol): a new session is created through the broadcast; a resumed one is checked here (known,
 * right password, not closing) and revalidated by the leader, which makes this server its owner
 * (ZooKeeper's revalidateSession). The door turns the outcome into its own answer.
 */
import type { DataTree } from "../store/data-tree.js";
import type { WriteBroadcast } from "./broadcast.js";
import type { RequestPipeline } from "./pipeline.js";
import type { Entropy } from "./ports.js";

/** The part of a ConnectRequest the server acts on. */
export interface SessionRequest {
  /** 0n for a new session. */
  sessionId: bigint;
  password: Uint8Array;
  requestedTimeoutMs: number;
  /** The newest zxid the client has seen; a server behind it must not serve the client. */
  lastZxidSeen: bigint;
  /** The client takes a read-only session (ZooKeeper's canBeReadOnly) when no quorum is to be had. */
  readOnlyAllowed: boolean;
}

type SessionOutcome =
  | { kind: "established"; sessionId: bigint; timeoutMs: number; password: Uint8Array; readOnly: boolean }
  | { kind: "expired" }
  | { kind: "refused"; reason: SessionRefusal; detail: string };

export type SessionRefusal = "not-serving" | "behind" | "not-created";

/** A front door waiting on the handshake: each turns the outcome into its own protocol's answer. */
export interface SessionDoor {
  /** False once the connection has gone on without the answer (it closed): a late outcome is dropped. */
  waiting(): boolean;
  /** `readOnly`: the session is served read-only here (read-only mode); its writes will be NOTREADONLY. */
  established(sessionId: bigint, timeoutMs: number, password: Uint8Array, readOnly: boolean): void;
  /** The session to resume is gone (expired, closed, unknown, wrong password): the client must start over. */
  expired(): void;
  /** Not this server, not now (no quorum, behind the client, the session could not be made): try another. */
  refused(reason: SessionRefusal, detail: string): void;
}

export interface SessionOpenerDeps {
  /** Read through on every use: a learner's tree is replaced when it syncs by SNAP or TRUNC. */
  state: { readonly tree: DataTree };
  pipeline: RequestPipeline;
  broadcast: WriteBroadcast;
  sessionIds: SessionIdGenerator;
  /** Where session passwords come from. */
  entropy: Entropy;
  /** Clamp a requested session timeout to the server's bounds. */
  negotiateTimeoutMs(requestedMs: number): number;
}

/** ZooKeeper's session id scheme: server id in the top byte, a time-seeded counter below. */
export class SessionIdGenerator {
  private next: bigint;
  constructor(serverId: number, nowMs: number) {
    const mask64 = (1n << 64n) - 1n;
    const timeBits = ((BigInt(nowMs) << 24n) & mask64) >> 8n;
    this.next = BigInt.asIntN(64, timeBits | (BigInt(serverId & 0xff) << 56n));
  }
  take(): bigint {
    const id = this.next;
    this.next = BigInt.asIntN(64, this.next + 1n);
    return id;
  }
}

export const SESSION_PASSWORD_BYTES = 16;

export class SessionOpener {
  constructor(private readonly deps: SessionOpenerDeps) {}

  /** Answers `door` once, if it is still waiting (and never if the server is reset first). */
  open(request: SessionRequest, door: SessionDoor): void {
    this.decide(request, (outcome) => {
      if (!door.waiting()) return;
      switch (outcome.kind) {
        case "established":
          return door.established(outcome.sessionId, outcome.timeoutMs, outcome.password, outcome.readOnly);
        case "expired":
          return door.expired();
        case "refused":
          return door.refused(outcome.reason, outcome.detail);
      }
    });
  }

  private decide(request: SessionRequest, done: (outcome: SessionOutcome) => void): void {
    const { state, pipeline, broadcast } = this.deps;
    const readOnly = !broadcast.serving && broadcast.readOnly && request.readOnlyAllowed;
    if (!broadcast.serving && !readOnly) {
      const detail = broadcast.readOnly ? "server is read-only and the client does not accept that" : "server is not serving";
      return done({ kind: "refused", reason: "not-serving", detail });
    }
    // Contract item 4: never let a client see an older state than it already saw.
    const here = state.tree.lastProcessedZxid;
    if (request.lastZxidSeen > BigInt(here)) {
      return done({
        kind: "refused",
        reason: "behind",
        detail: `client has seen zxid 0x${request.lastZxidSeen.toString(16)}, this server is at 0x${here.toString(16)}`,
      });
    }
    if (request.sessionId === 0n) {
      // The counter is seeded from the clock: a server restarted after its clock went back can meet
      // the ids of its own live sessions again, and two clients must never share one session.
      let sessionId = this.deps.sessionIds.take();
      while (state.tree.sessions.has(sessionId)) sessionId = this.deps.sessionIds.take();
      const password = this.deps.entropy.bytes(SESSION_PASSWORD_BYTES);
      const timeoutMs = this.deps.negotiateTimeoutMs(request.requestedTimeoutMs);
      if (readOnly) {
        // No quorum to create it: the session lives here alone, until read-only mode ends.
        pipeline.openLocalSession(sessionId, timeoutMs, password);
        return done({ kind: "established", sessionId, timeoutMs, password, readOnly });
      }
      pipeline.createSession(sessionId, timeoutMs, password, (accepted) =>
        done(
          accepted
            ? { kind: "established", sessionId, timeoutMs, password, readOnly: false }
            : { kind: "refused", reason: "not-created", detail: "session could not be created" },
        ),
      );
      return;
    }
    const sessionId = request.sessionId;
    if (!pipeline.checkSession(sessionId, request.password)) return done({ kind: "expired" });
    // Read-only: the session is known here (in the tree, or opened read-only), and no leader can be asked.
    if (readOnly) return done({ kind: "established", sessionId, timeoutMs: pipeline.sessionTimeoutMs(sessionId), password: request.password, readOnly });
    const record = state.tree.sessions.get(sessionId);
    if (!record) return done({ kind: "expired" });
    broadcast.revalidateSession(sessionId, record.timeoutMs, (outcome) => {
      if (outcome === "unavailable") return done({ kind: "refused", reason: "not-serving", detail: "server is not serving" });
      // The leader has seen the session expire (its closeSession may not have reached us yet).
      if (outcome === "expired") return done({ kind: "expired" });
      done({ kind: "established", sessionId, timeoutMs: record.timeoutMs, password: record.password, readOnly: false });
    });
  }
}
