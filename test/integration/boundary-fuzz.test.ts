/**
 * Boundary fuzzing on live servers: fast-check generates *valid* requests at the edges of what a
 * server accepts — data of 0, 1, 1 MiB − 1, 1 MiB and 1 MiB + 1 bytes; paths around the length
 * limit; many and long children; up to 20,000 ACL entries; multis of 1,000 and 1,001 ops, wide and
 * deep — and sends them through both doors (the gRPC stream, bypassing the SDK's own checks, and
 * the ZooKeeper port) to a standalone server and to a follower of a three-voter cluster.
 *
 * Every answer must be what a model of the tree predicts, or the typed error the limits predict;
 * a ZooKeeper-port request above jute.maxbuffer must close that connection (as ZooKeeper does)
 * and nothing else; the process must survive; and a bystander session on another connection must
 * keep reading and writing. After each run the server's tree is compared with the model.
 *
 * The seed is fixed so that CI runs the same cases; CORRAL_FUZZ_SEED and CORRAL_FUZZ_RUNS change
 * them (a failure prints the seed and the shrunk command list, which replay it exactly).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { limits } from "../../src/common/constants.js";
import { ZkErrorCode } from "../../src/common/errors.js";
import { Client } from "../../src/index.js";
import { corralServiceDefinition } from "../../src/protocol/client-wire.js";
import type { Encodable, Request, Response } from "../helpers/proto-loader-wire.js";
import { JUTE_MAX_BUFFER_BYTES, JuteWriter } from "../../src/server/zk-wire/jute.js";
import {
  CreateRequest,
  decodeRecord,
  GetChildrenRequest,
  GetChildrenResponse,
  GetDataRequest,
  GetDataResponse,
  MultiRequest,
  OpCode,
  RequestHeader,
  SetDataRequest,
  type ACL,
  type JuteCodec,
} from "../../src/server/zk-wire/records.js";
import { ClusterProcess } from "../helpers/cluster-process.js";
import { waitForLeader } from "../helpers/cluster-client.js";
import { JuteClient, type JuteReply } from "../helpers/jute-client.js";
import { RawStream } from "../helpers/raw-session.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";

const MiB = 1024 * 1024;
/** proto-loader's encoder of a client frame: the exact bytes grpc-js would send. */
const SERIALIZE_CLIENT_FRAME = corralServiceDefinition()["Session"]!.requestSerialize as (frame: object) => Buffer;
const SEED = Number(process.env["CORRAL_FUZZ_SEED"] ?? 20261125);
const RUNS = Number(process.env["CORRAL_FUZZ_RUNS"] ?? 20);

type Door = "grpc" | "zk";

type Command =
  | { kind: "create"; door: Door; nameLength: number; dataBytes: number; aclEntries: number }
  | { kind: "setData"; door: Door; target: number; dataBytes: number }
  | { kind: "read"; door: Door; target: number }
  | { kind: "multi"; door: Door; shape: "wide" | "deep"; ops: number; nameLength: number };

const doorArb = fc.constantFrom<Door>("grpc", "zk");
const dataBytesArb = fc.oneof(fc.constantFrom(0, 1, MiB - 1, MiB, MiB + 1), fc.nat(4096));
/** Counted from the newest node: most often one of the last few, where the large and odd ones are. */
const targetArb = fc.oneof(fc.nat(2), fc.nat());
const commandArb: fc.Arbitrary<Command> = fc.oneof(
  fc.record({
    kind: fc.constant("create" as const),
    door: doorArb,
    nameLength: fc.oneof(fc.constantFrom(1, 255, 4_000, 4_100), fc.integer({ min: 1, max: 64 })),
    dataBytes: dataBytesArb,
    aclEntries: fc.oneof(fc.constantFrom(1, 300, 20_000), fc.integer({ min: 1, max: 20 })),
  }),
  fc.record({ kind: fc.constant("setData" as const), door: doorArb, target: targetArb, dataBytes: dataBytesArb }),
  fc.record({ kind: fc.constant("read" as const), door: doorArb, target: targetArb }),
  fc.record({
    kind: fc.constant("multi" as const),
    door: doorArb,
    shape: fc.constantFrom<"wide" | "deep">("wide", "deep"),
    ops: fc.oneof(fc.constantFrom(1, limits.multiOpsMax, limits.multiOpsMax + 1), fc.integer({ min: 2, max: 50 })),
    nameLength: fc.oneof(fc.constantFrom(1, 3, 200, 1_000), fc.integer({ min: 1, max: 12 })),
  }),
);

