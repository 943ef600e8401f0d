/**
 * How a host drives the SDK's session machine (src/client/session-machine.ts), as core-io.ts is
 * for the Zab cores: the host feeds inputs — a frame that arrived, a stream that ended, a timer
 * that fired, a request or close from the user — and carries out the effects the machine emits.
 * Two hosts run it: `Client` over `GrpcTransport` (gRPC, setTimeout) and, later, test/sim (frames
 * passed in memory to a server door, simulated time).
 *
 * Effects go to one callback as they are decided, not in a Ready batch after each input: a watch
 * callback or a "state" listener runs inside the handling of a frame and may call back into the
 * session (send a request, close), and must find the session as it is at that frame — open while
 * the rest of a batch is still to come, say — exactly as the SDK has always behaved. Each effect
 * is still plain data, so a simulator can record, replay or reorder them.
 */
import type { ZkError, ZkErrorName } from "../common/errors.js";
import type { ClientFrame } from "../../gen/client.js";
import type { DecodedResponse, DecodedServerFrame, DecodedWatchEvent } from "./codec.js";
import type { HostPort } from "./connect-string.js";
import type { ClientLogger, ClientState } from "./types.js";

/**
 * The machine's timers; at most one of each is armed. It never reads a clock: every decision
 * counts delays, so a host arms real or simulated timers and says when one fired.
 * connect: give up on a first connection · attempt: one connection attempt · reconnect: the
 * back-off before the next attempt · tick: the liveness tick (ping, dead server) · close: stop
 * waiting for the close answer · probe: while read-only, the pause before the next probe for a
 * read-write server, or the wait for the answer of the probe out.
 */
export type SessionTimer = "connect" | "attempt" | "reconnect" | "tick" | "close" | "probe";

/** Why a stream ended, as the session needs to know it. */
export interface ConnectionLoss {
  /** The server refused us for being behind our last seen zxid (gRPC's FAILED_PRECONDITION). */
  serverBehind: boolean;
  message: string | undefined;
}

/** What a transport reports, tagged with the connection number the machine gave it. */
export interface SessionInputs {
  receive(connection: number, frame: DecodedServerFrame): void;
  lost(connection: number, cause: ConnectionLoss): void;
  timerFired(timer: SessionTimer): void;
}

/** Effects for the transport: connections, frames on them, timers. */
export type TransportEffect =
  /**
   * Open connection number `connection` to `host`. Nothing else is open then, but for a read-only
   * session, whose connection stays open beside the one probing for a read-write server.
   */
  | { type: "open"; connection: number; host: HostPort }
  /** Send on that connection, in order. `batchable`: it may share one message with the frames that follow it in this turn. */
  | { type: "send"; connection: number; frame: ClientFrame; batchable: boolean }
  /** Close it; the machine ignores whatever still comes from it. */
  | { type: "close"; connection: number }
  /** Fire `timerFired(timer)` once after `delayMs`, replacing that timer if it is armed. */
  | { type: "armTimer"; timer: SessionTimer; delayMs: number }
  | { type: "cancelTimer"; timer: SessionTimer };

/** What the host's SASL mechanism made of a server token (or of nothing, to start). */
export type SaslStepOutcome =
  /** `token`: what to send (null: nothing); `complete`: the mechanism has authenticated the server. */
  | { token: Uint8Array | null; complete: boolean }
  /** The mechanism cannot go on: the login fails. */
  | { failed: string };

/** Effects for the user-facing side. `T` is the caller's token for one request, handed back untouched. */
export type SessionOutcome<T> =
  | { type: "answered"; token: T; response: DecodedResponse }
  /** The request will never be answered: the caller fails it with `new ZkError(code, message, itsPath)`. */
  | { type: "failed"; token: T; code: ZkErrorName; message: string }
  | { type: "event"; event: DecodedWatchEvent }
  /**
   * Evaluate the next step of connection `connection`'s SASL login — the initial response when
   * `challenge` is null, else the answer to the server's token — and tell the machine
   * (`saslEvaluated`). One mechanism per connection; it goes with the connection's `close`.
   */
  | { type: "saslStep"; connection: number; host: HostPort; challenge: Uint8Array | null }
  /** Announce a state; "connected" is the first open, which settles the connect call. */
  | { type: "state"; state: Exclude<ClientState, "connecting" | "closed"> }
  /** The session never opened: the connect call fails with `error`, the state becomes `state` unannounced. */
  | { type: "connectFailed"; state: "expired" | "authFailed" | "closed"; error: ZkError }
  /** The close is over; `announce`: report the "closed" state (not when it was closed already). */
  | { type: "closed"; announce: boolean }
  | { type: "log"; level: keyof ClientLogger; fields: object; message: string };

export type SessionEffect<T> = TransportEffect | SessionOutcome<T>;

/** active → closing (close asked) → closed, or expired (the server said so) or authFailed (a SASL login was refused) at any time. */
export type SessionLifecycle = "active" | "closing" | "closed" | "expired" | "authFailed";
