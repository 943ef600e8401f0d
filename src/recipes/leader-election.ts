/**
 * Leader election, ZooKeeper's recipe (Curator's LeaderLatch): every candidate creates an `n_`
 * sequential-ephemeral node under the election path; the lowest sequence number leads; every other
 * candidate watches only its predecessor, so a resignation or a death wakes exactly one candidate.
 */
import { hex64 } from "../common/hex.js";
import { EventEmitter } from "node:events";
import type { Client } from "../client/client.js";
import { ZkError } from "../common/errors.js";
import {
  createProtected,
  createProtectedOrCleanUp,
  Deadline,
  deleteIfExists,
  ensurePath,
  nameOf,
  orIfNoNode,
  removeOwnedNode,
  retryOnConnectionLoss,
  sequenceOf,
  SerialJob,
  type SessionBoundEvents,
  type SessionEnd,
  SessionFollower,
  textOf,
  withoutProtectedPrefix,
  Waiters,
  type WaitOptions,
  withDeadline,
  sessionEndError,
} from "./common.js";

// ---------------------------------------------------------------------------------------------
// Pure ordering logic (unit-tested).

const CANDIDATE = /^n_\d{10}$/;

/** The candidate nodes among an election node's children, lowest sequence (the leader) first. */
export function candidatesInOrder(children: readonly string[]): string[] {
  return children.filter((child) => CANDIDATE.test(withoutProtectedPrefix(child))).sort((a, b) => sequenceOf(a) - sequenceOf(b));
}

/**
 * Where candidate `me` stands: "leader" if it is the lowest, the name of the candidate right below
 * it (the only one it watches) otherwise, or "absent" when its node is not among the children.
 */
export function standingOf(children: readonly string[], me: string): { kind: "leader" } | { kind: "follower"; predecessor: string } | { kind: "absent" } {
  const order = candidatesInOrder(children);
  const index = order.indexOf(me);
  if (index < 0) return { kind: "absent" };
  if (index === 0) return { kind: "leader" };
  return { kind: "follower", predecessor: order[index - 1]! };
}

// ---------------------------------------------------------------------------------------------

/** What a `LeaderElection` candidate takes. */
export interface LeaderElectionOptions {
  /** Stored as the candidate node's data, what `leaderId()` answers. Default `session-0x<session id>`. */
  id?: string;
}

/** idle: not started or resigned · candidate: waiting (or suspended while disconnected) · leader · lost: session gone. */
export type LeaderElectionStatus = "idle" | "candidate" | "leader" | "lost";

/**
 * Why leadership ended: resigned; disconnected (the session may be expiring, so a leader stops
 * acting until it is reconnected and still holds the lowest node); expired or closed (the session is
 * gone); deleted (someone removed the candidate node).
 */
export type RevokedReason = "resigned" | "disconnected" | SessionEnd | "deleted";

/** The events of a LeaderElection and their listeners' arguments. */
export interface LeaderElectionEvents extends SessionBoundEvents {
  elected: [fencingToken: bigint];
  revoked: [reason: RevokedReason];
}

/**
 * One candidate in a leader election under `path`.
 *
 * Guarantees: at most one candidate holds the lowest live `n_` node, and a candidate is leader
 * (`isLeader`, between `elected` and `revoked`) only while it holds it and is connected; its
 * `fencingToken` (the czxid of its node) grows with every new leadership, so a resource can refuse
 * a deposed leader. Herd-free: each candidate watches only its predecessor.
 *
 * On disconnection a leader emits `revoked("disconnected")` and re-claims leadership once
 * reconnected if its node is still the lowest. On session expiry (or close) it emits `revoked` if it
 * was still leader, then `lost`, and never claims leadership again: a new `start()` on a new
 * session is needed. `resign()` emits `revoked("resigned")` before deleting its node, so the next
 * candidate is elected only after this one stopped acting.
 */