/** What the model knows of a node: the seed its bytes were filled from, their count, its children. */
interface ModelNode {
  dataSeed: number;
  dataBytes: number;
  children: Set<string>;
}

function fill(length: number, seed: number): Uint8Array {
  const data = new Uint8Array(length);
  for (let i = 0; i < length; i++) data[i] = (seed + i * 7) & 0xff;
  return data;
}

function sameData(actual: Uint8Array | null, node: ModelNode): boolean {
  const expected = fill(node.dataBytes, node.dataSeed);
  return actual !== null && Buffer.from(actual).equals(Buffer.from(expected));
}

interface AclEntry {
  perms: number;
  id: { scheme: string; id: string };
}

/** The ACL of a generated create: world:anyone first (later reads must pass), then distinct ip and digest ids. */
function aclOf(entries: number): AclEntry[] {
  const acl: AclEntry[] = [{ perms: 31, id: { scheme: "world", id: "anyone" } }];
  for (let i = 1; i < entries; i++) {
    acl.push(
      i % 2 === 0
        ? { perms: 1, id: { scheme: "ip", id: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` } }
        : { perms: 1, id: { scheme: "digest", id: `user${i}:${"A".repeat(27)}=` } },
    );
  }
  return acl;
}

/** A request's jute frame length (header included), to know whether the port will take it. */
function juteRequestBytes<T>(type: number, codec: JuteCodec<T>, body: T): number {
  const writer = new JuteWriter();
  RequestHeader.write(writer, { xid: 1, type });
  codec.write(writer, body);
  return writer.lengthBytes;
}

/** An answer's error code, or the connection closed / the request not sendable on that door. */
type Outcome = { err: number } | { closed: true };

/**
 * One fuzz target: a server to send to (through either door), and a bystander session that must
 * keep working on another connection, maybe another server.
 */
interface Target {
  grpcAddress: string;
  zkAddress: string;
  bystander: Client;
  alive(): boolean;
  logs(): string;
}

class Doors {
  private grpc: RawStream | undefined;
  private zk: JuteClient | undefined;
  private xid = 1;

  constructor(private readonly target: Target) {}

  /**
   * Sends a request on the gRPC stream, or answers "unsendable" for one whose message is above
   * the client stream's bound: grpc-js refuses to send it, so no server ever sees it (the SDK
   * refuses such a multi itself with BADARGUMENTS).
   */
  async grpcRequest(request: Encodable<Request>): Promise<Response | "unsendable"> {
    const framed = { request: { ...request, xid: this.xid++ } };
    if (SERIALIZE_CLIENT_FRAME(framed).byteLength > limits.messageBytesMax) return "unsendable";
    if (this.grpc === undefined) {
      this.grpc = RawStream.open(this.target.grpcAddress);
      await this.grpc.connect({ timeoutMs: 10_000 });
    }
    return this.grpc.request(framed.request);
  }

  /** Sends a jute request; a frame above jute.maxbuffer must close the connection, as ZooKeeper does. */
  async zkRequest<T>(type: number, codec: JuteCodec<T>, body: T): Promise<JuteReply | "closed"> {
    this.zk ??= await JuteClient.connect(this.target.zkAddress, { timeoutMs: 10_000 });
    const client = this.zk;
    const tooLarge = juteRequestBytes(type, codec, body) > JUTE_MAX_BUFFER_BYTES;
    try {
      const reply = await client.request(type, codec, body);
      assert.ok(!tooLarge, "a request above jute.maxbuffer was answered");
      return reply;
    } catch (error) {
      assert.ok(tooLarge, `the ZooKeeper port closed the connection on a request within jute.maxbuffer: ${String(error)}`);
      this.zk = undefined;
      return "closed";
    }
  }

  close(): void {
    this.grpc?.end();
    void this.zk?.close();
  }
}

/** Runs one generated command list against `target` and checks each answer against the model. */
async function runCommands(target: Target, run: number, commands: Command[]): Promise<void> {
  const root = `/fuzz-${run}`;
  const model = new Map<string, ModelNode>([[root, { dataSeed: 0, dataBytes: 0, children: new Set() }]]);
  await target.bystander.create(root, "");
  const doors = new Doors(target);
  let nameCounter = 0;
  const freshName = (length: number) => {
    const prefix = `${nameCounter++}-`;
    return prefix + "n".repeat(Math.max(1, length - prefix.length));
  };
  const newest = (back: number) => {
    const all = [...model.keys()];
    return all[all.length - 1 - (back % all.length)]!;
  };
  const pathLengthOk = (path: string) => path.length <= limits.pathLengthMax;

  try {
    for (const [step, command] of commands.entries()) {
      const where = `run ${run} step ${step} ${JSON.stringify(command)}`;
      switch (command.kind) {
        case "create": {
          const path = `${root}/${freshName(command.nameLength)}`;
          const seed = step + 1;
          const data = fill(command.dataBytes, seed);
          const acl = aclOf(command.aclEntries);
          const expected = !pathLengthOk(path) || command.dataBytes > limits.dataBytesMax ? ZkErrorCode.BADARGUMENTS : 0;
          const outcome = await create(doors, command.door, path, data, acl);
          if (!expectOutcome(outcome, expected, where)) break;
          if (expected === 0) {
            model.set(path, { dataSeed: seed, dataBytes: command.dataBytes, children: new Set() });
            model.get(root)!.children.add(path.slice(root.length + 1));
          }
          break;
        }
        case "setData": {
          const path = newest(command.target);
          const seed = 1_000 + step;
          const data = fill(command.dataBytes, seed);
          const expected = command.dataBytes > limits.dataBytesMax ? ZkErrorCode.BADARGUMENTS : 0;
          const outcome =
            command.door === "grpc"
              ? grpcOutcome(await doors.grpcRequest({ setData: { path, data, version: -1 } }))
              : zkOutcome(await doors.zkRequest(OpCode.setData, SetDataRequest, { path, data, version: -1 }));
          if (expectOutcome(outcome, expected, where) && expected === 0) {
            const node = model.get(path)!;
            node.dataSeed = seed;
            node.dataBytes = command.dataBytes;
          }
          break;
        }
        case "read": {
          const path = newest(command.target);
          await checkNode(doors, command.door, path, model.get(path)!, where);
          break;
        }
        case "multi": {
          const parent = `${root}/${freshName(command.nameLength)}`;
          const paths: string[] = [parent];
          for (let i = 1; i < command.ops; i++) {
            const previous = paths[i - 1]!;
            // A deep path stops growing once it is past the limit (every longer one is refused the
            // same way): 1,000 ever longer paths would be a 500 MB request the test itself chokes on.
            const deeper = previous.length > limits.pathLengthMax ? previous : `${previous}/${freshName(command.nameLength)}`;
            paths.push(command.shape === "wide" ? `${parent}/${freshName(command.nameLength)}` : deeper);
          }
          const expected = command.ops > limits.multiOpsMax || !paths.every(pathLengthOk) ? "failed" : "ok";
          const outcome = await multiCreate(doors, command.door, paths);
          // "closed": above the door's request bound (checked where it was sent), so not applied.
          if (outcome !== "closed") assert.equal(outcome, expected, `${where}: multi ${outcome}, expected ${expected}`);
          if (outcome === "ok") {
            for (const path of paths) {
              model.set(path, { dataSeed: 0, dataBytes: 0, children: new Set() });
              const slash = path.lastIndexOf("/");
              model.get(path.slice(0, slash))!.children.add(path.slice(slash + 1));
            }
          }
          break;
        }
      }
      assert.ok(target.alive(), `${where}: the server process exited\n${target.logs().slice(-3_000)}`);
    }

    // The bystander kept its session and can still write and read.
    const mark = `${run}:${commands.length}`;
    await target.bystander.setData("/bystander", mark);
    assert.equal(new TextDecoder().decode((await target.bystander.getData("/bystander")).data), mark);
    // The server's tree is the model's, read through the other client (sync first: it may be another server).
    await target.bystander.sync(root);
    for (const [path, node] of model) {
      const stat = await target.bystander.exists(path);
      assert.ok(stat !== null, `${path} is missing`);
      assert.equal(stat.dataLength, node.dataBytes, `${path} dataLength`);
      assert.equal(stat.numChildren, node.children.size, `${path} numChildren`);
    }
    assert.equal(await target.bystander.getAllChildrenNumber(root), model.size - 1, "no node beyond the model's");
  } finally {
    doors.close();
  }
}

async function create(doors: Doors, door: Door, path: string, data: Uint8Array, acl: AclEntry[]): Promise<Outcome> {
  if (door === "grpc") return grpcOutcome(await doors.grpcRequest({ create: { path, data, acl, mode: 0 } }));
  return zkOutcome(await doors.zkRequest(OpCode.create, CreateRequest, { path, data, acl, flags: 0 }));
}

async function multiCreate(doors: Doors, door: Door, paths: string[]): Promise<"ok" | "failed" | "closed"> {
  if (door === "grpc") {
    const response = await doors.grpcRequest({ multi: { ops: paths.map((path) => ({ create: { path, data: new Uint8Array(0), acl: [], mode: 0 } })) } });
    if (response === "unsendable") return "closed";
    return response.err === 0 && response.results.every((result) => result.err === 0) ? "ok" : "failed";
  }
  const open: ACL[] = [{ perms: 31, id: { scheme: "world", id: "anyone" } }];
  const reply = await doors.zkRequest(OpCode.multi, MultiRequest, {
    ops: paths.map((path) => ({ type: OpCode.create, request: { path, data: new Uint8Array(0), acl: open, flags: 0 } })),
  });
  if (reply === "closed") return "closed";
  if (reply.header.err !== 0) return "failed";
  // A failed multi answers err 0 with ErrorResults (type -1) in its body; a successful one has none.
  const results = decodeRecord(MultiRequestResultTypes, reply.body);
  return results.every((type) => type !== OpCode.error) ? "ok" : "failed";
}

/** Just the result types of a MultiResponse: enough to tell success from failure. */
const MultiRequestResultTypes: JuteCodec<number[]> = {
  write: () => assert.fail("read only"),
  read: (reader) => {
    const types: number[] = [];
    for (;;) {
      const type = reader.readInt();
      const done = reader.readBool();
      const err = reader.readInt();
      if (done) return types;
      types.push(type);
      switch (type) {
        case OpCode.create:
          reader.readUstring();
          break;
        case OpCode.error:
          void err;
          reader.readInt();
          break;
        default:
          assert.fail(`unexpected multi result type ${type}`);
      }
    }
  },
  minBytes: 9,
};

function grpcOutcome(response: Response | "unsendable"): Outcome {
  return response === "unsendable" ? { closed: true } : { err: response.err };
}

function zkOutcome(reply: JuteReply | "closed"): Outcome {
  return reply === "closed" ? { closed: true } : { err: reply.header.err };
}

/** Whether the command took effect; fails the test on an answer the limits do not predict. */
function expectOutcome(outcome: Outcome, expectedErr: number, where: string): boolean {
  if ("closed" in outcome) return false; // only for a frame above jute.maxbuffer, checked where it was sent
  assert.equal(outcome.err, expectedErr, `${where}: answered ${outcome.err}, expected ${expectedErr}`);
  return outcome.err === 0;
}

async function checkNode(doors: Doors, door: Door, path: string, node: ModelNode, where: string): Promise<void> {
  if (door === "grpc") {
    const data = await doors.grpcRequest({ getData: { path, watch: false } });
    assert.ok(data !== "unsendable" && data.err === 0, `${where}: getData`);
    assert.ok(sameData(data.data, node), `${where}: getData returned other bytes`);
    const children = await doors.grpcRequest({ getChildren: { path, watch: false } });
    assert.ok(children !== "unsendable" && children.err === 0, `${where}: getChildren`);
    assert.deepEqual(new Set(children.children), node.children, `${where}: children`);
    return;
  }
  const data = await doors.zkRequest(OpCode.getData, GetDataRequest, { path, watch: false });
  assert.ok(data !== "closed" && data.header.err === 0, `${where}: getData`);
  assert.ok(sameData(decodeRecord(GetDataResponse, data.body).data ?? new Uint8Array(0), node), `${where}: getData returned other bytes`);
  const children = await doors.zkRequest(OpCode.getChildren, GetChildrenRequest, { path, watch: false });
  assert.ok(children !== "closed" && children.header.err === 0, `${where}: getChildren`);
  assert.deepEqual(new Set(decodeRecord(GetChildrenResponse, children.body).children), node.children, `${where}: children`);
}

async function fuzz(target: Target, runs: number, seedOffset: number): Promise<void> {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(commandArb, { minLength: 1, maxLength: 10 }), async (commands) => {
      await runCommands(target, seedOffset + run++, commands);
    }),
    { seed: SEED + seedOffset, numRuns: runs, includeErrorInReport: true, endOnFailure: true },
  );
}

describe(`boundary fuzzing through both doors (seed ${SEED}, ${RUNS} runs per target)`, () => {
  describe("a standalone server", () => {
    let dir: Awaited<ReturnType<typeof makeTempDir>>;
    let server: ServerProcess;
    let bystander: Client;

    before(async () => {
      dir = await makeTempDir("corral-boundary-");
      server = await ServerProcess.start({ dataDir: dir.path, zkPort: await freePort() });
      bystander = await Client.connect(server.connectString);
      await bystander.create("/bystander", "");
    });

    after(async () => {
      await bystander?.close().catch(() => undefined);
      await server?.stop();
      await dir?.remove();
    });

    test("every answer is the model's or a typed error, the process survives, a bystander keeps working", async () => {
      await fuzz(
        { grpcAddress: server.connectString, zkAddress: server.zkConnectString, bystander, alive: () => server.running, logs: () => server.stderr },
        RUNS,
        0,
      );
    });
  });

  describe("a follower of a three-voter cluster (the bystander on the leader)", () => {
    let cluster: ClusterProcess;
    let bystander: Client;
    let follower: ServerProcess;

    before(async () => {
      cluster = await ClusterProcess.start({ voters: 3 });
      const leader = await waitForLeader(cluster);
      follower = cluster.server(leader === 1 ? 2 : 1);
      bystander = await Client.connect(cluster.server(leader).connectString);
      await bystander.create("/bystander", "");
    });

    after(async () => {
      await bystander?.close().catch(() => undefined);
      await cluster?.stop();
    });

    test("every answer is the model's or a typed error, every member survives, a bystander on the leader keeps working", async () => {
      const members = [...cluster.servers.values()];
      await fuzz(
        {
          grpcAddress: follower.connectString,
          zkAddress: follower.zkConnectString,
          bystander,
          alive: () => members.every((member) => member.running),
          logs: () => members.map((member) => member.stderr.slice(-2_000)).join("\n"),
        },
        Math.max(1, Math.ceil(RUNS / 2)),
        1_000,
      );
    });
  });
});
