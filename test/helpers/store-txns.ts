/**
 * A tiny stand-in for prep when testing the store: stamps txns with consecutive zxids and times
 * and computes the resolved fields (parentCversion, versions) from the tree, as prep would.
 * The n-th txn of a script (n = 1, 2, …) carries zxid `Z(n)` and time `T(n)`.
 */
import { DataTree, type ApplyOutcome } from "../../src/store/data-tree.js";
import { makeZxid } from "../../src/store/zxid.js";
import { OPEN_ACL_UNSAFE, PERSISTENT_OWNER, type Acl, type CreateTxn, type Txn, type TxnBody } from "../../src/store/types.js";

export const EPOCH = 1;
export const Z = (n: number): number => makeZxid(EPOCH, n);
export const T = (n: number): number => 1_700_000_000_000 + n * 1000;

export const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

export function parentPathOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash === 0 ? "/" : path.slice(0, slash);
}

export class TxnScript {
  /** Txns stamped so far: the next one is number `count + 1`. */
  count = 0;

  constructor(readonly tree: DataTree = new DataTree()) {}

  /** Stamps the next zxid and time on `body`. */
  txn(body: TxnBody, sessionId = 0n): Txn {
    this.count++;
    return { header: { sessionId, cxid: this.count, zxid: Z(this.count), timeMs: T(this.count) }, body };
  }

  apply(body: TxnBody, sessionId = 0n): ApplyOutcome {
    return this.tree.apply(this.txn(body, sessionId));
  }

  /** A create body resolved against the tree as it is now (not for second creates under one parent in a multi). */
  createBody(path: string, options: { data?: Uint8Array; owner?: bigint; acl?: Acl[] } = {}): CreateTxn {
    const parent = this.tree.getNode(parentPathOf(path));
    if (parent === undefined) throw new Error(`test setup: no parent for ${path}`);
    return {
      type: "create",
      path,
      data: options.data ?? new Uint8Array(0),
      acl: options.acl ?? (OPEN_ACL_UNSAFE as Acl[]),
      ephemeralOwner: options.owner ?? PERSISTENT_OWNER,
      parentCversion: parent.stat.cversion + 1,
    };
  }

  create(path: string, options: { data?: Uint8Array; owner?: bigint; acl?: Acl[] } = {}): ApplyOutcome {
    return this.apply(this.createBody(path, options), options.owner ?? 0n);
  }

  delete(path: string): ApplyOutcome {
    return this.apply({ type: "delete", path });
  }

  setData(path: string, data: Uint8Array): ApplyOutcome {
    return this.apply({ type: "setData", path, data, version: this.stat(path).version + 1 });
  }

  setAcl(path: string, acl: Acl[]): ApplyOutcome {
    return this.apply({ type: "setAcl", path, acl, aversion: this.stat(path).aversion + 1 });
  }

  createSession(sessionId: bigint, timeoutMs = 10_000, password: Uint8Array = bytes("pw")): ApplyOutcome {
    return this.apply({ type: "createSession", timeoutMs, password }, sessionId);
  }

  closeSession(sessionId: bigint): ApplyOutcome {
    return this.apply({ type: "closeSession" }, sessionId);
  }

  error(err: number, sessionId = 0n): ApplyOutcome {
    return this.apply({ type: "error", err }, sessionId);
  }

  private stat(path: string) {
    const node = this.tree.getNode(path);
    if (node === undefined) throw new Error(`test setup: no node ${path}`);
    return node.stat;
  }
}

/** One random step of a workload, interpreted against the current tree by `applyIntent`. */
export interface Intent {
  kind:
    | "create"
    | "createEphemeral"
    | "createContainer"
    | "createTtl"
    | "delete"
    | "setData"
    | "setAcl"
    | "createSession"
    | "closeSession"
    | "multi"
    | "failedMulti"
    | "error";
  /** Picks a node or session among the candidates (modulo their count). */
  pick: number;
  name: string;
  data: Uint8Array;
  session: number;
}

const SESSION_POOL = [0x11n, 0x22n, -0x33n, 0x0100_0000_0000_0044n];

