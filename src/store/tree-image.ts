/**
 * A tree as a list of nodes, for trees that come from outside corral's own log and snapshots: a
 * ZooKeeper data dir turned into corral's (corral import), a backup restored with parts replaced
 * (corral restore), and the other way for readers of a whole tree (export, dump). The list is
 * layout-free — paths, data, ACLs and stats — so it holds whatever shape the tree keeps in memory.
 *
 * Stats are in the tree's own convention, as `DataTree.getNode(path).stat` shows them: cversion as
 * a ZooKeeper client sees it (child creates and deletes), ephemeralOwner raw (session id,
 * CONTAINER_OWNER or a ttlOwner()). dataLength and numChildren follow from the data and the list.
 */
import { pathProblem } from "../common/paths.js";
import { ZkError } from "../common/errors.js";
import { DataTree, emptyChildren, type SessionRecord, type ZNode } from "./data-tree.js";
import { ownerKind, PERSISTENT_OWNER, type Acl, type Stat } from "./types.js";

export interface NodeImage {
  path: string;
  data: Uint8Array;
  acl: readonly Acl[];
  stat: Omit<Stat, "dataLength" | "numChildren">;
}

/**
 * Builds a tree from `nodes`, listed parents before children with the root ("/") first.
 * Throws ZkError("MARSHALLINGERROR") naming the node, when the list is not a tree: a path ZooKeeper
 * would refuse, a node before its parent, a path twice, a child under an ephemeral.
 */
export function treeFromImage(nodes: Iterable<NodeImage>, sessions: Iterable<readonly [bigint, SessionRecord]>, lastProcessedZxid: number): DataTree {
  const built = new Map<string, ZNode>();
  for (const image of nodes) {
    const path = image.path;
    const problem = pathProblem(path);
    if (problem !== undefined) throw new ZkError("MARSHALLINGERROR", `node ${JSON.stringify(path)}: ${problem}`, path);
    if (built.has(path)) throw new ZkError("MARSHALLINGERROR", `node ${path} is listed twice`, path);
    if (path === "/") {
      if (image.stat.ephemeralOwner !== PERSISTENT_OWNER) throw new ZkError("MARSHALLINGERROR", "the root has an owner", path);
    } else {
      if (built.size === 0) throw new ZkError("MARSHALLINGERROR", "the root must come first", path);
      const slash = path.lastIndexOf("/");
      const parentPath = slash === 0 ? "/" : path.slice(0, slash);
      const parent = built.get(parentPath);
      if (parent === undefined) throw new ZkError("MARSHALLINGERROR", `node ${path} comes before its parent`, path);
      const parentOwner = parent.stat.ephemeralOwner;
      if (parentOwner !== PERSISTENT_OWNER && ownerKind(parentOwner) === "ephemeral") {
        throw new ZkError("MARSHALLINGERROR", `node ${path} is the child of an ephemeral`, path);
      }
      if (parent.children.size === 0) parent.children = new Set();
      parent.children.add(path.slice(slash + 1));
      parent.stat.numChildren += 1;
    }
    const stat: Stat = { ...image.stat, dataLength: image.data.length, numChildren: 0 };
    built.set(path, { data: image.data, acl: image.acl as Acl[], stat, children: emptyChildren() });
  }
  if (!built.has("/")) throw new ZkError("MARSHALLINGERROR", "the tree has no root");
  return DataTree.restore(built, new Map(sessions), lastProcessedZxid);
}

/** Every node of `tree`, parents before children (siblings sorted), as treeFromImage takes them, with its child count. */
export function imageOfTree(tree: DataTree): (NodeImage & { numChildren: number })[] {
  const nodes: (NodeImage & { numChildren: number })[] = [];
  tree.walk((path, node) => {
    const { dataLength: _, numChildren, ...stat } = node.stat;
    nodes.push({ path, data: node.data, acl: node.acl, stat, numChildren });
  });
  return nodes;
}