export class LeaderElection extends EventEmitter<LeaderElectionEvents> {
  readonly id: string;
  private statusValue: LeaderElectionStatus = "idle";
  /** How the session ended, once the status is "lost". */
  private ended: SessionEnd = "expired";
  private candidate: string | undefined;
  private token: bigint | undefined;
  /** Bumped by every start, resignation and loss: work of an older round is ignored. */
  private round = 0;
  private watchEvents = 0;
  /** Checks of this candidate's standing; a check's failure is reported only while its round lasts. */
  private readonly checks = new SerialJob(async () => {
    // The round current when the check runs (not when it was asked for): a start after a
    // resignation must not find its first check voided by a request of the older round.
    const round = this.round;
    await this.check(round).catch((error: unknown) => {
      if (round === this.round) throw error;
    });
  }, this);
  private readonly waiters = new Waiters();
  private readonly session: SessionFollower;
  /** One function for every predecessor watch, so a watch set twice on one node fires once. */
  private readonly onPredecessorEvent = (): void => {
    this.watchEvents += 1;
    void this.checks.request();
  };

  constructor(
    private readonly client: Client,
    readonly path: string,
    options: LeaderElectionOptions = {},
  ) {
    super();
    this.session = new SessionFollower(client, {
      disconnected: () => this.demote("disconnected"),
      reconnected: () => void this.checks.request(),
      ended: (reason) => this.lose(reason),
    });
    this.id = options.id ?? `session-${hex64(client.sessionId)}`;
  }

  /** Where this candidate stands (see `LeaderElectionStatus`). */
  get status(): LeaderElectionStatus {
    return this.statusValue;
  }

  /** True while this candidate leads: it holds the lowest candidate node and its session is connected. */
  get isLeader(): boolean {
    return this.statusValue === "leader";
  }

  /** The czxid of this candidate's node while it leads; undefined otherwise. */
  get fencingToken(): bigint | undefined {
    return this.statusValue === "leader" ? this.token : undefined;
  }

  /** The full path of this candidate's node while it is in the election. */
  get candidatePath(): string | undefined {
    return this.candidate;
  }

  /** Watch events this candidate has received (read-only; shows the election is herd-free). */
  get watchEventsReceived(): number {
    return this.watchEvents;
  }

  /**
   * Enters the election: creates this candidate's protected `n_` node and resolves once it knows
   * whether it leads (`isLeader`). Abandoned (timeout/abort), it removes its node and rejects.
   */
  async start(options: WaitOptions = {}): Promise<void> {
    if (this.statusValue === "candidate" || this.statusValue === "leader") {
      throw new ZkError("BADARGUMENTS", `leader election ${this.path}: already started`);
    }
    const round = ++this.round;
    this.statusValue = "candidate";
    this.session.start();
    await withDeadline(`leader election ${this.path}: start`, options, this.client, async (deadline) => {
      try {
        await retryOnConnectionLoss(this.client, deadline, () => ensurePath(this.client, this.path));
        const node = await createProtectedOrCleanUp(this.client, this.path, "n_", this.id, "ephemeral-sequential", deadline);
        if (round !== this.round) {
          // Resigned (or lost) while the create was in flight.
          await deleteIfExists(this.client, node).catch(() => undefined);
          throw new ZkError("OPERATIONTIMEOUT", `leader election ${this.path}: resigned during start`);
        }
        this.candidate = node;
        await deadline.race(this.checks.request());
      } catch (error) {
        // Abandoned: leave the election entirely (a node already made is deleted).
        if (round === this.round) await this.resign().catch(() => undefined);
        throw error;
      }
    });
  }

  /**
   * Resolves with the fencing token once this candidate leads. Rejects with OPERATIONTIMEOUT on timeout/abort (the
   * candidate stays in the election), SESSIONEXPIRED if the session is gone (AUTHFAILED if its SASL login was refused), and BADARGUMENTS if
   * it is not a candidate (never started or resigned meanwhile).
   */
  async awaitLeadership(options: WaitOptions = {}): Promise<bigint> {
    if (this.statusValue === "leader") return this.currentToken();
    if (this.statusValue === "lost") throw sessionEndError(this.ended, `leader election ${this.path}: session ${this.ended}`);
    if (this.statusValue === "idle") throw new ZkError("BADARGUMENTS", `leader election ${this.path}: not a candidate`);
    await this.waiters.wait(`leader election ${this.path}: await leadership`, options, this.client);
    return this.currentToken();
  }

  /** The token of the leadership just confirmed; one that ended in between rejects like a loss. */
  private currentToken(): bigint {
    const token = this.fencingToken;
    if (token === undefined) throw new ZkError("SESSIONEXPIRED", `leader election ${this.path}: leadership ended as it was granted`);
    return token;
  }

