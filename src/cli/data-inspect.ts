/**
 * `corral data dump` and `corral data log`: a member's data dir for a person, as ZooKeeper's
 * zkSnapShotToolkit (-d, -json) and zkTxnLogToolkit show theirs. Read-only and safe while the
 * member's server runs (src/server/backup/data-dir.ts reads the locked txn log from a copy).
 */
import { readDataDir } from "../server/backup/data-dir.js";
import type { DataTree } from "../store/data-tree.js";
import { clientStat } from "../store/data-tree.js";
import { decodeTxn } from "../store/txn-codec.js";
import { ownerKind, type Acl, type Txn, type TxnBody } from "../store/types.js";
import { formatZxid } from "../store/zxid.js";
import { hex64 } from "../common/hex.js";
import { NULL_DATA } from "../common/znode.js";
import { required, type FlagTable, type ToolIo } from "./tool-command.js";

export const DATA_DUMP_FLAGS: FlagTable = {
  "data-dir": ["DIR", "the member's data dir (its server may be running)"],
  json: ["", "one JSON document instead of text"],
};

export const DATA_LOG_FLAGS: FlagTable = {
  "data-dir": ["DIR", "the member's data dir (its server may be running)"],
};

/** zkCli's order: create, delete, read, write, admin. */
const PERMISSION_LETTERS = [
  [4, "c"],
  [8, "d"],
  [1, "r"],
  [2, "w"],
  [16, "a"],
] as const;

function aclText(acl: readonly Acl[]): string {
  return acl
    .map(
      (entry) =>
        `${entry.id.scheme}:${entry.id.id}:${PERMISSION_LETTERS.filter(([bit]) => entry.perms & bit)
          .map(([, letter]) => letter)
          .join("")}`,
    )
    .join(", ");
}

function dataText(data: Uint8Array): string {
  if (data === NULL_DATA) return "null";
  const text = Buffer.from(data).toString("utf8");
  // Printable UTF-8 is shown as it is; anything else as base64, which says so.
  return /^[\P{C}\t\n]*$/u.test(text) && !text.includes("\uFFFD") ? JSON.stringify(text) : `base64:${Buffer.from(data).toString("base64")}`;
}

export async function runDataDump(flags: Record<string, string>, io: ToolIo): Promise<void> {
  const dir = required(flags, "data-dir");
  const contents = await readDataDir(dir);
  const tree = contents.tree;
  if (flags["json"] === "true") {
    io.out(JSON.stringify(jsonDump(tree, contents.snapshotZxid, contents.inUse), undefined, 2) + "\n");
    return;
  }
  const after = contents.log.filter((entry) => entry.zxid > (contents.snapshotZxid ?? 0)).length;
  io.out(
    `corral data dir ${dir}${contents.inUse ? " (its server is running: read from a copy of the log)" : ""}\n` +
      `zxid ${formatZxid(tree.lastProcessedZxid)}: ${tree.nodeCount()} znodes, ${tree.sessions.size} sessions, digest ${tree.digest()}\n` +
      `from ${contents.snapshotZxid === undefined ? "no snapshot" : `the snapshot at ${formatZxid(contents.snapshotZxid)}`} and ${after} log records after it\n`,
  );
  for (const [sessionId, record] of [...tree.sessions].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const ephemerals = [...tree.ephemeralsOf(sessionId)].sort();
    io.out(`session ${hex64(sessionId)} timeout ${record.timeoutMs} ms${ephemerals.length === 0 ? "" : `, ephemerals ${ephemerals.join(" ")}`}\n`);
  }
  tree.walk((path, node) => {
    const stat = clientStat(node.stat);
    const kind = node.stat.ephemeralOwner === 0n ? "persistent" : ownerKind(node.stat.ephemeralOwner);
    io.out(
      [
        path,
        `  cZxid = ${formatZxid(stat.czxid)}`,
        `  ctime = ${new Date(stat.ctime).toISOString()}`,
        `  mZxid = ${formatZxid(stat.mzxid)}`,
        `  mtime = ${new Date(stat.mtime).toISOString()}`,
        `  pZxid = ${formatZxid(stat.pzxid)}`,
        `  cversion = ${stat.cversion}`,
        `  dataVersion = ${stat.version}`,
        `  aclVersion = ${stat.aversion}`,
        `  ephemeralOwner = ${hex64(stat.ephemeralOwner)} (${kind})`,
        `  dataLength = ${stat.dataLength}`,
        `  numChildren = ${stat.numChildren}`,
        `  acl = ${aclText(node.acl)}`,
        `  data = ${dataText(node.data)}`,
        "",
      ].join("\n"),
    );
  });
}

