/**
 * NamingService: cluster-unique increasing ids drawn from sequential znodes, and a registry that
 * binds names to addresses.
 */
import { hex64 } from "../common/hex.js";
import type { Client } from "../client/client.js";
import type { Stat } from "../client/types.js";
import { ZkError } from "../common/errors.js";
import {
  childPath,
  Deadline,
  deleteIfExists,
  deleteOwnEphemeral,
  ensurePath,
  isZkError,
  orIfNoNode,
  parentOf,
  protectedPrefix,
  retryOnConnectionLoss,
  sequenceOf,
  type WaitOptions,
  withDeadline,
} from "./common.js";

const ID_NODE_NAME = "id-";

/**
 * A cluster-unique id, greater than every id this session drew before. A persistent-sequential
 * node `<protected prefix>id-NNNNNNNNNN` is created under `path`, its sequence number is the id, and
 * the node is deleted at once (ids come from the parent's count of creates, which never goes back,
 * so deleting does not free the number). Never delete `path` itself while ids are drawn from it.
 *
 * Connection loss mid-create: the protected prefix lets the retry find the node it already made,
 * so a retry never takes a second number; an id may be lost (skipped), never duplicated. Abandoned
 * (timeout, abort): the node, if made, is deleted in the background. Session expiry: SESSIONEXPIRED.
 */
export async function nextId(client: Client, path: string, options: WaitOptions = {}): Promise<number> {
  const prefix = protectedPrefix();
  const created = await withDeadline(`nextId ${path}`, options, client, async (deadline) => {
    try {
      return await createSequentialOnce(client, path, prefix, deadline);
    } catch (error) {
      if (isZkError(error, "OPERATIONTIMEOUT")) void removeByPrefix(client, path, prefix);
      throw error;
    }
  });
  const id = sequenceOf(created);
  // The id is ours whatever happens to the node now. Only the session's end stops the delete; a
  // node it leaves behind is harmless garbage that takes no id.
  await deleteIfExists(client, created, new Deadline(`nextId cleanup ${created}`, {}, client)).catch(() => undefined);
  return id;
}

async function createSequentialOnce(client: Client, parent: string, prefix: string, deadline: Deadline): Promise<string> {
  const path = childPath(parent, `${prefix}${ID_NODE_NAME}`);
  for (;;) {
    deadline.check();
    try {
      return await deadline.race(client.create(path, "", { mode: "persistent-sequential" }));
    } catch (error) {
      if (isZkError(error, "NONODE")) {
        await retryOnConnectionLoss(client, deadline, () => ensurePath(client, parent));
        continue;
      }
      if (!isZkError(error, "CONNECTIONLOSS")) throw error;
    }
    const mine = await findByPrefix(client, parent, prefix, deadline);
    if (mine !== undefined) return mine;
  }
}

async function findByPrefix(client: Client, parent: string, prefix: string, deadline: Deadline): Promise<string | undefined> {
  // Sync first: after a lost answer the session may be on a server that has not applied our
  // create yet; a plain read there would miss it and the retry would make a second node.
  const children = await retryOnConnectionLoss(client, deadline, async () => {
    await client.sync(parent);
    return client.getChildren(parent);
  });
  const mine = children.find((child) => child.startsWith(prefix));
  return mine === undefined ? undefined : childPath(parent, mine);
}

/** Best effort, after an abandoned nextId: waits out a disconnection, gives up with the session. */
async function removeByPrefix(client: Client, parent: string, prefix: string): Promise<void> {
  await withDeadline(`nextId cleanup ${parent}`, {}, client, async (deadline) => {
    try {
      const mine = await findByPrefix(client, parent, prefix, deadline);
      if (mine !== undefined) await deleteIfExists(client, mine, deadline);
    } catch {
      // the session is gone: nothing more can be done from here
    }
  });
}

/**
 * Makes `path` hold `data` as a node of this session: creates it (parents too), or, when it exists
 * already and is ours — an ephemeral of this session, or a persistent node when `mode` is
 * persistent — overwrites its data. An ephemeral of another session (or a node of the other kind)
 * is refused with NODEEXISTS.
 *
 * This is the protected create for fixed-name nodes: after CONNECTIONLOSS the retry meets
 * NODEEXISTS and recognises its own ephemeral by `ephemeralOwner === client.sessionId`, so it
 * never mistakes another session's node for its own nor makes a second one.
 */
