/**
 * A workload that makes a ZooKeeper server log every kind of txn an import must replay —
 * persistent, ephemeral, sequential, container and TTL creates; world, digest and ip ACLs and
 * setACL; setData (null, text, binary); deletes; multis that commit and one that fails; sessions
 * that close (their ephemerals go) and sessions left open (their ephemerals stay); a quota — from
 * three clients at once, so that a snapshot is written while txns apply (fuzzy) — and the reader
 * that takes a whole tree through the ZooKeeper protocol, node by node, to compare two servers.
 *
 * node-zookeeper-client does the ordinary requests; it has no container or TTL create, so those
 * go through the bare jute client (the same records any client sends).
 */
import { generateDigest } from "../../src/common/digest.js";
import { CreateRequest, CreateTTLRequest, OpCode, type ACL } from "../../src/server/zk-wire/records.js";
import { JuteClient } from "./jute-client.js";
import { long, Nzk, zookeeper } from "./nzk.js";

/** The super user both servers are given (ZooKeeper's superDigest, corral's --super-digest). */
export const SUPER_AUTH = "super:corral-migration-test";
export const SUPER_DIGEST = generateDigest(SUPER_AUTH);
const ALICE = "alice:wonderland";

/** The session timeout the workload's sessions ask for: long enough to outlive a migration's restarts. */
export const WORKLOAD_SESSION_TIMEOUT_MS = 60_000;

const OPEN: ACL[] = [{ perms: 31, id: { scheme: "world", id: "anyone" } }];

export interface WorkloadResult {
  /** Sessions still open (the caller closes them); the ephemerals they own stay in the tree. */
  open: Nzk[];
  /** Their ids, with what each owns. */
  ephemerals: Map<string, string[]>;
}

/** Runs `rounds` rounds of the workload against `servers` (one client each, round robin). */
export async function runZooKeeperWorkload(servers: readonly string[], rounds: number): Promise<WorkloadResult> {
  const at = (i: number) => servers[i % servers.length]!;
  const [c1, c2, c3] = await Promise.all([0, 1, 2].map((i) => Nzk.connect(at(i), { sessionTimeoutMs: WORKLOAD_SESSION_TIMEOUT_MS })));
  c1!.addAuthInfo("digest", ALICE);
  const a = c1!;
  const b = c2!;
  const c = c3!;
  for (const path of ["/app", "/app/seq", "/app/live", "/app/acl", "/app/containers", "/app/ttl", "/app/multi", "/app/bin"]) {
    await a.create(path, Buffer.from(path));
  }
  await a.create("/app/config", null);
  const aliceAcl = new zookeeper.ACL(31, new zookeeper.Id("digest", generateDigest(ALICE)));
  await a.create("/app/acl/digest", Buffer.from("alice's"), { acls: [aliceAcl, new zookeeper.ACL(1, zookeeper.Id.ANYONE_ID_UNSAFE)] });
  await a.create("/app/acl/ip", Buffer.from("loopback"), { acls: [new zookeeper.ACL(31, new zookeeper.Id("ip", "127.0.0.1"))] });
  await a.create("/app/acl/read-only", Buffer.from("ro"), { acls: zookeeper.ACL.READ_ACL_UNSAFE });
  await a.create("/app/acl/changed", Buffer.from("acl changes"));
  await a.setACL("/app/acl/changed", [aliceAcl]);
  await a.setACL("/app/acl/changed", [aliceAcl, new zookeeper.ACL(3, new zookeeper.Id("ip", "127.0.0.0/8"))]);
  // A quota on /app/seq: its stats node is kept by the tree as the subtree changes.
  await a.create("/zookeeper/quota/app", null);
  await a.create("/zookeeper/quota/app/seq", null);
  await a.create("/zookeeper/quota/app/seq/zookeeper_limits", Buffer.from("count=1000,bytes=-1"));
  await a.create("/zookeeper/quota/app/seq/zookeeper_stats", Buffer.from("count=0,bytes=0"));

  const jute = await JuteClient.connect(at(0), { timeoutMs: WORKLOAD_SESSION_TIMEOUT_MS });
  const checked = (path: string) => (reply: { header: { err: number } }) => {
    if (reply.header.err !== 0) throw new Error(`create ${path} failed with ${reply.header.err}`);
  };
  for (let i = 0; i < 3; i++) {
    const path = `/app/containers/c${i}`;
    checked(path)(await jute.request(OpCode.createContainer, CreateRequest, { path, data: Buffer.from(path), acl: OPEN, flags: 4 }));
  }
  await a.create("/app/containers/c0/inside", Buffer.from("keeps c0"));
  checked("/app/ttl/t0")(await jute.request(OpCode.createTTL, CreateTTLRequest, { path: "/app/ttl/t0", data: null, acl: OPEN, flags: 5, ttl: 3_600_000n }));
  checked("/app/ttl/seq-")(
    await jute.request(OpCode.createTTL, CreateTTLRequest, { path: "/app/ttl/seq-", data: Buffer.from("ttl"), acl: OPEN, flags: 6, ttl: 7_200_000n }),
  );
  await jute.close();

  const gone = await Nzk.connect(at(1), { sessionTimeoutMs: WORKLOAD_SESSION_TIMEOUT_MS });
  await gone.create("/app/live/gone-1", null, { mode: zookeeper.CreateMode.EPHEMERAL });
  await gone.create("/app/live/gone-2", Buffer.from("x"), { mode: zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL });
  await gone.close();

  const seq: string[] = [];
  for (let round = 0; round < rounds; round++) {
    await Promise.all([
      (async () => {
        for (let i = 0; i < 5; i++) await a.setData("/app/config", Buffer.from(`config ${round}.${i}`));
        for (let i = 0; i < 4; i++)
          seq.push(await a.create("/app/seq/item-", Buffer.from(`item ${round}.${i}`), { mode: zookeeper.CreateMode.PERSISTENT_SEQUENTIAL }));
        for (const path of seq.splice(0, 2)) await a.remove(path);
        await a.setData("/app/acl/digest", Buffer.from(`alice ${round}`));
      })(),
      (async () => {
        await b.create(`/app/live/e${round}-`, Buffer.from("alive"), { mode: zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL });
        const { error } = await b.multi((txn) =>
          txn
            .create(`/app/multi/r${round}`, Buffer.from("made in a multi"))
            .setData(`/app/multi/r${round}`, Buffer.from("changed in the same multi"))
            .check("/app/multi"),
        );
        if (error) throw error;
        if (round > 0) {
          const { error: removeError } = await b.multi((txn) => txn.remove(`/app/multi/r${round - 1}`).create(`/app/multi/gone${round}`, null));
          if (removeError) throw removeError;
        }
        // Fails on its second op: logged as an error txn that changes nothing.
        const failed = await b.multi((txn) => txn.create(`/app/multi/never${round}`, null).check("/app/multi", 12345));
        if (failed.error === undefined) throw new Error("a multi with a wrong version check succeeded");
      })(),
      (async () => {
        await c.create(`/app/tmp${round}`, Buffer.from([0, 1, 2, 255, 254, round]));
        await c.setData(`/app/tmp${round}`, Buffer.alloc(0));
        if (round % 2 === 1) await c.remove(`/app/tmp${round}`);
        await c.setData("/app/bin", Buffer.from(Array.from({ length: 64 }, (_, i) => (i * 37 + round) & 0xff)));
        await c.create(`/app/containers/c1/x${round}`, null);
        if (round > 0) await c.remove(`/app/containers/c1/x${round - 1}`);
      })(),
    ]);
  }
  const ephemerals = new Map<string, string[]>();
  const live = (await b.getChildren("/app/live")).children.sort().map((name) => `/app/live/${name}`);
  ephemerals.set(long(b.sessionId).toString(16), live);
  return { open: [a, b, c], ephemerals };
}

