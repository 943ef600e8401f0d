/**
 * Between a ZooKeeper tree and corral's: the same znodes, data, ACLs and stats, in each side's
 * convention. ZooKeeper stores cversion as the count of child creates and shows a client
 * 2 × creates − numChildren; corral stores what the client sees. Either way a parent's next
 * sequential number, `creates`, is kept.
 *
 * /zookeeper/config is each server's own (ZooKeeper writes its membership there at every start,
 * corral its own): an import gives the node corral's fresh form, so that corral's membership applies;
 * an export writes corral's, which ZooKeeper overwrites as it loads.
 */
import { NULL_DATA } from "../common/znode.js";
import { hex64 } from "../common/hex.js";
import { DataTree, sequenceNumberOf, type SessionRecord } from "../store/data-tree.js";
import { imageOfTree, type NodeImage } from "../store/tree-image.js";
import { ZooKeeperDataError } from "./errors.js";
import { zookeeperSessionPassword } from "./session-password.js";
import type { ZooKeeperSnapshotImage, ZooKeeperStat } from "./snapshot-file.js";
import { DIGEST_VERSION, nodeDigest, type ZooKeeperTree } from "./zookeeper-tree.js";

const CONFIG = "/zookeeper/config";

export interface CorralImage {
  nodes: NodeImage[];
  sessions: [bigint, SessionRecord][];
  lastProcessedZxid: number;
}

/** corral's side of a recovered ZooKeeper tree. Throws ZooKeeperDataError for what corral cannot hold. */
export function corralImageOf(tree: ZooKeeperTree): CorralImage {
  const freshConfig = new DataTree().getNode(CONFIG)!;
  const nodes: NodeImage[] = [];
  let configSeen = false;
  for (const { path, node, childCount } of tree.walk()) {
    if (path === CONFIG) {
      configSeen = true;
      nodes.push({ path, data: freshConfig.data, acl: freshConfig.acl, stat: { ...freshConfig.stat } });
      continue;
    }
    const s = node.stat;
    const numChildren = path === "/zookeeper" && !tree.has(CONFIG) ? childCount + 1 : childCount;
    nodes.push({
      path,
      data: node.data ?? NULL_DATA,
      acl: node.acl,
      stat: {
        czxid: zxidOf(s.czxid, path, "czxid"),
        mzxid: zxidOf(s.mzxid, path, "mzxid"),
        pzxid: zxidOf(s.pzxid, path, "pzxid"),
        ctime: timeOf(s.ctime, path, "ctime"),
        mtime: timeOf(s.mtime, path, "mtime"),
        version: s.version,
        cversion: (s.cversion * 2 - numChildren) | 0,
        aversion: s.aversion,
        ephemeralOwner: s.ephemeralOwner,
      },
    });
  }
  if (!configSeen) {
    // A 3.4 tree has no /zookeeper/config; corral's always does (after /zookeeper, counted above).
    const at = nodes.findIndex((node) => node.path === "/zookeeper");
    nodes.splice(at + 1, 0, { path: CONFIG, data: freshConfig.data, acl: freshConfig.acl, stat: { ...freshConfig.stat } });
  }
  const sessions: [bigint, SessionRecord][] = [];
  for (const [id, timeoutMs] of tree.sessions) {
    if (timeoutMs < 0) throw new ZooKeeperDataError("", `session ${hex64(id)} has the timeout ${timeoutMs}`);
    sessions.push([id, { timeoutMs, password: zookeeperSessionPassword(id) }]);
  }
  return { nodes, sessions, lastProcessedZxid: zxidOf(tree.zxid, "", "last zxid") };
}

/** ZooKeeper's side of a corral tree: what `encodeZooKeeperSnapshot` writes, with the tree digest. */
export function zookeeperImageOf(tree: DataTree): ZooKeeperSnapshotImage & { zxid: bigint } {
  const nodes = imageOfTree(tree).map((image) => {
    const s = image.stat;
    const stat: ZooKeeperStat = {
      czxid: BigInt(s.czxid),
      mzxid: BigInt(s.mzxid),
      ctime: BigInt(s.ctime),
      mtime: BigInt(s.mtime),
      version: s.version,
      cversion: sequenceNumberOf({ cversion: s.cversion, numChildren: image.numChildren }),
      aversion: s.aversion,
      ephemeralOwner: s.ephemeralOwner,
      pzxid: BigInt(s.pzxid),
    };
    return { path: image.path === "/" ? "" : image.path, data: image.data === NULL_DATA ? null : image.data, acl: image.acl, stat };
  });
  let digest = 0n;
  for (const node of nodes) digest = BigInt.asUintN(64, digest + nodeDigest(node.path, node));
  const zxid = BigInt(tree.lastProcessedZxid);
  const sessions = new Map<bigint, number>();
  for (const [id, record] of tree.sessions) sessions.set(id, record.timeoutMs);
  return { sessions, nodes, digest: { zxid, version: DIGEST_VERSION, digest: BigInt.asIntN(64, digest) }, zxid };
}

/** zxids are exact numbers in corral (epoch below 2^21): a larger one cannot be taken over. */
function zxidOf(value: bigint, path: string, field: string): number {
  if (value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new ZooKeeperDataError("", `${path === "" ? "" : `${path}: `}${field} ${hex64(value)} is beyond the zxids corral can hold (epoch 2^21 and up)`);
  }
  return Number(value);
}

function timeOf(value: bigint, path: string, field: string): number {
  if (value < BigInt(Number.MIN_SAFE_INTEGER) || value > BigInt(Number.MAX_SAFE_INTEGER))
    throw new ZooKeeperDataError("", `${path}: ${field} ${value} is not a time corral can hold`);
  return Number(value);
}
