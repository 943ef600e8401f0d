/**
 * Every gRPC call between corral servers starts here, in both directions, so that who may speak
 * for which server is decided in one place: outgoing calls are dialled with this server's identity
 * and credentials, incoming ones admitted only from another corral server that proves who it is.
 *
 * Identity. Calls carry `corral-server-id` metadata; one's own id is refused with
 * PERMISSION_DENIED, and the answering server names itself in its response headers, which the
 * caller checks against the member it dialled. Both directions also carry the sender's corral
 * client address (`corral-client-address`) when the host gave a `clientAddresses` directory: what
 * an admitted caller or a confirmed callee says goes into it (a malformed value is ignored), so that
 * a server added by a reconfiguration is known to the clients' getMembers (client-address-directory.ts).
 *
 * Servers outside the member list. ZooKeeper lets a server that is not (yet) in a peer's view talk
 * to it: a joiner must hear the election and sync from the leader before the reconfiguration that
 * adds it commits, and a server just removed (or one whose peers missed the change) must learn who
 * leads and which configuration is in force. So a call from an id outside the member list is
 * admitted, as long as fewer than `unlistedCallersMax` such servers have a stream to this one, so
 * that a flood of made-up ids cannot grow this server's memory.
 *
 * Security (ZooKeeper's sslQuorum). With `security`, every link is mutual TLS: both ports ask for
 * and verify the caller's certificate, every call verifies the callee's, so a server whose
 * certificate the others' CAs do not verify cannot vote, lead or learn — and cannot hear them
 * either. `verifyCaller` can also bind a certificate to the member it claims to be (hostname
 * verification). A caller outside the member list has no member record to bind its certificate to:
 * it is admitted on the strength of the certificate the TLS layer verified (a call without one is
 * refused) and `verifyCaller` is not asked — the same trust mutual TLS gives any holder of a
 * certificate from the quorum CA. A link that fails its TLS handshake is logged once (warn) until
 * it works.
 */
import * as grpc from "@grpc/grpc-js";
import type { PeerCertificate } from "node:tls";
import type { Logger } from "pino";
import type { ClientAddressDirectory } from "../client-address-directory.js";
import { formatAddress, type MemberTable, type PeerMember } from "./member-table.js";
import type { PeerTransportCounters } from "./peer-context.js";
import type { PeerLimits } from "./peer-limits.js";
import {
  CLIENT_ADDRESS_METADATA,
  electionServiceDefinition,
  PEER_PROTOCOL_METADATA,
  PEER_PROTOCOL_VERSION,
  quorumServiceDefinition,
  SERVER_ID_METADATA,
} from "./peer-wire.js";

/** Credentials for mutual TLS between servers; absent = plain text. */
export interface PeerTransportSecurity {
  /** For the quorum and election ports (called once per port). */
  serverCredentials(): grpc.ServerCredentials;
  /** For calls to other members (called once). */
  channelCredentials(): grpc.ChannelCredentials;
  /**
   * Whether the verified certificate of an incoming call may speak for `member` (the id its
   * metadata names): undefined if so, else why not (the call is refused with PERMISSION_DENIED).
   */
  verifyCaller?(member: PeerMember, certificate: PeerCertificate | undefined): string | undefined;
}

export type PeerService = "election" | "quorum";
export type ClientCall = grpc.ClientDuplexStream<Buffer, Buffer>;
export type ServerCall = grpc.ServerDuplexStream<Buffer, Buffer>;
export type AnyCall = ClientCall | ServerCall;

/** The server id a call's metadata (or a callee's response headers) names; undefined if none or malformed. */
export function callerId(metadata: grpc.Metadata): number | undefined {
  const values = metadata.get(SERVER_ID_METADATA);
  if (values.length !== 1 || typeof values[0] !== "string" || !/^[0-9]{1,10}$/.test(values[0])) return undefined;
  return Number(values[0]);
}

/** Whether a failed call's details tell of a peer certificate this server did not accept. */
function isCertificateRefused(details: string): boolean {
  return /certificate|ssl|tls|alert|handshake|self.signed|issuer/i.test(details);
}

/**
 * Whether they tell of a connection the peer dropped while it was being set up: with TLS, what a
 * server sees when the peer refuses its certificate (grpc-js gives no more detail).
 */
function isDroppedWhileConnecting(details: string): boolean {
  return /ECONNRESET|EPIPE|Failed to connect|socket closed|connection dropped/i.test(details);
}

export interface PeerCallsOptions {
  myId: number;
  members: MemberTable;
  limits: PeerLimits;
  counters: PeerTransportCounters;
  logger: Logger;
  security: PeerTransportSecurity | undefined;
  clientAddresses: ClientAddressDirectory | undefined;
}

