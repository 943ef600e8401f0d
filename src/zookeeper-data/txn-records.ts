/**
 * ZooKeeper's persistence records (zookeeper.jute, modules org.apache.zookeeper.server.persistence
 * and org.apache.zookeeper.txn) and the decoding of one logged txn as SerializeUtils.deserializeTxn
 * reads it: a TxnHeader, the record its type names (a 3.3-era CreateTxnV0 where a create is short,
 * a bodiless closeSession from before 3.6), then a TxnDigest where 3.6+ wrote one.
 */
import { JuteError, JuteReader } from "../server/zk-wire/jute.js";
import { ACL, bool, buffer, int, long, OpCode, struct, ustring, vector } from "../server/zk-wire/records.js";
import type { Acl } from "../store/types.js";
import { ZooKeeperDataError } from "./errors.js";

export { OpCode };

export const FileHeader = struct({ magic: int, version: int, dbid: long });
export const TxnHeader = struct({ clientId: long, cxid: int, zxid: long, time: long, type: int });
export const TxnDigest = struct({ version: int, treeDigest: long });
// zookeeper.jute's StatPersisted: a Stat without dataLength and numChildren, which follow from the node.
export const StatPersisted = struct({
  czxid: long,
  mzxid: long,
  ctime: long,
  mtime: long,
  version: int,
  cversion: int,
  aversion: int,
  ephemeralOwner: long,
  pzxid: long,
});

const acls = vector(ACL);
const CreateTxnV0 = struct({ path: ustring, data: buffer, acl: acls, ephemeral: bool });
const CreateTxn = struct({ path: ustring, data: buffer, acl: acls, ephemeral: bool, parentCVersion: int });
const CreateTTLTxn = struct({ path: ustring, data: buffer, acl: acls, parentCVersion: int, ttl: long });
const CreateContainerTxn = struct({ path: ustring, data: buffer, acl: acls, parentCVersion: int });
const DeleteTxn = struct({ path: ustring });
const SetDataTxn = struct({ path: ustring, data: buffer, version: int });
const CheckVersionTxn = struct({ path: ustring, version: int });
const SetACLTxn = struct({ path: ustring, acl: acls, version: int });
const CreateSessionTxn = struct({ timeOut: int });
const CloseSessionTxn = struct({ paths2Delete: vector(ustring) });
const ErrorTxn = struct({ err: int });
const Txn = struct({ type: int, data: buffer });
const MultiTxn = struct({ txns: vector(Txn) });

/** ZooKeeper's "magic" numbers: "ZKSN" opens a snapshot, "ZKLG" a txn log; both at version 2. */
export const SNAPSHOT_MAGIC = 0x5a4b534e;
export const TXN_LOG_MAGIC = 0x5a4b4c47;
export const FILE_FORMAT_VERSION = 2;

/** Where a znode's data was null (a ZooKeeper client wrote null), `data` is null. */
export type ZooKeeperTxn =
  | { type: "create"; opcode: number; path: string; data: Uint8Array | null; acl: Acl[]; ephemeral: boolean; parentCVersion: number }
  | { type: "createContainer"; opcode: number; path: string; data: Uint8Array | null; acl: Acl[]; parentCVersion: number }
  | { type: "createTTL"; opcode: number; path: string; data: Uint8Array | null; acl: Acl[]; parentCVersion: number; ttl: bigint }
  | { type: "delete"; opcode: number; path: string }
  | { type: "setData"; opcode: number; path: string; data: Uint8Array | null; version: number }
  | { type: "setACL"; opcode: number; path: string; acl: Acl[]; version: number }
  | { type: "check"; opcode: number; path: string; version: number }
  | { type: "createSession"; opcode: number; timeoutMs: number }
  | { type: "closeSession"; opcode: number; paths2Delete: string[] | undefined }
  | { type: "error"; opcode: number; err: number }
  | { type: "multi"; opcode: number; txns: ZooKeeperTxn[] };

export interface ZooKeeperTxnHeader {
  sessionId: bigint;
  cxid: number;
  zxid: bigint;
  timeMs: bigint;
  opcode: number;
}

export interface ZooKeeperTxnEntry {
  header: ZooKeeperTxnHeader;
  txn: ZooKeeperTxn;
  /** The tree digest the leader predicted after this txn (3.6+), if the record carries one. */
  digest: { version: number; treeDigest: bigint } | undefined;
}