function jsonDump(tree: DataTree, snapshotZxid: number | undefined, inUse: boolean): unknown {
  const nodes: unknown[] = [];
  tree.walk((path, node) => {
    const stat = clientStat(node.stat);
    nodes.push({
      path,
      kind: node.stat.ephemeralOwner === 0n ? "persistent" : ownerKind(node.stat.ephemeralOwner),
      data: node.data === NULL_DATA ? null : Buffer.from(node.data).toString("base64"),
      acl: node.acl.map((entry) => ({ perms: entry.perms, scheme: entry.id.scheme, id: entry.id.id })),
      stat: {
        ...stat,
        czxid: formatZxid(stat.czxid),
        mzxid: formatZxid(stat.mzxid),
        pzxid: formatZxid(stat.pzxid),
        ephemeralOwner: hex64(node.stat.ephemeralOwner),
      },
    });
  });
  const sessions = [...tree.sessions].map(([id, record]) => ({ id: hex64(id), timeoutMs: record.timeoutMs, ephemerals: [...tree.ephemeralsOf(id)].sort() }));
  return {
    zxid: formatZxid(tree.lastProcessedZxid),
    snapshotZxid: snapshotZxid === undefined ? null : formatZxid(snapshotZxid),
    serverRunning: inUse,
    digest: tree.digest(),
    sessions,
    nodes,
  };
}

export async function runDataLog(flags: Record<string, string>, io: ToolIo): Promise<void> {
  const dir = required(flags, "data-dir");
  const contents = await readDataDir(dir);
  const log = contents.log;
  io.out(
    `corral txn log of ${dir}${contents.inUse ? " (its server is running: read from a copy)" : ""}: ${log.length} records` +
      (log.length === 0 ? "" : `, zxid ${formatZxid(log[0]!.zxid)} to ${formatZxid(log[log.length - 1]!.zxid)}`) +
      `; accepted epoch ${contents.epochs.accepted ?? "unset"}, current epoch ${contents.epochs.current ?? "unset"}\n`,
  );
  for (const entry of log) {
    let txn: Txn;
    try {
      txn = decodeTxn(entry.record);
    } catch (error) {
      io.out(`zxid ${formatZxid(entry.zxid)} undecodable record (${entry.record.length} bytes): ${(error as Error).message}\n`);
      continue;
    }
    const h = txn.header;
    io.out(`${new Date(h.timeMs).toISOString()} session ${hex64(h.sessionId)} cxid ${hex64(h.cxid >>> 0)} zxid ${formatZxid(h.zxid)} ${describe(txn.body)}\n`);
  }
}

/** A txn body as zkTxnLogToolkit prints one: its type, then what it does. */
function describe(body: TxnBody): string {
  switch (body.type) {
    case "create": {
      const kind = body.ephemeralOwner === 0n ? "persistent" : ownerKind(body.ephemeralOwner);
      return `create ${body.path} ${kind} dataLength ${body.data.length} acl [${aclText(body.acl)}] parentCversion ${body.parentCversion}`;
    }
    case "delete":
      return `delete ${body.path}`;
    case "setData":
      return `setData ${body.path} version ${body.version} dataLength ${body.data.length}`;
    case "setAcl":
      return `setAcl ${body.path} aversion ${body.aversion} acl [${aclText(body.acl)}]`;
    case "check":
      return `check ${body.path} version ${body.version}`;
    case "reconfig":
      return `reconfig ${JSON.stringify(Buffer.from(body.data).toString("utf8"))}`;
    case "createSession":
      return `createSession timeout ${body.timeoutMs}`;
    case "closeSession":
      return "closeSession";
    case "error":
      return `error ${body.err}`;
    case "multi":
      return `multi [${body.ops.map((op) => describe(op)).join("; ")}]`;
  }
}