export class PeerCalls {
  private readonly myId: number;
  private readonly members: MemberTable;
  private readonly limits: PeerLimits;
  private readonly counters: PeerTransportCounters;
  private readonly logger: Logger;
  private readonly security: PeerTransportSecurity | undefined;
  private readonly clientAddresses: ClientAddressDirectory | undefined;
  /** One gRPC client per peer and service, made on the first call. */
  private readonly electionClients = new Map<number, grpc.Client>();
  private readonly quorumClients = new Map<number, grpc.Client>();
  private channelCredentials: grpc.ChannelCredentials | undefined;
  /** Links ("election 3", "quorum 1") whose TLS failure was logged, until they work again. */
  private readonly tlsFailuresLogged = new Set<string>();

  constructor(options: PeerCallsOptions) {
    this.myId = options.myId;
    this.members = options.members;
    this.limits = options.limits;
    this.counters = options.counters;
    this.logger = options.logger;
    this.security = options.security;
    this.clientAddresses = options.clientAddresses;
  }

  get tls(): boolean {
    return this.security !== undefined;
  }

  // ---------------------------------------------------------------------------------------------
  // Incoming calls.

  serverCredentials(): grpc.ServerCredentials {
    return this.security?.serverCredentials() ?? grpc.ServerCredentials.createInsecure();
  }

  /**
   * Checks an incoming call's identity; refuses it (and returns undefined) unless it is another
   * server speaking our protocol — a member, or one outside the member list while there is room
   * beside `unlisted()`, those with a stream to this server already.
   */
  admit(call: ServerCall, service: PeerService, running: boolean, unlisted: () => ReadonlySet<number>): number | undefined {
    const refuse = (code: grpc.status, details: string): undefined => {
      this.counters.refusedCalls++;
      this.logger.warn({ service, peerAddress: call.getPeer(), details }, "peer call refused");
      call.on("error", () => {});
      call.emit("error", { code, details });
      return undefined;
    };
    if (!running) return refuse(grpc.status.UNAVAILABLE, "server not running");
    const id = callerId(call.metadata);
    if (id === undefined) return refuse(grpc.status.PERMISSION_DENIED, `missing or malformed ${SERVER_ID_METADATA}`);
    if (id === this.myId) return refuse(grpc.status.PERMISSION_DENIED, `server ${id} is this server`);
    const version = call.metadata.get(PEER_PROTOCOL_METADATA)[0];
    if (version !== String(PEER_PROTOCOL_VERSION))
      return refuse(grpc.status.FAILED_PRECONDITION, `peer protocol ${String(version)}, expected ${PEER_PROTOCOL_VERSION}`);
    const member = this.members.get(id);
    if (member !== undefined) {
      const refusal = this.security?.verifyCaller?.(member, call.getAuthContext().sslPeerCertificate);
      if (refusal !== undefined) return refuse(grpc.status.PERMISSION_DENIED, `server ${id}: ${refusal}`);
      return id;
    }
    // Outside the member list: no record to bind a certificate to, so the TLS layer's verification
    // of it is all there is (and mutual TLS already demands one; this only makes sure).
    if (this.security !== undefined && call.getAuthContext().sslPeerCertificate === undefined) {
      return refuse(grpc.status.PERMISSION_DENIED, `server ${id} is not a member and has no verified certificate`);
    }
    const others = unlisted();
    if (!others.has(id) && others.size >= this.limits.unlistedCallersMax) {
      return refuse(grpc.status.RESOURCE_EXHAUSTED, `server ${id} is not a member, and ${others.size} such servers are connected already`);
    }
    this.logger.info({ peer: id, service, peerAddress: call.getPeer() }, "call from a server outside the member list accepted");
    return id;
  }

  // ---------------------------------------------------------------------------------------------
  // Outgoing calls.

  /**
   * A new call to a peer's election service (Notify) or quorum service (Follow), on the one gRPC
   * client kept per peer and service. Frames pass as bytes: the peer codec reads and writes them.
   */
  open(member: PeerMember, service: PeerService): ClientCall {
    const cache = service === "quorum" ? this.quorumClients : this.electionClients;
    let client = cache.get(member.id);
    if (!client) {
      client = new grpc.Client(
        formatAddress(member.host, service === "quorum" ? member.quorumPort : member.electionPort),
        (this.channelCredentials ??= this.security?.channelCredentials() ?? grpc.credentials.createInsecure()),
        {
          ...this.connectionOptions(service),
          "grpc.initial_reconnect_backoff_ms": this.limits.reconnectBackoffMsMin,
          "grpc.max_reconnect_backoff_ms": this.limits.reconnectBackoffMsMax,
          // Connections of their own: no sharing with other PeerTransports in this process.
          "grpc.use_local_subchannel_pool": 1,
        },
      );
      cache.set(member.id, client);
    }
    const method = service === "quorum" ? quorumServiceDefinition()["Follow"]! : electionServiceDefinition()["Notify"]!;
    return client.makeBidiStreamRequest(
      method.path,
      (b: Buffer) => b,
      (b: Buffer) => b,
      this.metadata(),
    );
  }

