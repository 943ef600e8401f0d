/**
 * The web console, served from the admin HTTP port under /console/: a page (static files shipped
 * in the package, nothing fetched at run time) and the small JSON API it calls.
 *
 * The tree half of the API is an ordinary client of this server: one SDK session (`Client`)
 * connected to this server's own gRPC client port, so every read and write goes through the same
 * pipeline, ACLs and typed errors as any other client's, and a bad path, version or datum from the
 * page is answered with ZooKeeper's error (NONODE, BADVERSION, BADARGUMENTS, …), never a crash.
 * The watches that session leaves on what the page shows come back to every open page as
 * server-sent events (/console/api/events); the page then reads again.
 *
 * The cluster half reads the live state (ServerStatus) here, and each other member's own
 * /console/api/self through its admin port. Request rates, latency percentiles and outstanding
 * requests are sampled every few seconds into a short ring the charts read.
 *
 * When the server requires auth (adminAuth, or a superDigest), every /console/ path asks for HTTP
 * Basic credentials that hash, as a ZooKeeper digest id, to the superDigest; the console's SDK
 * session then authenticates with them, so it reads and writes as the super user.
 */
import { timingSafeEqual } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Client } from "../client/client.js";
import type { WatchedEvent } from "../client/types.js";
import { generateDigest } from "../common/digest.js";
import { ZkError } from "../common/errors.js";
import { CREATE_MODES_BY_FLAG, type CreateMode } from "../common/znode.js";
import type { AdminExtension, AdminExtensionContext } from "../server/admin/http-listeners.js";
import { hex64 } from "../common/hex.js";
import { dataFromInput, pathFromInput, statJson, versionFromInput, viewOfData } from "./console-data.js";

export const CONSOLE_URL = "/console/";
const API = "/console/api/";
/**
 * The package's own docs/ pages, as text, so that the console's help links work on any machine
 * the server runs on, offline: /console/docs/operations/console.md is docs/operations/console.md.
 */
const DOCS = "/console/docs/";
const DOCS_DIR = new URL("../../../docs/", import.meta.url);
/** A docs page path: folders and a name of letters, digits and dashes, ending in .md; no dot segments. */
const DOCS_PAGE = /^(?:[a-z0-9-]+\/)*[a-z0-9-]+\.md$/;

/** Limits: request body, children listed per node, open event streams, samples kept. */
const BODY_BYTES_MAX = 4 * 1024 * 1024;
const CHILDREN_LISTED_MAX = 1_000;
const EVENT_STREAMS_MAX = 64;
const SAMPLE_INTERVAL_MS = 2_000;
const SAMPLES_KEPT = 150;
const OPERATION_TIMEOUT_MS = 10_000;
const MEMBER_TIMEOUT_MS = 1_500;
const EVENT_STREAM_PING_MS = 15_000;

const STATIC_FILES: Readonly<Record<string, { file: string; type: string }>> = {
  "/console/": { file: "index.html", type: "text/html; charset=utf-8" },
  "/console/console.js": { file: "console.js", type: "text/javascript; charset=utf-8" },
  "/console/console.css": { file: "console.css", type: "text/css; charset=utf-8" },
};

export type ConsoleDeps = AdminExtensionContext;

interface Sample {
  t: number;
  reads: number;
  updates: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  outstanding: number;
}

/** Errors the page caused, as HTTP statuses (the body names ZooKeeper's code). */
const HTTP_STATUS_OF: Partial<Record<string, number>> = {
  NONODE: 404,
  NODEEXISTS: 409,
  NOTEMPTY: 409,
  BADVERSION: 409,
  NOAUTH: 403,
  CONNECTIONLOSS: 503,
  OPERATIONTIMEOUT: 503,
  SESSIONEXPIRED: 503,
};

export class ConsoleService implements AdminExtension {
  readonly writablePathPrefix = API;