/** Decodes one logged txn (the bytes its CRC covers). Throws ZooKeeperDataError. */
export function decodeTxnEntry(bytes: Uint8Array): ZooKeeperTxnEntry {
  // A logged txn is as large as jute.maxbuffer allowed its request to be: no field bound but the bytes.
  const reader = new JuteReader(bytes, { fieldLengthMaxBytes: bytes.length });
  try {
    const raw = TxnHeader.read(reader);
    const header: ZooKeeperTxnHeader = { sessionId: raw.clientId, cxid: raw.cxid, zxid: raw.zxid, timeMs: raw.time, opcode: raw.type };
    const bodyStart = reader.offsetBytes;
    let txn: ZooKeeperTxn;
    try {
      txn = readTxn(reader, raw.type, false);
    } catch (error) {
      if (!(error instanceof JuteError && error.reason === "truncated")) throw error;
      if (raw.type === OpCode.create) {
        // A create logged before parentCVersion existed: -1 asks createNode to work it out.
        const v0 = CreateTxnV0.read(new JuteReader(bytes.subarray(bodyStart), { fieldLengthMaxBytes: bytes.length }));
        txn = { type: "create", opcode: raw.type, path: pathOf(v0.path), data: v0.data, acl: aclsOf(v0.acl), ephemeral: v0.ephemeral, parentCVersion: -1 };
        return { header, txn, digest: undefined };
      }
      if (raw.type === OpCode.closeSession) return { header, txn: { type: "closeSession", opcode: raw.type, paths2Delete: undefined }, digest: undefined };
      throw error;
    }
    let digest: ZooKeeperTxnEntry["digest"];
    if (reader.remainingBytes >= TxnDigest.minBytes) {
      const read = TxnDigest.read(reader);
      digest = { version: read.version, treeDigest: read.treeDigest };
    }
    return { header, txn, digest };
  } catch (error) {
    if (error instanceof JuteError) throw new ZooKeeperDataError("", `malformed txn record: ${error.message}`);
    throw error;
  }
}

function readTxn(reader: JuteReader, opcode: number, inMulti: boolean): ZooKeeperTxn {
  switch (opcode) {
    case OpCode.create:
    case OpCode.create2: {
      const r = CreateTxn.read(reader);
      return { type: "create", opcode, path: pathOf(r.path), data: r.data, acl: aclsOf(r.acl), ephemeral: r.ephemeral, parentCVersion: r.parentCVersion };
    }
    case OpCode.createTTL: {
      const r = CreateTTLTxn.read(reader);
      return { type: "createTTL", opcode, path: pathOf(r.path), data: r.data, acl: aclsOf(r.acl), parentCVersion: r.parentCVersion, ttl: r.ttl };
    }
    case OpCode.createContainer: {
      const r = CreateContainerTxn.read(reader);
      return { type: "createContainer", opcode, path: pathOf(r.path), data: r.data, acl: aclsOf(r.acl), parentCVersion: r.parentCVersion };
    }
    case OpCode.delete:
    case OpCode.deleteContainer:
      return { type: "delete", opcode, path: pathOf(DeleteTxn.read(reader).path) };
    case OpCode.setData:
    case OpCode.reconfig: {
      const r = SetDataTxn.read(reader);
      return { type: "setData", opcode, path: pathOf(r.path), data: r.data, version: r.version };
    }
    case OpCode.check: {
      const r = CheckVersionTxn.read(reader);
      return { type: "check", opcode, path: pathOf(r.path), version: r.version };
    }
    case OpCode.error:
      return { type: "error", opcode, err: ErrorTxn.read(reader).err };
  }
  if (inMulti) throw new ZooKeeperDataError("", `a multi holds an op of type ${opcode}, which a multi cannot`);
  switch (opcode) {
    case OpCode.setACL: {
      const r = SetACLTxn.read(reader);
      return { type: "setACL", opcode, path: pathOf(r.path), acl: aclsOf(r.acl), version: r.version };
    }
    case OpCode.createSession:
      return { type: "createSession", opcode, timeoutMs: CreateSessionTxn.read(reader).timeOut };
    case OpCode.closeSession: {
      const paths = CloseSessionTxn.read(reader).paths2Delete;
      return { type: "closeSession", opcode, paths2Delete: paths === null ? undefined : paths.map(pathOf) };
    }
    case OpCode.multi: {
      const txns = (MultiTxn.read(reader).txns ?? []).map((sub) => {
        const data = sub.data ?? new Uint8Array(0);
        return readTxn(new JuteReader(data, { fieldLengthMaxBytes: data.length }), sub.type, true);
      });
      return { type: "multi", opcode, txns };
    }
    default:
      throw new ZooKeeperDataError("", `unknown txn type ${opcode}`);
  }
}

function pathOf(path: string | null): string {
  if (path === null || !path.startsWith("/")) throw new ZooKeeperDataError("", `txn names the path ${JSON.stringify(path)}, which is not absolute`);
  return path;
}

/** jute ACLs as the store's: a null id part becomes "", as ZooKeeper would compare it. */
export function aclsOf(list: { perms: number; id: { scheme: string | null; id: string | null } }[] | null): Acl[] {
  return (list ?? []).map((entry) => ({ perms: entry.perms, id: { scheme: entry.id.scheme ?? "", id: entry.id.id ?? "" } }));
}

/** The name ZooKeeper's TxnLogToolkit prints for an opcode ("create2", "closeSession", …). */
export function opcodeName(opcode: number): string {
  for (const [name, value] of Object.entries(OpCode)) if (value === opcode) return name;
  return `unknown(${opcode})`;
}
