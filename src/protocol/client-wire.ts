/**
 * What the client stream needs at runtime beyond the generated codec (gen/client.ts): the Corral
 * service definition that grpc-js routes by, loaded from proto/client.proto with @grpc/proto-loader
 * (CLIENT_PROTO_OPTIONS: tests use the same loader as an independent codec), and the channel
 * options of both ends.
 */
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { limits } from "../common/constants.js";

export const CLIENT_PROTO_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: Number,
  defaults: true,
  oneofs: true,
  arrays: true,
};

let cachedService: grpc.ServiceDefinition | undefined;

/** The Corral service definition, loaded once from proto/client.proto beside the package root. */
export function corralServiceDefinition(): grpc.ServiceDefinition {
  if (cachedService) return cachedService;
  // dist/src/protocol/ -> package root, and src/protocol/ when run from sources.
  const protoPath = fileURLToPath(new URL("../../../proto/client.proto", import.meta.url));
  const fallback = fileURLToPath(new URL("../../proto/client.proto", import.meta.url));
  const definition = protoLoader.loadSync([protoPath, fallback].find(existsSync) ?? protoPath, CLIENT_PROTO_OPTIONS);
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    corral: { client: { v1: { Corral: grpc.ServiceClientConstructor } } };
  };
  cachedService = pkg.corral.client.v1.Corral.service;
  return cachedService;
}

/** A grpc-js client constructor for the Corral service. */
export function corralClientConstructor(): grpc.ServiceClientConstructor {
  return grpc.makeClientConstructor(corralServiceDefinition(), "corral.client.v1.Corral");
}

/**
 * Message bounds of the client stream, per direction. What a client sends is bounded (one znode's
 * data plus its envelope); what a server answers is not, as ZooKeeper puts no limit on its replies:
 * a read returns whatever the tree holds (getChildren of 10,000 children with long names is
 * 20 MB), and a bound here would fail that read with a CONNECTIONLOSS on every retry.
 */
const UNBOUNDED = -1;

/** The server side of the client stream. */
export const GRPC_SERVER_CHANNEL_OPTIONS: grpc.ChannelOptions = {
  "grpc.max_receive_message_length": limits.messageBytesMax,
  "grpc.max_send_message_length": UNBOUNDED,
};

/** The client side of the client stream (the SDK and tests' raw sessions). */
export const GRPC_CLIENT_CHANNEL_OPTIONS: grpc.ChannelOptions = {
  "grpc.max_receive_message_length": UNBOUNDED,
  "grpc.max_send_message_length": limits.messageBytesMax,
};