  private readonly requireAuth: boolean;
  private client: Promise<Client> | undefined;
  /** The super user's "user:password" once a request brought it; the SDK session authenticates with it. */
  private credentials: string | undefined;
  private authenticatedClient: Client | undefined;
  private readonly streams = new Set<ServerResponse>();
  private readonly samples: Sample[] = [];
  private readonly sampler: NodeJS.Timeout;
  private readonly pinger: NodeJS.Timeout;
  private readonly assets = new Map<string, Buffer>();
  private closed = false;

  constructor(private readonly deps: ConsoleDeps) {
    this.requireAuth = deps.config.adminAuth || deps.config.superDigest !== "";
    this.sample();
    this.sampler = setInterval(() => this.sample(), SAMPLE_INTERVAL_MS);
    this.sampler.unref();
    this.pinger = setInterval(() => this.broadcast(": ping\n\n"), EVENT_STREAM_PING_MS);
    this.pinger.unref();
  }

  /** Whether `path` is the console's; `handle` answers it. */
  owns(path: string): boolean {
    return path === "/" || path === "/console" || path.startsWith(CONSOLE_URL);
  }

  async handle(request: IncomingMessage, response: ServerResponse, path: string): Promise<void> {
    if (path === "/" || path === "/console") {
      response.writeHead(302, { location: CONSOLE_URL, "content-length": 0 });
      response.end();
      return;
    }
    if (this.requireAuth && !this.authorized(request)) {
      response.setHeader("www-authenticate", 'Basic realm="corral console", charset="UTF-8"');
      return sendJson(response, 401, {
        error: { code: "NOAUTH", message: "the console needs the super user's credentials (HTTP Basic, user:password hashing to the superDigest)" },
      });
    }
    const method = request.method ?? "GET";
    const asset = STATIC_FILES[path];
    if (asset !== undefined) {
      if (method !== "GET" && method !== "HEAD") return methodNotAllowed(response, "GET, HEAD");
      return this.sendAsset(response, asset.file, asset.type);
    }
    if (path.startsWith(DOCS)) {
      if (method !== "GET" && method !== "HEAD") return methodNotAllowed(response, "GET, HEAD");
      return this.sendDocsPage(response, path.slice(DOCS.length));
    }
    if (!path.startsWith(API)) return sendJson(response, 404, { error: { code: "NOTFOUND", message: `no console page at ${path}` } });
    const route = path.slice(API.length);
    const query = new URL(request.url ?? "/", "http://localhost").searchParams;
    try {
      switch (route) {
        case "events":
          return this.openEventStream(request, response);
        case "node":
          return sendJson(response, 200, await this.node(pathFromInput(query.get("path"))));
        case "children":
          return sendJson(response, 200, await this.children(pathFromInput(query.get("path"))));
        case "self":
          return sendJson(response, 200, this.self());
        case "cluster":
          return sendJson(response, 200, await this.cluster(request));
        case "metrics":
          return sendJson(response, 200, { intervalMs: SAMPLE_INTERVAL_MS, samples: this.samples });
        case "recipes":
          return sendJson(response, 200, await this.recipes());
        case "create":
        case "set":
        case "delete": {
          if (method !== "POST") return methodNotAllowed(response, "POST");
          const body = await readJsonBody(request);
          if (route === "create") return sendJson(response, 200, await this.create(body));
          if (route === "set") return sendJson(response, 200, await this.set(body));
          return sendJson(response, 200, await this.delete(body));
        }
        default:
          return sendJson(response, 404, { error: { code: "NOTFOUND", message: `no console API ${route}` } });
      }
    } catch (error) {
      if (error instanceof ZkError) {
        return sendJson(response, HTTP_STATUS_OF[error.code] ?? 400, {
          error: { code: error.code, message: error.message, ...(error.path === undefined ? {} : { path: error.path }) },
        });
      }
      this.deps.logger.error({ err: error, path }, "console request failed");
      return sendJson(response, 500, { error: { code: "SYSTEMERROR", message: "internal error (logged by the server)" } });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sampler);
    clearInterval(this.pinger);
    for (const stream of this.streams) stream.end();
    this.streams.clear();
    const client = this.client;
    this.client = undefined;
    if (client)
      await client.then(
        (c) => c.close(),
        () => undefined,
      );
  }