export async function bindNode(client: Client, path: string, data: Uint8Array | string, mode: "persistent" | "ephemeral", deadline: Deadline): Promise<Stat> {
  for (;;) {
    deadline.check();
    try {
      return (await retryOnConnectionLoss(client, deadline, () => client.createWithStat(path, data, { mode }))).stat;
    } catch (error) {
      if (isZkError(error, "NONODE")) {
        await retryOnConnectionLoss(client, deadline, () => ensurePath(client, parentOf(path)));
        continue;
      }
      if (!isZkError(error, "NODEEXISTS")) throw error;
    }
    const existing = await retryOnConnectionLoss(client, deadline, () => client.exists(path));
    if (existing === null) continue;
    const ours = mode === "ephemeral" ? existing.ephemeralOwner === client.sessionId : existing.ephemeralOwner === 0n;
    if (!ours) {
      const owner = existing.ephemeralOwner === 0n ? "a persistent node" : `an ephemeral of session ${hex64(existing.ephemeralOwner)}`;
      throw new ZkError("NODEEXISTS", `${path} is already ${owner}`, path);
    }
    try {
      return await retryOnConnectionLoss(client, deadline, () => client.setData(path, data, { version: existing.version }));
    } catch (error) {
      // Changed or deleted under us: look again.
      if (!isZkError(error, "BADVERSION") && !isZkError(error, "NONODE")) throw error;
    }
  }
}

export interface RegisterOptions extends WaitOptions {
  /** Bind for the life of this session only (an ephemeral node). Default: persistent. */
  ephemeral?: boolean;
}

/** Rejects names that are not one znode name. */
export function checkNodeName(what: string, name: string): void {
  if (typeof name !== "string" || name.length === 0 || name.includes("/") || name === "." || name === ".." || name.includes("\u0000")) {
    throw new ZkError("BADARGUMENTS", `${what} must be one non-empty znode name without "/", got ${JSON.stringify(name)}`);
  }
}

/**
 * Ids and names under one root: ids from `<path>/ids`, name bindings at `<path>/names/<name>`
 * holding the address as UTF-8.
 *
 * Guarantees: `nextId` as the function above (unique, increasing per session, none duplicated
 * across a lost connection). `register` binds or rebinds a name; an ephemeral binding lasts as long
 * as this session and vanishes when it expires (resolve then answers null); a binding held as an
 * ephemeral by another live session is refused with NODEEXISTS. `resolve` reads after a `sync`, so
 * it sees every binding committed before it was called.
 */
export class NamingService {
  /** Names this object bound as ephemerals: an abandoned re-register must not remove them. */
  private readonly ephemeralNames = new Set<string>();

  constructor(
    private readonly client: Client,
    readonly path: string,
  ) {}

  /** A number no other call on this path ever got, from 1 up (a sequential node's counter). */
  nextId(options: WaitOptions = {}): Promise<number> {
    return nextId(this.client, childPath(this.path, "ids"), options);
  }

  /** Binds `name` to `address` (or rebinds it); with `ephemeral`, only for the life of this session. */
  async register(name: string, address: string, options: RegisterOptions = {}): Promise<void> {
    checkNodeName("name", name);
    const path = this.nameNode(name);
    await withDeadline(`register ${name}`, options, this.client, async (deadline) => {
      try {
        await bindNode(this.client, path, address, options.ephemeral ? "ephemeral" : "persistent", deadline);
        if (options.ephemeral) this.ephemeralNames.add(name);
      } catch (error) {
        // Abandoned: an ephemeral this call may have made is removed (a persistent binding is a
        // plain registry write whose outcome the caller can read back with resolve).
        if (options.ephemeral && isZkError(error, "OPERATIONTIMEOUT") && !this.ephemeralNames.has(name)) {
          deleteOwnEphemeral(this.client, path).catch(() => undefined);
        }
        throw error;
      }
    });
  }

  /** The address bound to `name`, or null if none. */
  async resolve(name: string, options: WaitOptions = {}): Promise<string | null> {
    checkNodeName("name", name);
    const path = this.nameNode(name);
    return withDeadline(`resolve ${name}`, options, this.client, (deadline) =>
      retryOnConnectionLoss(this.client, deadline, async () => {
        await this.client.sync(path);
        const node = await orIfNoNode(this.client.getData(path), null);
        return node && Buffer.from(node.data).toString("utf8");
      }),
    );
  }

  /** Removes the binding of `name` (whoever made it); nothing to do if there is none. */
  async unregister(name: string, options: WaitOptions = {}): Promise<void> {
    checkNodeName("name", name);
    await deleteIfExists(this.client, this.nameNode(name), new Deadline(`unregister ${name}`, options, this.client));
    this.ephemeralNames.delete(name);
  }

  private nameNode(name: string): string {
    return childPath(childPath(this.path, "names"), name);
  }
}