  /** Closes the client for `id`'s `service`, if any: the next call dials afresh. Started calls go on. */
  closeClient(service: PeerService, id: number): void {
    const cache = service === "quorum" ? this.quorumClients : this.electionClients;
    cache.get(id)?.close();
    cache.delete(id);
  }

  /** Forgets how `id` was dialled: both its clients, and its links' TLS failures logged. */
  forget(id: number): void {
    this.closeClient("election", id);
    // Closing a channel leaves its started calls running: the stream to a leader that moved goes
    // on, and the next one is dialled at the new address.
    this.closeClient("quorum", id);
    this.tlsFailuresLogged.delete(`election ${id}`);
    this.tlsFailuresLogged.delete(`quorum ${id}`);
  }

  closeAll(): void {
    for (const client of [...this.electionClients.values(), ...this.quorumClients.values()]) client.close();
    this.electionClients.clear();
    this.quorumClients.clear();
  }

  /** The gRPC options both ends of a peer connection take: the service's message bound, and keepalive. */
  connectionOptions(service: PeerService): grpc.ChannelOptions {
    const messageBytesMax = service === "quorum" ? this.limits.quorumMessageBytesMax : this.limits.electionMessageBytesMax;
    return {
      "grpc.max_receive_message_length": messageBytesMax,
      "grpc.max_send_message_length": messageBytesMax,
      "grpc.keepalive_time_ms": this.limits.keepaliveTimeMs,
      "grpc.keepalive_timeout_ms": this.limits.keepaliveTimeoutMs,
      "grpc.keepalive_permit_without_calls": 1,
    };
  }

  // ---------------------------------------------------------------------------------------------
  // Both directions.

  /** What this server says about itself on every call and answer. */
  metadata(): grpc.Metadata {
    const metadata = new grpc.Metadata();
    metadata.set(SERVER_ID_METADATA, String(this.myId));
    metadata.set(PEER_PROTOCOL_METADATA, String(PEER_PROTOCOL_VERSION));
    const clientAddress = this.clientAddresses?.ownAddress;
    if (clientAddress !== undefined) metadata.set(CLIENT_ADDRESS_METADATA, clientAddress);
    return metadata;
  }

  /**
   * Records the client address server `peer` sent, once its identity is settled (an admitted
   * caller, a callee that named the member dialled). None is fine (an older peer); a malformed one
   * is ignored: it must not cost the link.
   */
  noteClientAddress(peer: number, metadata: grpc.Metadata): void {
    const directory = this.clientAddresses;
    if (directory === undefined) return;
    const values = metadata.get(CLIENT_ADDRESS_METADATA);
    if (values.length === 0) return;
    if (values.length !== 1 || !directory.record(peer, values[0])) {
      this.logger.debug({ peer, values: values.length }, `ignoring a malformed ${CLIENT_ADDRESS_METADATA}`);
    }
  }

  /**
   * With TLS, logs at warn (once, until the link works again) a link to `peer` that failed because
   * a certificate was refused: the peer's by this server, or (most likely) this server's by the peer.
   */
  noteTlsFailure(logger: Logger, service: PeerService, peer: number, details: string): void {
    const link = `${service} ${peer}`;
    if (this.security === undefined || this.tlsFailuresLogged.has(link)) return;
    if (isCertificateRefused(details)) {
      this.tlsFailuresLogged.add(link);
      logger.warn({ details }, "peer link failed its TLS handshake: this server does not accept the peer's certificate");
    } else if (isDroppedWhileConnecting(details)) {
      this.tlsFailuresLogged.add(link);
      logger.warn(
        { details },
        "peer link failed its TLS handshake: the peer dropped the connection, as it does when it does not accept this server's certificate",
      );
    }
  }

  /** The link to `peer` works: a later TLS failure of it is logged again. */
  linkWorks(service: PeerService, peer: number): void {
    this.tlsFailuresLogged.delete(`${service} ${peer}`);
  }
}