  // ---- auth

  private authorized(request: IncomingMessage): boolean {
    const header = request.headers.authorization ?? "";
    const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
    if (!match) return false;
    const userPassword = Buffer.from(match[1]!, "base64").toString("utf8");
    if (userPassword.length > 1024) return false;
    const expected = Buffer.from(this.deps.config.superDigest, "utf8");
    const actual = Buffer.from(generateDigest(userPassword), "utf8");
    if (expected.byteLength === 0 || expected.byteLength !== actual.byteLength || !timingSafeEqual(expected, actual)) return false;
    this.credentials = userPassword;
    return true;
  }

  // ---- the SDK session

  private async sdk(): Promise<Client> {
    if (this.closed) throw new ZkError("CONNECTIONLOSS", "the server is stopping");
    if (this.client === undefined) {
      const address = this.deps.clientAddress();
      if (address === undefined) throw new ZkError("CONNECTIONLOSS", "the client port is not listening yet");
      const tls = this.deps.clientTls();
      const connecting = Client.connect(address, {
        sessionTimeoutMs: 30_000,
        connectTimeoutMs: 5_000,
        logger: this.deps.logger.child({ component: "console" }),
        ...(tls ? { tls } : {}),
      });
      this.client = connecting;
      connecting.then(
        (client) => {
          client.on("error", (error) => this.deps.logger.warn({ err: error }, "console session error"));
          client.on("state", (state) => {
            this.broadcast(`event: session\ndata: ${JSON.stringify({ state })}\n\n`);
            if ((state === "expired" || state === "closed") && this.client === connecting) this.client = undefined;
          });
        },
        () => {
          if (this.client === connecting) this.client = undefined;
        },
      );
    }
    const client = await this.client;
    if (this.credentials !== undefined && this.authenticatedClient !== client) {
      await client.addAuthInfo("digest", this.credentials);
      this.authenticatedClient = client;
    }
    return client;
  }

  private readonly onDataWatch = (event: WatchedEvent): void => this.watchFired("data", event);
  private readonly onChildWatch = (event: WatchedEvent): void => this.watchFired("children", event);

  private watchFired(kind: "data" | "children", event: WatchedEvent): void {
    this.broadcast(`event: change\ndata: ${JSON.stringify({ kind, type: event.type, path: event.path, zxid: hex64(event.zxid) })}\n\n`);
  }

  // ---- tree

  private async node(path: string): Promise<unknown> {
    const client = await this.sdk();
    const [data, children, acl] = await timed(
      Promise.allSettled([client.getData(path, { watch: this.onDataWatch }), client.getChildren(path, { watch: this.onChildWatch }), client.getACL(path)]),
    );
    // The node itself is missing (or unreadable): that is the answer.
    if (data.status === "rejected" && children.status === "rejected") throw data.reason;
    const failure = (result: PromiseSettledResult<unknown>) => (result.status === "rejected" ? errorJson(result.reason) : undefined);
    return {
      path,
      stat: data.status === "fulfilled" ? statJson(data.value.stat) : acl.status === "fulfilled" ? statJson(acl.value.stat) : undefined,
      data: data.status === "fulfilled" ? viewOfData(data.value.data) : undefined,
      dataError: failure(data),
      children: children.status === "fulfilled" ? children.value.sort() : undefined,
      childrenError: failure(children),
      acl: acl.status === "fulfilled" ? acl.value.acl.map((entry) => ({ scheme: entry.id.scheme, id: entry.id.id, perms: permsText(entry.perms) })) : undefined,
      aclError: failure(acl),
    };
  }

