/** Multi operations: the `op` builders, their wire form, and the decoding of a multi's answer. */
import { ZkError, ZkErrorCode, zkErrorName } from "../common/errors.js";
import type { ZkErrorName } from "../common/errors.js";
import { limits } from "../common/constants.js";
import { validatePath } from "../common/paths.js";
import type { MultiOp, MultiReadOp } from "../../gen/client.js";
import type { DecodedOpResult } from "./codec.js";
import { prependChroot, stripChroot } from "./connect-string.js";
import { aclToWire, checkVersion, modeFlag, requireStat, toBytes, ttlToWire } from "./convert.js";
import type { CreateOptions, Data, Op, OpResult, ReadOp, ReadOpResult, VersionOptions } from "./types.js";
import { isSequentialMode } from "./types.js";

/** Builders for `client.multi([...])`. Data is converted at once; paths, modes and versions are checked when the multi is sent. */
export const op = {
  /** Creates a node, as `client.create`. */
  create(path: string, data?: Data, options: CreateOptions = {}): Op {
    return {
      type: "create",
      path,
      data: toBytes(data),
      mode: options.mode ?? "persistent",
      acl: options.acl,
      ttlMs: options.ttlMs,
    };
  },
  /** Deletes a node, as `client.delete`. */
  delete(path: string, options: VersionOptions = {}): Op {
    return { type: "delete", path, version: options.version ?? -1 };
  },
  /** Sets a node's data, as `client.setData`. */
  setData(path: string, data: Data, options: VersionOptions = {}): Op {
    return { type: "setData", path, data: toBytes(data), version: options.version ?? -1 };
  },
  /** Writes nothing; fails the whole multi (BADVERSION, NONODE) unless the node exists at data version `version` (-1: any). */
  check(path: string, version: number): Op {
    return { type: "check", path, version };
  },
  /** For `client.multiRead`. */
  getData(path: string): ReadOp {
    return { type: "getData", path };
  },
  /** For `client.multiRead`. */
  getChildren(path: string): ReadOp {
    return { type: "getChildren", path };
  },
} as const;

/** Validates every read (paths relative to the chroot) and builds the wire list. Throws ZkError. */
export function readOpsToWire(ops: readonly ReadOp[], chroot: string | undefined): MultiReadOp[] {
  if (!Array.isArray(ops)) throw new ZkError("BADARGUMENTS", "multiRead takes an array of ops");
  // Array.isArray narrows to any[]; the list is the caller's ReadOp[] (each op is checked below).
  const reads: readonly ReadOp[] = ops;
  if (reads.length > limits.multiOpsMax) {
    throw new ZkError("BADARGUMENTS", `a multiRead holds at most ${limits.multiOpsMax} ops, not ${reads.length}`);
  }
  return reads.map((o) => {
    if (o?.type !== "getData" && o?.type !== "getChildren") throw new ZkError("BADARGUMENTS", "multiRead takes op.getData and op.getChildren only");
    validatePath(o.path);
    const read = { path: prependChroot(chroot, o.path), watch: false };
    return { op: o.type === "getData" ? { $case: "getData", getData: read } : { $case: "getChildren", getChildren: read } };
  });
}

/** A multiRead's answer, one entry per op, each its own success or error. */
export function readResultsFromWire(ops: readonly ReadOp[], results: readonly DecodedOpResult[]): ReadOpResult[] {
  if (results.length !== ops.length) throw new ZkError("MARSHALLINGERROR", `multiRead of ${ops.length} ops answered with ${results.length} results`);
  return ops.map((o, i): ReadOpResult => {
    const r = results[i]!;
    if (r.err !== 0) return { type: "error", err: r.err, code: zkErrorName(r.err) ?? "SYSTEMERROR" };
    return o.type === "getData" ? { type: "getData", data: r.data, stat: requireStat(r.stat) } : { type: "getChildren", children: r.children };
  });
}

type WireOp = NonNullable<MultiOp["op"]>;

/** Rough encoded size of one op, to keep a multi inside the message limit. */
function approxBytes(wire: WireOp): number {
  switch (wire.$case) {
    case "create":
      return 32 + wire.create.path.length * 3 + wire.create.data.length + wire.create.acl.length * 64;
    case "setData":
      return 32 + wire.setData.path.length * 3 + wire.setData.data.length;
    case "delete":
      return 16 + wire.delete.path.length * 3;
    case "check":
      return 16 + wire.check.path.length * 3;
  }
}