function candidates(tree: DataTree, keep: (path: string) => boolean): string[] {
  const paths: string[] = [];
  tree.walk((path) => {
    if (path !== "/zookeeper" && !path.startsWith("/zookeeper/") && keep(path)) paths.push(path);
  });
  return paths;
}

/**
 * Turns an intent into a valid txn for the tree as it is (what prep would decide) and applies it.
 * Intents that do not fit the tree (no candidate, name taken) become error txns.
 */
export function applyIntent(script: TxnScript, intent: Intent): ApplyOutcome {
  const tree = script.tree;
  const session = SESSION_POOL[intent.session % SESSION_POOL.length]!;
  const isEphemeral = (path: string): boolean => {
    const owner = tree.getNode(path)!.stat.ephemeralOwner;
    return SESSION_POOL.includes(owner);
  };
  const pickFrom = (paths: string[]): string | undefined => (paths.length === 0 ? undefined : paths[intent.pick % paths.length]);
  const childPath = (parent: string): string => (parent === "/" ? "/" : parent + "/") + intent.name;
  switch (intent.kind) {
    case "create":
    case "createEphemeral":
    case "createContainer":
    case "createTtl": {
      const parent = pickFrom(candidates(tree, (path) => !isEphemeral(path)));
      if (parent === undefined) return script.error(-101);
      const path = childPath(parent);
      if (tree.getNode(path) !== undefined) return script.error(-110);
      if (intent.kind === "createEphemeral" && !tree.sessions.has(session)) return script.error(-112);
      const owner =
        intent.kind === "createEphemeral"
          ? session
          : intent.kind === "createContainer"
            ? -(1n << 63n)
            : intent.kind === "createTtl"
              ? BigInt.asIntN(64, (0xffn << 56n) | BigInt(intent.pick % 100_000))
              : 0n;
      const acl: Acl[] = intent.pick % 3 === 0 ? [{ perms: intent.pick % 32, id: { scheme: "digest", id: intent.name } }] : (OPEN_ACL_UNSAFE as Acl[]);
      return script.create(path, { data: intent.data, owner, acl });
    }
    case "delete": {
      const path = pickFrom(candidates(tree, (p) => p !== "/" && tree.getNode(p)!.children.size === 0));
      return path === undefined ? script.error(-101) : script.delete(path);
    }
    case "setData": {
      const path = pickFrom(candidates(tree, (p) => p !== "/"));
      return path === undefined ? script.error(-101) : script.setData(path, intent.data);
    }
    case "setAcl": {
      const path = pickFrom(candidates(tree, (p) => p !== "/"));
      const acl: Acl[] = [{ perms: intent.pick % 32, id: { scheme: "ip", id: `10.0.0.${intent.pick % 256}` } }];
      return path === undefined ? script.error(-101) : script.setAcl(path, acl);
    }
    case "createSession":
      if (tree.sessions.has(session)) return script.error(-110);
      return script.createSession(session, 1000 + (intent.pick % 100_000), intent.data);
    case "closeSession":
      if (!tree.sessions.has(session)) return script.error(-112);
      return script.closeSession(session);
    case "multi": {
      const target = pickFrom(candidates(tree, (p) => p !== "/"));
      const parent = pickFrom(candidates(tree, (path) => !isEphemeral(path)));
      if (target === undefined || parent === undefined || tree.getNode(childPath(parent)) !== undefined) return script.error(-110);
      const create = script.createBody(childPath(parent), { data: intent.data });
      const version = tree.getNode(target)!.stat.version + 1;
      return script.apply({
        type: "multi",
        ops: [{ type: "check", path: target, version: version - 1 }, { type: "setData", path: target, data: intent.data, version }, create],
      });
    }
    case "failedMulti":
      return script.apply({
        type: "multi",
        ops: [
          { type: "delete", path: "/anything" },
          { type: "error", err: -103 },
          { type: "error", err: -2 },
        ],
      });
    case "error":
      return script.error(-(intent.pick % 130));
  }
}