/** One znode as a ZooKeeper client reads it: data (base64, or null), ACL and every Stat field. */
export interface ZnodeView {
  data: string | null;
  acl: string[];
  stat: Record<string, string>;
}

/** Paths each server writes for itself (its membership): left out of comparisons. */
const OWN_PATHS = new Set(["/zookeeper/config"]);

/** Every znode of the tree at `server`, read by the super user; `/zookeeper/config` left out. */
export async function readZnodes(server: string, superAuth = SUPER_AUTH): Promise<Map<string, ZnodeView>> {
  const reader = await Nzk.connect(server, { sessionTimeoutMs: 10_000 });
  reader.addAuthInfo("digest", superAuth);
  try {
    const nodes = new Map<string, ZnodeView>();
    const pending = ["/"];
    for (let path = pending.pop(); path !== undefined; path = pending.pop()) {
      const { data, stat } = await reader.getData(path);
      const { acls } = await reader.getACL(path);
      if (!OWN_PATHS.has(path)) {
        nodes.set(path, {
          data: data === undefined || data === null ? null : data.toString("base64"),
          acl: acls.map((entry) => `${entry.id.scheme}:${entry.id.id}:${entry.permission}`),
          stat: {
            czxid: long(stat.czxid).toString(16),
            mzxid: long(stat.mzxid).toString(16),
            pzxid: long(stat.pzxid).toString(16),
            ctime: long(stat.ctime).toString(),
            mtime: long(stat.mtime).toString(),
            version: String(stat.version),
            cversion: String(stat.cversion),
            aversion: String(stat.aversion),
            ephemeralOwner: long(stat.ephemeralOwner).toString(16),
            dataLength: String(stat.dataLength),
            numChildren: String(stat.numChildren),
          },
        });
      }
      const { children } = await reader.getChildren(path);
      for (const child of children) pending.push(path === "/" ? `/${child}` : `${path}/${child}`);
    }
    return nodes;
  } finally {
    await reader.close();
  }
}

/** The number a parent's next sequential child gets, from its stat: creates = (cversion + numChildren) / 2. */
export function nextSequentialNumber(view: ZnodeView): number {
  return (Number(view.stat["cversion"]) + Number(view.stat["numChildren"])) / 2;
}

/** Differences between two trees read by readZnodes, one line each (empty when equal). */
export function treeDifferences(expected: Map<string, ZnodeView>, actual: Map<string, ZnodeView>): string[] {
  const lines: string[] = [];
  for (const [path, want] of expected) {
    const got = actual.get(path);
    if (got === undefined) {
      lines.push(`${path}: missing`);
      continue;
    }
    if (got.data !== want.data) lines.push(`${path}: data ${got.data} != ${want.data}`);
    if (got.acl.join(",") !== want.acl.join(",")) lines.push(`${path}: acl ${got.acl.join(",")} != ${want.acl.join(",")}`);
    for (const [field, value] of Object.entries(want.stat)) if (got.stat[field] !== value) lines.push(`${path}: ${field} ${got.stat[field]} != ${value}`);
  }
  for (const path of actual.keys()) if (!expected.has(path)) lines.push(`${path}: not expected`);
  return lines;
}