  private async children(path: string): Promise<unknown> {
    const client = await this.sdk();
    const names = (await timed(client.getChildren(path, { watch: this.onChildWatch }))).sort();
    const listed = names.slice(0, CHILDREN_LISTED_MAX);
    const prefix = path === "/" ? "/" : `${path}/`;
    const stats = await timed(Promise.all(listed.map((name) => client.exists(prefix + name).catch(() => null))));
    return {
      path,
      total: names.length,
      children: listed.map((name, i) => {
        const stat = stats[i];
        return { name, numChildren: stat?.numChildren ?? 0, ephemeral: stat ? stat.ephemeralOwner !== 0n : false, dataLength: stat?.dataLength ?? 0 };
      }),
    };
  }

  private async create(body: Record<string, unknown>): Promise<unknown> {
    const path = pathFromInput(body["path"]);
    const data = dataFromInput(body["data"], body["encoding"]);
    const mode = (body["mode"] ?? "persistent") as CreateMode;
    if (!CREATE_MODES_BY_FLAG.includes(mode)) throw new ZkError("BADARGUMENTS", `unknown create mode ${JSON.stringify(body["mode"])}`);
    const ttl = body["ttlMs"];
    const options = ttl === undefined || ttl === null || ttl === "" ? { mode } : { mode, ttlMs: Number(ttl) };
    const client = await this.sdk();
    return { path: await timed(client.create(path, data, options)) };
  }

  private async set(body: Record<string, unknown>): Promise<unknown> {
    const path = pathFromInput(body["path"]);
    const data = dataFromInput(body["data"], body["encoding"]);
    const version = versionFromInput(body["version"]);
    const client = await this.sdk();
    return { stat: statJson(await timed(client.setData(path, data, { version }))) };
  }

  private async delete(body: Record<string, unknown>): Promise<unknown> {
    const path = pathFromInput(body["path"]);
    const version = versionFromInput(body["version"]);
    const recursive = body["recursive"] === true;
    if (recursive && path === "/") throw new ZkError("BADARGUMENTS", "deleteall cannot delete the root");
    const client = await this.sdk();
    if (!recursive) {
      await timed(client.delete(path, { version }));
      return { deleted: 1 };
    }
    // zkCli's deleteall: every descendant, deepest first, then the node itself.
    const tree = [path];
    for (let i = 0; i < tree.length; i++) {
      try {
        const prefix = tree[i] === "/" ? "/" : `${tree[i]}/`;
        for (const child of await timed(client.getChildren(tree[i]!))) tree.push(prefix + child);
      } catch (error) {
        if (i > 0 && error instanceof ZkError && error.code === "NONODE") continue;
        throw error;
      }
    }
    let deleted = 0;
    for (let i = tree.length - 1; i >= 0; i--) {
      try {
        await timed(client.delete(tree[i]!, { version: i === 0 ? version : -1 }));
        deleted += 1;
      } catch (error) {
        if (i > 0 && error instanceof ZkError && error.code === "NONODE") continue;
        throw error;
      }
    }
    return { deleted };
  }

  // ---- recipes

