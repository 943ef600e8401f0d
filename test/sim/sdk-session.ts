/**
 * The SDK's kind of simulated client: the SDK's own SessionMachine (src/client/session-machine.ts:
 * connect and resume, the xid table, ordering, watch re-registration, auth replay, pings, back-off,
 * host rotation) with its frames encoded and decoded by the SDK's real codec, and, at the server end
 * of each connection, the server's connection session under the gRPC door's codec.
 */
import { assert } from "../../src/common/assert.js";
import type { Acl as WireAcl } from "../../gen/client.js";
import { decodeServerFrame, encodeClientFrame, type DecodedServerFrame, type RequestOp } from "../../src/client/codec.js";
import { SessionMachine } from "../../src/client/session-machine.js";
import type { SessionEffect, SessionTimer } from "../../src/client/session-io.js";
import { ADD_WATCH_MODE_NUMBERS } from "../../src/common/watch-modes.js";
import { initialAuthInfo } from "../../src/replica/auth.js";
import { ConnectionSession } from "../../src/replica/connection-session.js";
import type { ClientRequest } from "../../src/replica/requests.js";
import { decodeClientFrame } from "../../src/server/client-frame-codec.js";
import { GrpcSessionCodec, receiveClientFrame } from "../../src/server/grpc-session-codec.js";
import { CREATE_MODE_FLAGS } from "../../src/store/types.js";
import { PingOrder, type SimClientKind, type SimConnectionLoss, type SimSession, type SimSessionHost, type SimSessionOptions } from "./sim-session.js";

export class SdkSession<T> implements SimSession<T> {
  readonly authAnswered = true;
  private readonly machine: SessionMachine<T>;
  private pingOrder: { connection: number; order: PingOrder } | undefined;

  constructor(
    options: SimSessionOptions,
    private readonly host: SimSessionHost<T>,
  ) {
    this.machine = new SessionMachine<T>(
      {
        hosts: options.serverIds.map((id) => ({ host: `server${id}`, port: id })),
        sessionTimeoutMs: options.sessionTimeoutMs,
        connectTimeoutMs: 2 * options.sessionTimeoutMs,
        sessionId: 0n,
        password: new Uint8Array(0),
        canBeReadOnly: options.canBeReadOnly,
        watchedPaths: options.watchedPaths,
      },
      (effect) => this.carryOut(effect),
    );
  }

  get lifecycle(): SimSession<T>["lifecycle"] {
    return this.machine.lifecycle;
  }

  get connected(): boolean {
    return this.machine.connected;
  }

  get acceptsRequests(): boolean {
    return this.machine.connected;
  }

  get readOnly(): boolean {
    return this.machine.readOnly;
  }

  get sessionId(): bigint {
    return this.machine.sessionId;
  }

  start(): void {
    this.machine.start();
  }

  submit(request: ClientRequest, token: T): void {
    const xid = this.machine.submit(requestOp(request), token);
    this.host.sent(token, xid, this.machine.sessionId);
  }

