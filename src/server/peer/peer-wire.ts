/**
 * proto/peer.proto as grpc-js sees it. The method paths come from the .proto itself (loaded once
 * with @grpc/proto-loader, as src/protocol/client-wire.ts loads client.proto); the messages pass
 * through grpc-js as raw bytes, and src/server/peer/peer-codec.ts encodes and decodes them, so a
 * malformed frame is the transport's to answer (it ends that stream), never an exception inside
 * grpc-js.
 */
import type * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** Options under which proto-loader reads peer.proto (the codec tests compare against these). */
export const PEER_PROTO_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  arrays: true,
};

/** Version of the peer protocol, sent as `corral-peer-protocol` on every stream. */
export const PEER_PROTOCOL_VERSION = 1;
/** Metadata key carrying a server's id, in both directions. */
export const SERVER_ID_METADATA = "corral-server-id";
export const PEER_PROTOCOL_METADATA = "corral-peer-protocol";
/**
 * Metadata key carrying the sender's corral client address ("host:port", as clients dial it), in
 * both directions; optional, so peers that predate it still speak protocol 1.
 */
export const CLIENT_ADDRESS_METADATA = "corral-client-address";

const ELECTION_SERVICE = "corral.peer.v1.Election";
const QUORUM_SERVICE = "corral.peer.v1.Quorum";

/** Where proto/peer.proto is, from src/server/peer/ or from a build under <outDir>/src/server/peer/. */
export function peerProtoPath(): string {
  const candidates = [
    fileURLToPath(new URL("../../../../proto/peer.proto", import.meta.url)),
    fileURLToPath(new URL("../../../proto/peer.proto", import.meta.url)),
  ];
  return candidates.find(existsSync) ?? candidates[0]!;
}

let cachedPackage: protoLoader.PackageDefinition | undefined;

/** peer.proto loaded by proto-loader (reflective serializers; the tests' reference codec). */
export function peerPackageDefinition(): protoLoader.PackageDefinition {
  cachedPackage ??= protoLoader.loadSync(peerProtoPath(), PEER_PROTO_OPTIONS);
  return cachedPackage;
}

function method(service: string, name: string): protoLoader.MethodDefinition<object, object> {
  const definition = peerPackageDefinition()[service] as protoLoader.ServiceDefinition | undefined;
  const found = definition?.[name];
  if (!found) throw new Error(`${service}.${name} is missing from ${peerProtoPath()}`);
  return found;
}

const passThrough = (bytes: Buffer): Buffer => bytes;

function rawMethod(service: string, name: string): grpc.MethodDefinition<Buffer, Buffer> {
  const reference = method(service, name);
  return {
    path: reference.path,
    requestStream: reference.requestStream,
    responseStream: reference.responseStream,
    originalName: reference.originalName ?? name,
    requestSerialize: passThrough,
    requestDeserialize: passThrough,
    responseSerialize: passThrough,
    responseDeserialize: passThrough,
  };
}

let cachedElection: grpc.ServiceDefinition | undefined;
let cachedQuorum: grpc.ServiceDefinition | undefined;

/** The Election service with frames as raw bytes (NotificationBatch both ways). */
export function electionServiceDefinition(): grpc.ServiceDefinition {
  cachedElection ??= { Notify: rawMethod(ELECTION_SERVICE, "Notify") };
  return cachedElection;
}

/** The Quorum service with frames as raw bytes (QuorumBatch both ways). */
export function quorumServiceDefinition(): grpc.ServiceDefinition {
  cachedQuorum ??= { Follow: rawMethod(QUORUM_SERVICE, "Follow") };
  return cachedQuorum;
}

/** proto-loader's own method definitions (reflective codec), for tests and tools. */
export function referenceMethods(): {
  notify: protoLoader.MethodDefinition<object, object>;
  follow: protoLoader.MethodDefinition<object, object>;
} {
  return { notify: method(ELECTION_SERVICE, "Notify"), follow: method(QUORUM_SERVICE, "Follow") };
}