  /**
   * Locks, elections and queues as the recipes layer leaves them: a parent whose children are
   * sequential znodes (name-%010d). The lowest sequence holds the lock or leads; the count is the
   * queue's depth. Read from the first two levels under the root.
   */
  private async recipes(): Promise<unknown> {
    const client = await this.sdk();
    const found: { path: string; children: number; first: string; firstOwner: string; firstData: string }[] = [];
    const visit = async (path: string, depth: number): Promise<void> => {
      if (found.length >= 100) return;
      let names: string[];
      try {
        names = await timed(client.getChildren(path));
      } catch {
        return;
      }
      const sequential = names.filter((name) => /\d{10}$/.test(name));
      if (sequential.length > 0 && path !== "/") {
        const ordered = sequential.sort((a, b) => a.slice(-10).localeCompare(b.slice(-10)));
        const first = ordered[0]!;
        const prefix = path === "/" ? "/" : `${path}/`;
        let firstOwner = "";
        let firstData = "";
        try {
          const { data, stat } = await timed(client.getData(prefix + first));
          firstOwner = stat.ephemeralOwner === 0n ? "" : hex64(stat.ephemeralOwner);
          firstData = viewOfData(data.subarray(0, 200)).text ?? "";
        } catch {
          // Gone meanwhile: shown without an owner.
        }
        found.push({ path, children: sequential.length, first, firstOwner, firstData });
      }
      if (depth >= 3) return;
      const prefix = path === "/" ? "/" : `${path}/`;
      for (const name of names
        .filter((n) => !/\d{10}$/.test(n))
        .sort()
        .slice(0, 50)) {
        if (path === "/" && name === "zookeeper") continue;
        await visit(prefix + name, depth + 1);
      }
    };
    await visit("/", 0);
    return { recipes: found };
  }

  // ---- cluster

  /** This server, as the cluster view shows it (every member answers this for the others). */
  private self(): unknown {
    const { status, config } = this.deps;
    const context = status.fourLetterWordContext();
    const entry = config.servers.find((s) => s.id === config.serverId);
    const leader = status.leaderStatus();
    const tree = status.tree;
    const connected = new Set(status.connectedSessionIds());
    const sessions = [...connected]
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .map((sessionId) => {
        const watched = tree.watches.watchedPathsOf(sessionId);
        return {
          id: hex64(sessionId),
          timeoutMs: tree.sessions.get(sessionId)?.timeoutMs,
          ephemerals: [...tree.ephemeralsOf(sessionId)].sort(),
          dataWatches: [...watched.data].sort(),
          childWatches: [...watched.child].sort(),
        };
      });
    const lastZxid = BigInt(context.zxid);
    return {
      serverId: config.serverId,
      role: entry?.role ?? "standalone",
      state: status.state(),
      serving: status.serving,
      leaderId: status.leaderId(),
      zabState: status.zabState(),
      epoch: status.currentEpoch() ?? Number(lastZxid >> 32n),
      lastZxid: hex64(lastZxid),
      nodeCount: context.nodeCount,
      globalSessions: status.globalSessions(),
      outstandingRequests: status.outstandingRequests(),
      uptimeMs: status.uptimeMs(),
      version: status.version,
      clientAddress: this.deps.clientAddress(),
      leader: leader && {
        proposalsInFlight: leader.proposalsInFlight,
        lastProposedZxid: hex64(leader.lastProposedZxid),
        learners: leader.learners.map((l) => ({ sid: l.sid, role: l.role, stage: l.stage, ackedZxid: hex64(l.ackedZxid), lagZxids: l.lagZxids })),
      },
      sessions,
      elections: status.electionsSeen().map((e) => ({ ...e, decidedAt: new Date(e.decidedAtMs).toISOString() })),
    };
  }

  private async cluster(request: IncomingMessage): Promise<unknown> {
    const { config } = this.deps;
    if (config.servers.length === 0) return { members: [{ id: config.serverId, host: config.clientHost, role: "standalone", status: this.self() }] };
    const authorization = request.headers.authorization;
    const members = await Promise.all(
      config.servers.map(async (entry) => {
        const base = { id: entry.id, host: entry.host, role: entry.role, adminPort: entry.adminPort };
        if (entry.id === config.serverId) return { ...base, status: this.self() };
        if (entry.adminPort === undefined) return { ...base, error: "no admin port in its servers entry" };
        const host = entry.host.includes(":") ? `[${entry.host}]` : entry.host;
        try {
          const answer = await fetch(`http://${host}:${entry.adminPort}${API}self`, {
            headers: authorization === undefined ? {} : { authorization },
            signal: AbortSignal.timeout(MEMBER_TIMEOUT_MS),
          });
          if (!answer.ok) return { ...base, error: `HTTP ${answer.status}` };
          return { ...base, status: await answer.json() };
        } catch (error) {
          return { ...base, error: `unreachable (${error instanceof Error ? error.message : String(error)})` };
        }
      }),
    );
    return { members };
  }