  receive(connection: number, bytes: Uint8Array): void {
    const frame = decodeServerFrame(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    const order = this.pingOrder?.connection === connection ? this.pingOrder.order : undefined;
    if (order !== undefined) noteAnswers(order, frame);
    this.machine.receive(connection, frame);
  }

  lost(connection: number, cause: SimConnectionLoss): void {
    this.machine.lost(connection, cause);
  }

  timerFired(timer: string): void {
    this.machine.timerFired(timer as SessionTimer);
  }

  private carryOut(effect: SessionEffect<T>): void {
    const host = this.host;
    switch (effect.type) {
      case "open":
        this.pingOrder = { connection: effect.connection, order: new PingOrder((property, message) => host.violation(property, message)) };
        return host.open(effect.connection, effect.host.port);
      case "send": {
        const frame = effect.frame.frame;
        if (frame?.$case === "ping") host.count("pings");
        if (this.pingOrder?.connection === effect.connection) {
          if (frame?.$case === "ping") this.pingOrder.order.pingSent();
          else if (frame?.$case === "request") this.pingOrder.order.requestSent();
        }
        const op = frame?.$case === "request" ? frame.request.op?.$case : undefined;
        return host.send(effect.connection, encodeClientFrame(effect.frame), op === "create" || op === "setData" || op === "delete");
      }
      case "close":
        return host.close(effect.connection);
      case "armTimer":
        return host.armTimer(effect.timer, effect.delayMs);
      case "cancelTimer":
        return host.cancelTimer(effect.timer);
      case "answered": {
        const { err, zxid, stat } = effect.response;
        return host.answered(effect.token, { err, zxid, stat: stat === null ? undefined : { mzxid: stat.mzxid, pzxid: stat.pzxid } });
      }
      case "failed":
        return host.failed(effect.token);
      case "event":
        return host.event(effect.event);
      case "state":
        // The simulator's sessions log in without SASL: none can be refused one.
        assert(effect.state !== "authFailed", "a session without a SASL login failed one");
        return host.state(effect.state);
      case "connectFailed":
      case "closed":
        return host.log(`session ${effect.type}`);
      case "log":
        if (effect.level !== "debug")
          host.log(`${effect.message} ${JSON.stringify(effect.fields, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))}`);
        return;
    }
  }
}

function noteAnswers(order: PingOrder, frame: DecodedServerFrame): void {
  if (frame.frame === "pong") order.pongReceived();
  else if (frame.frame === "response") order.requestAnswered();
  else if (frame.frame === "batch") for (const inner of frame.frames) noteAnswers(order, inner);
}

/** The SDK's kind: its connections reach the server's connection session under the gRPC door's codec. */
export const SDK_CLIENTS: SimClientKind = {
  name: "sdk",
  session: (options, host) => new SdkSession(options, host),
  serverEnd(deps, stream, remoteAddress) {
    const codec = new GrpcSessionCodec();
    const session = new ConnectionSession(
      deps,
      codec,
      {
        write: (frame) => stream.write(frame),
        refuse: (reason, detail) => stream.refuse(reason, detail),
        finish: () => stream.finish(),
        pauseReading: () => stream.pauseReading(),
        resumeReading: () => stream.resumeReading(),
      },
      remoteAddress,
      [],
      initialAuthInfo(remoteAddress),
    );
    return {
      receive: (bytes) => receiveClientFrame(session, decodeClientFrame(bytes)),
      gone: () => session.gone(),
      get outstanding() {
        return session.outstanding;
      },
    };
  },
};

/** The workload's request as the SDK puts it on the wire (an empty ACL asks for the default one). */
export function requestOp(request: ClientRequest): RequestOp {
  const acl = (list: readonly { perms: number; id: { scheme: string; id: string } }[]): WireAcl[] =>
    list.map((a) => ({ perms: a.perms, id: { scheme: a.id.scheme, id: a.id.id } }));
  switch (request.op) {
    case "create":
      return {
        $case: "create",
        create: { path: request.path, data: request.data, acl: acl(request.acl), mode: CREATE_MODE_FLAGS[request.mode], ttlMs: BigInt(request.ttlMs) },
      };
    case "setData":
      return { $case: "setData", setData: { path: request.path, data: request.data, version: request.version } };
    case "delete":
      return { $case: "delete", delete: { path: request.path, version: request.version } };
    case "getData":
      return { $case: "getData", getData: { path: request.path, watch: request.watch } };
    case "exists":
      return { $case: "exists", exists: { path: request.path, watch: request.watch } };
    case "getChildren":
      return { $case: "getChildren", getChildren: { path: request.path, watch: request.watch } };
    case "addWatch":
      return { $case: "addWatch", addWatch: { path: request.path, mode: ADD_WATCH_MODE_NUMBERS[request.mode] } };
    case "sync":
      return { $case: "sync", sync: { path: request.path } };
    case "addAuth":
      return { $case: "addAuth", addAuth: { scheme: request.scheme, auth: request.auth } };
    case "reconfig": {
      const { joining, leaving, newMembers, fromConfig } = request;
      return { $case: "reconfig", reconfig: { joining: joining ?? undefined, leaving: leaving ?? undefined, newMembers: newMembers ?? undefined, fromConfig } };
    }
    default:
      throw new Error(`the workload sends no ${request.op}`);
  }
}