  /**
   * Leaves the election: a leader first emits `revoked("resigned")`, then its node is deleted and
   * the next candidate is elected. Safe to call at any time; a lost candidate has nothing to delete.
   */
  async resign(options: WaitOptions = {}): Promise<void> {
    if (this.statusValue === "idle" || this.statusValue === "lost") return;
    const wasLeader = this.statusValue === "leader";
    const node = this.candidate;
    this.round += 1;
    this.statusValue = "idle";
    this.candidate = undefined;
    this.token = undefined;
    this.session.stop();
    if (wasLeader) this.emit("revoked", "resigned");
    this.waiters.rejectAll(new ZkError("BADARGUMENTS", `leader election ${this.path}: resigned`));
    if (node === undefined) return;
    await removeOwnedNode(this.client, node, new Deadline(`leader election ${this.path}: resign`, options, this.client));
  }

  /** The id of the current leader (the lowest candidate's data), or undefined if there is none. */
  async leaderId(options: WaitOptions = {}): Promise<string | undefined> {
    return withDeadline(`leader election ${this.path}: leader id`, options, this.client, (deadline) =>
      retryOnConnectionLoss(this.client, deadline, () => readLeaderId(this.client, this.path)),
    );
  }

  /**
   * Reads the candidates and acts on this one's standing: lead, or watch the predecessor. A check
   * interrupted by a lost connection is simply dropped: the reconnect schedules the next one.
   */
  private async check(round: number): Promise<void> {
    const node = this.candidate;
    if (round !== this.round || node === undefined || !this.client.connected) return;
    const children = await this.client.getChildren(this.path);
    if (round !== this.round) return;
    const standing = standingOf(children, nameOf(node));
    if (standing.kind === "absent") {
      await this.candidateDeleted(round);
      return;
    }
    if (standing.kind === "follower") {
      // A lower node cannot appear after ours (sequence numbers only grow), but a foreign one could.
      this.demote("deleted");
      const stat = await this.client.exists(`${this.path}/${standing.predecessor}`, { watch: this.onPredecessorEvent });
      if (stat === null && round === this.round) void this.checks.request();
      return;
    }
    if (this.statusValue === "leader") return;
    const stat = await this.client.exists(node);
    // Lead only while connected: a disconnected candidate cannot know its session still lives.
    if (round !== this.round || this.statusValue !== "candidate" || !this.client.connected) return;
    if (stat === null) {
      await this.candidateDeleted(round);
      return;
    }
    this.token = stat.czxid;
    this.statusValue = "leader";
    this.emit("elected", stat.czxid);
    this.waiters.resolveAll();
  }

  /** Our node vanished while the session lives (someone deleted it): rejoin with a new node. */
  private async candidateDeleted(round: number): Promise<void> {
    this.demote("deleted");
    this.candidate = undefined;
    const rejoined = await withDeadline(`leader election ${this.path}: rejoin`, {}, this.client, async (deadline) => {
      await retryOnConnectionLoss(this.client, deadline, () => ensurePath(this.client, this.path));
      const node = await createProtected(this.client, this.path, "n_", this.id, "ephemeral-sequential", deadline);
      if (round !== this.round) {
        await deleteIfExists(this.client, node).catch(() => undefined);
        return false;
      }
      this.candidate = node;
      return true;
    });
    if (rejoined) void this.checks.request();
  }

  /** A leader goes back to being a candidate; anyone else is left as it is. */
  private demote(reason: RevokedReason): void {
    if (this.statusValue !== "leader") return;
    this.statusValue = "candidate";
    this.token = undefined;
    this.emit("revoked", reason);
  }

  private lose(reason: SessionEnd): void {
    if (this.statusValue !== "candidate" && this.statusValue !== "leader") return;
    const wasLeader = this.statusValue === "leader";
    this.round += 1;
    this.statusValue = "lost";
    this.ended = reason;
    this.candidate = undefined;
    this.token = undefined;
    if (wasLeader) this.emit("revoked", reason);
    this.emit("lost", reason);
    this.waiters.rejectAll(sessionEndError(reason, `leader election ${this.path}: session ${reason}`));
  }
}

/** The lowest candidate's data; a leader that vanishes between the two reads is skipped. */
async function readLeaderId(client: Client, path: string): Promise<string | undefined> {
  for (;;) {
    const leader = candidatesInOrder(await orIfNoNode(client.getChildren(path), []))[0];
    if (leader === undefined) return undefined;
    const node = await orIfNoNode(client.getData(`${path}/${leader}`), null);
    if (node !== null) return textOf(node.data);
  }
}