/** Validates every op (paths relative to the chroot) and builds the wire list. Throws ZkError. */
export function opsToWire(ops: readonly Op[], chroot: string | undefined): MultiOp[] {
  if (!Array.isArray(ops)) throw new ZkError("BADARGUMENTS", "multi takes an array of ops");
  // Array.isArray narrows to any[]; the list is the caller's Op[] (opToWire checks each op).
  const writes: readonly Op[] = ops;
  if (writes.length > limits.multiOpsMax) {
    throw new ZkError("BADARGUMENTS", `a multi holds at most ${limits.multiOpsMax} ops, not ${writes.length}`);
  }
  const out: MultiOp[] = [];
  let bytes = 0;
  for (const o of writes) {
    const op = opToWire(o, chroot);
    bytes += approxBytes(op);
    out.push({ op });
  }
  if (bytes > limits.messageBytesMax - 1024) {
    throw new ZkError("BADARGUMENTS", `a multi of about ${bytes} bytes exceeds the ${limits.messageBytesMax}-byte message limit`);
  }
  return out;
}

function opToWire(o: Op, chroot: string | undefined): WireOp {
  if (!o || typeof o !== "object") throw new ZkError("BADARGUMENTS", "not an op; build ops with op.create/delete/setData/check");
  switch (o.type) {
    case "create": {
      validatePath(o.path, isSequentialMode(o.mode));
      return {
        $case: "create",
        create: {
          path: prependChroot(chroot, o.path),
          data: o.data,
          acl: aclToWire(o.acl),
          mode: modeFlag(o.mode),
          ttlMs: ttlToWire(o.mode, o.ttlMs),
        },
      };
    }
    case "delete":
      validatePath(o.path);
      return { $case: "delete", delete: { path: prependChroot(chroot, o.path), version: checkVersion(o.version) } };
    case "setData":
      validatePath(o.path);
      return {
        $case: "setData",
        setData: { path: prependChroot(chroot, o.path), data: o.data, version: checkVersion(o.version) },
      };
    case "check":
      validatePath(o.path);
      return { $case: "check", check: { path: prependChroot(chroot, o.path), version: checkVersion(o.version) } };
    default:
      throw new ZkError("BADARGUMENTS", `unknown op type ${JSON.stringify((o as { type?: unknown }).type)}`);
  }
}

/** A failed multi: `code` is the first failing op's error; `results` has one entry per op. */
export class ZkMultiError extends ZkError {
  /** One result per op: the failing op's error, `RUNTIMEINCONSISTENCY` for ops after it, and the ops before it rolled back. */
  readonly results: OpResult[];
  /** Index of the op that failed. */
  readonly failedIndex: number;

  constructor(code: ZkErrorName, results: OpResult[], failedIndex: number, path: string | undefined) {
    super(code, `multi failed at op ${failedIndex}: ${code}${path === undefined ? "" : `: ${path}`}`, path);
    this.name = "ZkMultiError";
    this.results = results;
    this.failedIndex = failedIndex;
  }
}

/** The answer of a successful multi, one result per op, create paths relative to the chroot. */
export function multiResultsFromWire(ops: readonly Op[], wire: readonly DecodedOpResult[], chroot: string | undefined): OpResult[] {
  if (wire.length !== ops.length) {
    throw new ZkError("MARSHALLINGERROR", `multi answered ${wire.length} results for ${ops.length} ops`);
  }
  const out = new Array<OpResult>(ops.length);
  for (let i = 0; i < ops.length; i++) {
    const o = ops[i] as Op;
    const r = wire[i] as DecodedOpResult;
    switch (o.type) {
      case "create":
        out[i] = { type: "create", path: stripChroot(chroot, r.path), stat: requireStat(r.stat) };
        break;
      case "delete":
        out[i] = { type: "delete" };
        break;
      case "setData":
        out[i] = { type: "setData", stat: requireStat(r.stat) };
        break;
      case "check":
        out[i] = { type: "check" };
        break;
    }
  }
  return out;
}

/** The error of a failed multi (err ≠ 0): ZkMultiError when the server sent per-op results, else a ZkError. */
export function multiErrorFromWire(err: number, ops: readonly Op[], wire: readonly DecodedOpResult[]): ZkError {
  if (wire.length === 0) return ZkError.fromErrno(err);
  const results: OpResult[] = wire.map((r) => ({ type: "error", err: r.err, code: zkErrorName(r.err) ?? "SYSTEMERROR" }));
  let failedIndex = wire.findIndex((r) => r.err !== ZkErrorCode.OK && r.err !== ZkErrorCode.RUNTIMEINCONSISTENCY);
  if (failedIndex < 0) failedIndex = wire.findIndex((r) => r.err !== ZkErrorCode.OK);
  if (failedIndex < 0) failedIndex = 0;
  const code = zkErrorName(err) ?? "SYSTEMERROR";
  return new ZkMultiError(code, results, failedIndex, ops[failedIndex]?.path);
}
