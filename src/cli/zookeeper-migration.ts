/**
 * `corral import` and `corral export`: a ZooKeeper 3.4–3.9 data dir into a corral member's data
 * dir (the tree ZooKeeper itself would recover from it, every stat kept, zxids going on from
 * ZooKeeper's), and a corral data dir into a ZooKeeper 3.8 snapshot, the way back.
 */
import { mkdir, open, readdir, rename, unlink } from "node:fs/promises";
import { join, resolve } from "node:path";
import { hex64 } from "../common/hex.js";
import { ConfigError } from "../server/config-error.js";
import { checkDataDirFree, layDownDataDir, readDataDir } from "../server/backup/data-dir.js";
import { ownerKind } from "../store/types.js";
import { treeFromImage } from "../store/tree-image.js";
import { fsyncDirectory } from "../store/disk/snapshot-store.js";
import { epochOf, formatZxid } from "../store/zxid.js";
import { corralImageOf, zookeeperImageOf } from "../zookeeper-data/convert.js";
import { ZooKeeperDataError } from "../zookeeper-data/errors.js";
import { encodeZooKeeperSnapshot } from "../zookeeper-data/snapshot-file.js";
import { recoverZooKeeperDataDir, VERSION_DIR } from "../zookeeper-data/zookeeper-data-dir.js";
import { required, type FlagTable, type ToolIo } from "./tool-command.js";

export const IMPORT_FLAGS: FlagTable = {
  "zookeeper-data-dir": ["DIR", "ZooKeeper's dataDir (the one holding version-2/ with its snapshots)"],
  "zookeeper-data-log-dir": ["DIR", "ZooKeeper's dataLogDir, when its txn logs are kept apart"],
  "data-dir": ["DIR", "the corral member's data dir to lay down; it must be new or empty"],
  "accept-digest-mismatch": ["", "import even where the tree's digest differs from one ZooKeeper recorded (refused by default)"],
};

export const EXPORT_FLAGS: FlagTable = {
  "data-dir": ["DIR", "a corral member's data dir (read only; its server may be running)"],
  "zookeeper-data-dir": ["DIR", "ZooKeeper's dataDir to write version-2/snapshot.<zxid> into; it must hold no ZooKeeper data yet"],
};

export async function runImport(flags: Record<string, string>, io: ToolIo): Promise<void> {
  const zookeeperDir = required(flags, "zookeeper-data-dir");
  const logDir = flags["zookeeper-data-log-dir"];
  const dataDir = required(flags, "data-dir");
  await checkDataDirFree(dataDir);
  const recovered = await recoverZooKeeperDataDir({ dataDir: zookeeperDir, ...(logDir === undefined ? {} : { dataLogDir: logDir }) });
  const { tree } = recovered;
  const mismatch = tree.digestMismatches[0];
  if (mismatch !== undefined && flags["accept-digest-mismatch"] !== "true") {
    throw new ZooKeeperDataError(
      zookeeperDir,
      `the tree replayed to zxid ${hex64(mismatch.zxid)} has digest ${mismatch.computed}, ZooKeeper recorded ${mismatch.recorded} ` +
        `(${tree.digestMismatches.length} of ${tree.digestsCompared} digests differ): nothing imported (--accept-digest-mismatch to import anyway)`,
    );
  }
  const image = corralImageOf(tree);
  const corralTree = treeFromImage(image.nodes, image.sessions, image.lastProcessedZxid);
  const epoch = epochOf(image.lastProcessedZxid);
  const epochs = { accepted: Math.max(epoch, recovered.acceptedEpoch ?? 0), current: Math.max(epoch, recovered.currentEpoch ?? 0) };
  await layDownDataDir(dataDir, corralTree, epochs);
  const from =
    recovered.snapshot === undefined
      ? "no snapshot"
      : `${recovered.snapshot.file} (${recovered.snapshot.compression === "none" ? "plain" : recovered.snapshot.compression})`;
  const lines = [
    `imported ZooKeeper's tree at zxid ${formatZxid(image.lastProcessedZxid)} into ${dataDir}: ${corralTree.nodeCount()} znodes, ${corralTree.sessions.size} sessions`,
    `  from ${from}, then ${recovered.txnsReplayed} txns from ${recovered.logFiles.length} log files`,
    `  digests compared: ${tree.digestsCompared}, differing: ${tree.digestMismatches.length}; epochs: accepted ${epochs.accepted}, current ${epochs.current}`,
    ...recovered.skippedSnapshots.map((s) => `  skipped a newer snapshot ZooKeeper would skip too: ${s.reason}`),
    ...(recovered.deadSessionsKilled.length === 0
      ? []
      : [`  ephemerals of ${recovered.deadSessionsKilled.length} sessions no longer known were dropped, as ZooKeeper drops them when it loads`]),
  ];
  io.out(lines.join("\n") + "\n");
}

export async function runExport(flags: Record<string, string>, io: ToolIo): Promise<void> {
  const dataDir = required(flags, "data-dir");
  const out = resolve(required(flags, "zookeeper-data-dir"));
  const versionDir = join(out, VERSION_DIR);
  const existing = await readdir(versionDir).catch(() => [] as string[]);
  if (existing.some((name) => name.startsWith("snapshot.") || name.startsWith("log."))) {
    throw new ConfigError("zookeeper-data-dir", `${versionDir} holds ZooKeeper data already: export writes only where there is none`);
  }
  const { tree } = await readDataDir(dataDir);
  const image = zookeeperImageOf(tree);
  const bytes = encodeZooKeeperSnapshot(image);
  await mkdir(versionDir, { recursive: true });
  const name = `snapshot.${image.zxid.toString(16)}`;
  const temp = join(versionDir, `.${name}.tmp-${process.pid}`);
  try {
    const handle = await open(temp, "wx");
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, join(versionDir, name));
    await fsyncDirectory(versionDir);
  } finally {
    await unlink(temp).catch(() => undefined);
  }
  let ttlNodes = 0;
  tree.walk((_path, node) => {
    if (node.stat.ephemeralOwner !== 0n && ownerKind(node.stat.ephemeralOwner) === "ttl") ttlNodes += 1;
  });
  io.out(`exported zxid ${formatZxid(tree.lastProcessedZxid)} (${tree.nodeCount()} znodes, ${tree.sessions.size} sessions) to ${join(versionDir, name)}\n`);
  if (ttlNodes > 0) {
    io.out(
      `  it holds ${ttlNodes} TTL nodes: start ZooKeeper with -Dzookeeper.extendedTypesEnabled=true, or it takes them for ephemerals of an unknown session and drops them\n`,
    );
  }
}
