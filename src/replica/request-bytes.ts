/**
 * What a request costs the server while it waits, in bytes: the flow-control bounds count it
 * (docs/architecture.md §7b). An estimate from the decoded request — its data, paths and
 * credentials plus a fixed overhead for the record around them — so that both client doors, and
 * the leader's admission queue, count a request the same way whatever its wire form.
 */
import type { ClientRequest } from "./requests.js";

/** What a decoded request costs beyond its variable parts (its record, header and queue entry). */
export const REQUEST_OVERHEAD_BYTES = 64;

/** A request as the server queues it: a client's, or a new session's createSession. */
export type CountedRequest = ClientRequest | { op: "createSession"; password: Uint8Array };

export function requestBytes(request: CountedRequest): number {
  return REQUEST_OVERHEAD_BYTES + variableBytes(request);
}

function variableBytes(request: CountedRequest): number {
  switch (request.op) {
    case "createSession":
      return request.password.byteLength;
    case "create":
    case "setData":
      return request.path.length + request.data.byteLength;
    case "multi":
      return request.ops.reduce((sum, op) => sum + op.path.length + ("data" in op ? op.data.byteLength : 0), 0);
    case "multiRead":
      return request.ops.reduce((sum, op) => sum + op.path.length, 0);
    case "setWatches":
      return [request.dataWatches, request.existWatches, request.childWatches, request.persistentWatches, request.persistentRecursiveWatches].reduce(
        (sum, paths) => sum + paths.reduce((inner, path) => inner + path.length, 0),
        0,
      );
    case "addAuth":
      return request.scheme.length + request.auth.byteLength;
    case "getEphemerals":
      return request.prefixPath.length;
    case "reconfig":
      return (request.joining?.length ?? 0) + (request.leaving?.length ?? 0) + (request.newMembers?.length ?? 0);
    default:
      return "path" in request ? request.path.length : 0;
  }
}
