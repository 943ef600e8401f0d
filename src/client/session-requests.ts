/**
 * The request stream of a session: what the session machine writes on a connection, and how each
 * answer is matched to its request. Requests are written in submit order and answered in that
 * order, so a connection's requests in flight wait in a FIFO and each response must match its
 * head. Xids increase over the whole session, and so does the last zxid seen.
 *
 * A connection whose session logs in with SASL sends its login's tokens first, one at a time, each
 * answered before the next. Then it is primed before anything else is sent on it: every credential an addAuth
 * succeeded with is sent again (a server keeps them per connection, as ZooKeeper's client re-sends
 * them), then the watches the caller still holds are set again (setWatches). Kept apart from the
 * machine's connection handling (session-machine.ts: attempts, probes, liveness, endings), which
 * decides when a connection carries the session; this decides what travels on it. Deterministic
 * as the machine is: effects go out through the machine's callback.
 */
import { ZkErrorCode, type ZkErrorName } from "../common/errors.js";
import type { ClientFrame } from "../../gen/client.js";
import type { DecodedResponse, DecodedWatchEvent, RequestOp } from "./codec.js";
import type { HostPort } from "./connect-string.js";
import type { Connection, Credential, InFlight } from "./session-connection.js";
import type { SessionEffect } from "./session-io.js";
import { chunkWatchPaths, type WatchPaths } from "./watch-registry.js";

/** setWatches requests are split so that each stays well inside the message limit. */
const SET_WATCHES_BYTES_MAX = 256 * 1024;
const XID_MAX = 0x7fffffff;

/** The next client xid: increasing int32 from 1, wrapping to 1 (never 0 or negative, as ZooKeeper reserves those). */
export function nextXid(xid: number): number {
  return xid >= XID_MAX ? 1 : xid + 1;
}

/** What the request stream hands back to the machine. */
export interface RequestStreamOwner<T> {
  emit(effect: SessionEffect<T>): void;
  /** The watches the caller still holds, read when a new connection must set them again. */
  watchedPaths(): WatchPaths;
  /** The server broke the protocol on `conn`: the machine drops it. */
  protocolError(conn: Connection<T>, what: string): void;
  /** The session's close request was answered. */
  closeAnswered(): void;
  /** A SASL token of the login was answered. */
  saslAnswered(conn: Connection<T>, response: DecodedResponse): void;
}

export class SessionRequests<T> {
  private xid = 0;
  private lastZxid = 0n;
  /** Credentials the server accepted, in order: sent again on every new connection. */
  private readonly credentials: Credential[] = [];

  constructor(private readonly owner: RequestStreamOwner<T>) {}

  /** The highest zxid of any response or watch event received. */
  get lastZxidSeen(): bigint {
    return this.lastZxid;
  }

  /** Writes the caller's request on `conn`; its answer or failure comes back with `token`. Returns its xid. */
  submit(conn: Connection<T>, request: RequestOp, token: T): number {
    const credential = request.$case === "addAuth" ? { scheme: request.addAuth.scheme, auth: request.addAuth.auth } : undefined;
    const xid = this.nextRequestXid();
    this.write(conn, { xid, purpose: "request", token, credential }, request);
    return xid;
  }

  /** Writes the session's close request on `conn`, after everything already in flight. */
  close(conn: Connection<T>): void {
    this.write(conn, { xid: this.nextRequestXid(), purpose: "close" }, { $case: "close", close: {} });
  }

  /** Sends a token of the connection's SASL login (nothing else is in flight then: its answer comes next). */
  sendSasl(conn: Connection<T>, token: Uint8Array): void {
    this.write(conn, { xid: this.nextRequestXid(), purpose: "sasl" }, { $case: "sasl", sasl: { token } });
  }

  /** Authenticates a new connection and re-registers the caller's watches, before any other request. */
  prime(conn: Connection<T>): void {
    for (const credential of this.credentials) {
      const request: RequestOp = { $case: "addAuth", addAuth: { scheme: credential.scheme, auth: credential.auth } };
      this.write(conn, { xid: this.nextRequestXid(), purpose: "authReplay", credential }, request);
    }
    const relativeZxid = this.lastZxid;
    for (const chunk of chunkWatchPaths(this.owner.watchedPaths(), SET_WATCHES_BYTES_MAX)) {
      conn.setWatchesUnanswered += 1;
      this.write(conn, { xid: this.nextRequestXid(), purpose: "setWatches" }, { $case: "setWatches", setWatches: { relativeZxid, ...chunk } });
    }
  }

