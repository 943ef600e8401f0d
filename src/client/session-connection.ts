/**
 * One connection of a session, as the session machine keeps it: a record, so that the machine
 * (session-machine.ts: attempts, probes, liveness, endings) and its request stream
 * (session-requests.ts: xids, answers, priming) share one view of it. A session has at most two
 * at once: the one that carries it, and while it is served read-only a probe looking for a
 * read-write server.
 */
import type { HostPort } from "./connect-string.js";
import { Fifo } from "./fifo.js";

/** A credential an addAuth succeeded with: sent again on every new connection. */
export interface Credential {
  scheme: string;
  auth: Uint8Array;
}

/** A request on the wire, waiting for its answer: the caller's, or one the machine sent itself. */
export type InFlight<T> =
  | { xid: number; purpose: "request"; token: T; credential: Credential | undefined }
  | { xid: number; purpose: "close" }
  | { xid: number; purpose: "setWatches" }
  | { xid: number; purpose: "authReplay"; credential: Credential }
  | { xid: number; purpose: "sasl" };

export interface Connection<T> {
  readonly id: number;
  readonly host: HostPort;
  /** The session its connect frame asked to resume; 0n asked for a new one. */
  readonly askedSessionId: bigint;
  /** authenticating: the server holds the session, and the SASL login runs before anything else is sent. */
  phase: "connecting" | "authenticating" | "open" | "dead";
  /** Set by the connect answer (protocol 2): frames of one event-loop turn may share a message. */
  batching: boolean;
  /** The id the server named in its connect answer; 0 until then. */
  serverId: number;
  /** Requests written and not answered yet, in the order written (which is the order answered). */
  readonly inFlight: Fifo<InFlight<T>>;
  sentSinceTick: boolean;
  receivedSinceTick: boolean;
  sendIdleTicks: number;
  receiveIdleTicks: number;
  /** setWatches chunks sent on this connection and not answered yet. */
  setWatchesUnanswered: number;
  /** The highest zxid seen on this connection while setWatches was unanswered (see SessionRequests.seen). */
  zxidHeldBack: bigint;
  /** The SASL mechanism said it is complete: the login is over once its last token, if any, is answered OK. */
  saslComplete: boolean;
}

/** A connection being set up: nothing sent on it yet but what the caller sends next, its connect frame. */
export function newConnection<T>(id: number, host: HostPort, askedSessionId: bigint): Connection<T> {
  return {
    id,
    host,
    askedSessionId,
    phase: "connecting",
    batching: false,
    serverId: 0,
    inFlight: new Fifo<InFlight<T>>(),
    sentSinceTick: true,
    receivedSinceTick: true,
    sendIdleTicks: 0,
    receiveIdleTicks: 0,
    setWatchesUnanswered: 0,
    zxidHeldBack: 0n,
    saslComplete: false,
  };
}