  // ---- charts

  private sample(): void {
    const figures = this.deps.metrics.requestFigures();
    this.samples.push({
      t: this.deps.nowMs(),
      reads: figures.reads,
      updates: figures.updates,
      p50Ms: figures.p50Ms,
      p95Ms: figures.p95Ms,
      p99Ms: figures.p99Ms,
      outstanding: this.deps.status.outstandingRequests(),
    });
    if (this.samples.length > SAMPLES_KEPT) this.samples.shift();
  }

  // ---- event stream

  private openEventStream(request: IncomingMessage, response: ServerResponse): void {
    if (this.streams.size >= EVENT_STREAMS_MAX) return sendJson(response, 503, { error: { code: "BADARGUMENTS", message: "too many console pages open" } });
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store", connection: "keep-alive" });
    response.write("retry: 1000\n\n");
    this.streams.add(response);
    const drop = () => this.streams.delete(response);
    request.on("close", drop);
    response.on("error", drop);
    // Open the SDK session now, so that the page sees it connect.
    this.sdk().catch(() => undefined);
  }

  private broadcast(text: string): void {
    for (const stream of this.streams) {
      if (stream.writableEnded || stream.destroyed) this.streams.delete(stream);
      else stream.write(text);
    }
  }

  private async sendDocsPage(response: ServerResponse, page: string): Promise<void> {
    let body: Buffer;
    try {
      if (!DOCS_PAGE.test(page)) throw new Error("not a docs page");
      body = await readFile(new URL(page, DOCS_DIR));
    } catch {
      return sendJson(response, 404, { error: { code: "NOTFOUND", message: `no documentation page ${page}` } });
    }
    response.writeHead(200, { "content-type": "text/plain; charset=utf-8", "content-length": body.byteLength, "cache-control": "no-store" });
    response.end(body);
  }

  private async sendAsset(response: ServerResponse, file: string, type: string): Promise<void> {
    let body = this.assets.get(file);
    if (body === undefined) {
      body = await readFile(new URL(`./static/${file}`, import.meta.url));
      this.assets.set(file, body);
    }
    response.writeHead(200, { "content-type": type, "content-length": body.byteLength, "cache-control": "no-store" });
    response.end(body);
  }
}

function timed<T>(promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ZkError("OPERATIONTIMEOUT", `no answer within ${OPERATION_TIMEOUT_MS} ms`)), OPERATION_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function errorJson(error: unknown): { code: string; message: string } {
  if (error instanceof ZkError) return { code: error.code, message: error.message };
  return { code: "SYSTEMERROR", message: error instanceof Error ? error.message : String(error) };
}

function permsText(perms: number): string {
  return ["r", "w", "c", "d", "a"].map((letter, bit) => ((perms >> bit) & 1 ? letter : "-")).join("");
}

async function readJsonBody(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).byteLength;
    if (size > BODY_BYTES_MAX) throw new ZkError("BADARGUMENTS", `request body over ${BODY_BYTES_MAX} bytes`);
    chunks.push(chunk as Buffer);
  }
  let value: unknown;
  try {
    value = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new ZkError("BADARGUMENTS", "the request body is not JSON");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new ZkError("BADARGUMENTS", "the request body must be a JSON object");
  return value as Record<string, unknown>;
}

function sendJson(response: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), "cache-control": "no-store" });
  response.end(body);
}

function methodNotAllowed(response: ServerResponse, allow: string): void {
  response.setHeader("allow", allow);
  sendJson(response, 405, { error: { code: "BADARGUMENTS", message: "method not allowed" } });
}