  /** Hands `frame` to the host for `conn`'s stream. */
  send(conn: Connection<T>, frame: ClientFrame): void {
    this.owner.emit({ type: "send", connection: conn.id, frame, batchable: conn.batching });
  }

  onResponse(conn: Connection<T>, response: DecodedResponse): void {
    if (conn.phase === "connecting") {
      this.owner.protocolError(conn, "a response before the connect answer");
      return;
    }
    const request = conn.inFlight.shift();
    if (request === undefined || request.xid !== response.xid) {
      if (request !== undefined) this.fail(request, "CONNECTIONLOSS", "CONNECTIONLOSS: xid out of order");
      this.owner.protocolError(conn, `response xid ${response.xid} but expected ${request === undefined ? "none" : request.xid}`);
      return;
    }
    this.seen(conn, response.zxid);
    if (request.purpose === "setWatches") {
      conn.setWatchesUnanswered -= 1;
      if (conn.setWatchesUnanswered === 0) this.seen(conn, conn.zxidHeldBack);
    }
    switch (request.purpose) {
      case "request":
        if (response.err === 0 && request.credential !== undefined) this.remember(request.credential);
        this.owner.emit({ type: "answered", token: request.token, response });
        return;
      case "close":
        this.owner.closeAnswered();
        return;
      case "setWatches":
        if (response.err !== 0) this.log({ err: response.err }, "setWatches failed");
        return;
      case "authReplay":
        // Only a server configured unlike the one that accepted it refuses it: stop sending it.
        if (response.err === ZkErrorCode.AUTHFAILED) this.forget(request.credential, conn.host);
        return;
      case "sasl":
        this.owner.saslAnswered(conn, response);
        return;
    }
  }

  onEvent(conn: Connection<T>, event: DecodedWatchEvent): void {
    if (conn.phase === "connecting") {
      this.owner.protocolError(conn, "a watch event before the connect answer");
      return;
    }
    this.seen(conn, event.zxid);
    this.owner.emit({ type: "event", event });
  }

  /** `conn` is gone: the caller's requests still in flight on it fail with `code`. */
  failInFlight(conn: Connection<T>, code: ZkErrorName): void {
    const why = code === "CONNECTIONLOSS" ? "connection lost" : code === "AUTHFAILED" ? "the SASL login was refused" : "session expired";
    const message = `${code}: ${why}`;
    for (const request of conn.inFlight.drain()) this.fail(request, code, message);
  }

  private nextRequestXid(): number {
    this.xid = nextXid(this.xid);
    return this.xid;
  }

  private write(conn: Connection<T>, request: InFlight<T>, op: RequestOp): void {
    conn.inFlight.push(request);
    conn.sentSinceTick = true;
    this.send(conn, { frame: { $case: "request", request: { xid: request.xid, op } } });
  }

  /**
   * Raises the last zxid seen. Until every setWatches of the connection is answered, what it
   * brings (the replayed credentials' answers, the events the setWatches fires) is held back: the
   * events fired for the watches re-registered are complete only with the answer, and were the
   * stream to break before it, a last zxid raised by one of them would make the next setWatches ask
   * only for later changes, and the others would never fire. What was held back counts once the
   * answer comes; it is forgotten with the connection.
   */
  private seen(conn: Connection<T>, zxid: bigint): void {
    if (conn.setWatchesUnanswered > 0) {
      if (zxid > conn.zxidHeldBack) conn.zxidHeldBack = zxid;
    } else if (zxid > this.lastZxid) {
      this.lastZxid = zxid;
    }
  }

  /** A request that will never be answered; only the caller's own are reported. */
  private fail(request: InFlight<T>, code: ZkErrorName, message: string): void {
    if (request.purpose === "request") this.owner.emit({ type: "failed", token: request.token, code, message });
  }

  private remember(credential: Credential): void {
    const known = this.credentials.some((c) => c.scheme === credential.scheme && equalBytes(c.auth, credential.auth));
    if (!known) this.credentials.push({ scheme: credential.scheme, auth: credential.auth.slice() });
  }

  private forget(credential: Credential, host: HostPort): void {
    this.log({ scheme: credential.scheme, host }, "the server refused credentials another server had accepted");
    const index = this.credentials.indexOf(credential);
    if (index >= 0) this.credentials.splice(index, 1);
  }

  private log(fields: object, message: string): void {
    this.owner.emit({ type: "log", level: "warn", fields, message });
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && a.every((byte, i) => byte === b[i]);
}
