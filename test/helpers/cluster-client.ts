/**
 * What the cluster integration tests do through the SDK: connect to one server, read a subtree as a
 * server sees it, write across a failover, wait for the servers to agree on a leader, and read the
 * leader's structured sync-mode lines.
 */
import { Client, ZkError } from "../../src/index.js";
import type { ClusterProcess } from "./cluster-process.js";
import { waitFor } from "./wait.js";

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

export async function connectTo(cluster: ClusterProcess, id: number): Promise<Client> {
  return Client.connect(cluster.server(id).connectString, { sessionTimeoutMs: 4_000, connectTimeoutMs: 30_000 });
}

/**
 * The children of `path` once this session's server has applied every write committed before the
 * call: a read that checks what other sessions did must not run on a server still catching up.
 */
export async function syncedChildren(client: Client, path: string): Promise<string[]> {
  await client.sync(path);
  return client.getChildren(path);
}

/** Every node under `root` with its data, as one server sees it after a sync. */
export async function treeAt(client: Client, root: string): Promise<Map<string, string>> {
  await client.sync(root);
  const nodes = new Map<string, string>();
  const visit = async (path: string): Promise<void> => {
    nodes.set(path, text((await client.getData(path)).data));
    for (const child of (await client.getChildren(path)).sort()) await visit(`${path}/${child}`);
  };
  await visit(root);
  return nodes;
}

/** The subtree under `root` as each of `ids` sees it, each through its own short-lived session. */
export async function treesAt(cluster: ClusterProcess, ids: readonly number[], root: string): Promise<Map<string, string>[]> {
  return Promise.all(
    ids.map(async (id) => {
      const client = await connectTo(cluster, id);
      try {
        return await treeAt(client, root);
      } finally {
        await client.close();
      }
    }),
  );
}

/**
 * A create that survives a leader change: on CONNECTIONLOSS it waits for the client to reconnect
 * and tries again; NODEEXISTS on a retry means the lost attempt had in fact been applied.
 */
export async function createSurvivingFailover(client: Client, path: string, data: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (let attempt = 0; ; attempt++) {
    try {
      await client.create(path, data);
      return;
    } catch (error) {
      if (error instanceof ZkError && error.code === "NODEEXISTS" && attempt > 0) return;
      if (!(error instanceof ZkError && error.code === "CONNECTIONLOSS") || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** The leader every running server agrees on (other than `except`); on giving up, prints what each server said of itself. */
export async function waitForLeader(cluster: ClusterProcess, except?: number): Promise<number> {
  try {
    return await waitFor(
      "an agreed leader",
      () => {
        const leader = cluster.agreedLeader();
        return leader !== undefined && leader !== except ? leader : undefined;
      },
      30_000,
    );
  } catch (error) {
    // Say what each server said of itself: the only way to read a failure on a CI machine.
    for (const [id, server] of cluster.servers) {
      const lines = server.stderr.split("\n").filter((l) => /role changed|stepped down|rror|syncMode/.test(l));
      process.stderr.write(`server ${id} (running: ${server.running}):\n  ${lines.slice(-12).join("\n  ")}\n`);
    }
    throw error;
  }
}

export interface SyncModeLine {
  learner: number;
  mode: "DIFF" | "TRUNC" | "SNAP";
  reason: string;
}

/** The sync modes a leader logged (its "zab syncMode" lines) in `stderr`, oldest first. */
export function syncModeLines(stderr: string): SyncModeLine[] {
  const lines: SyncModeLine[] = [];
  for (const line of stderr.split("\n")) {
    if (!line.includes('"zab syncMode"')) continue;
    try {
      lines.push(JSON.parse(line) as SyncModeLine);
    } catch {
      // a torn last line: the next read sees it whole
    }
  }
  return lines;
}
