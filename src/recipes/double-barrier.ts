/**
 * DoubleBarrier: ZooKeeper's double barrier recipe. Participants enter together once N have
 * arrived (the last to arrive creates `ready`), and leave together once all have gone, with the
 * herd-free leave: the lowest member waits for the highest, every other member deletes itself and
 * waits for the lowest.
 */
import type { Client } from "../client/client.js";
import { ZkError } from "../common/errors.js";
import {
  createProtectedOrCleanUp,
  Deadline,
  deleteIfExists,
  ensurePath,
  isZkError,
  orIfNoNode,
  retryOnConnectionLoss,
  sequenceOf,
  type WaitOptions,
  waitUntilGone,
  withoutProtectedPrefix,
  isSessionEndError,
} from "./common.js";

/** The node the last participant to enter creates. */
export const READY_NODE = "ready";
const MEMBER_NAME = "member-";
const MEMBER = /^member-\d{10}$/;

/** The participant nodes among `children`, in sequence order (`ready` and strangers ignored). */
export function memberOrder(children: readonly string[]): string[] {
  return children.filter((name) => MEMBER.test(withoutProtectedPrefix(name))).sort((a, b) => sequenceOf(a) - sequenceOf(b));
}

/** What a leaving participant does next, given the members now present (in sequence order). */
export type LeaveStep =
  /** Nobody is left: everyone has left. */
  | { kind: "done" }
  /** Only I am left: delete my node, and everyone has left. */
  | { kind: "delete-and-done" }
  /** I am the lowest: wait for the highest to go, then look again. */
  | { kind: "await-highest"; node: string }
  /** Anyone else: delete my node (if still there), wait for the lowest to go, then look again. */
  | { kind: "delete-and-await-lowest"; node: string };

/** ZooKeeper's leave step for `me` (my node's name, or undefined once deleted). */
export function leaveStep(members: readonly string[], me: string | undefined): LeaveStep {
  const lowest = members[0];
  const highest = members[members.length - 1];
  if (lowest === undefined || highest === undefined) return { kind: "done" };
  if (members.length === 1 && lowest === me) return { kind: "delete-and-done" };
  if (lowest === me) return { kind: "await-highest", node: highest };
  return { kind: "delete-and-await-lowest", node: lowest };
}

/**
 * A double barrier at `path` for `participants` participants (one instance per participant, each
 * normally on its own session).
 *
 * `enter()` creates this participant's ephemeral node (protected name) and returns once
 * `participants` nodes are present: nobody returns from enter before N have entered. Waiting is one
 * exists-watch on `ready`, set before the participant's node is created so its creation cannot
 * be missed. `leave()` deletes the node and returns once every participant's node is gone; then
 * `ready` is removed, so the barrier can be used again (one round at a time per path).
 *
 * Session loss: the participant's ephemeral node goes with its session, so to the others it has
 * left (or never entered); its own pending enter or leave rejects with SESSIONEXPIRED and it no
 * longer counts itself entered. An abandoned call (timeout, abort: OPERATIONTIMEOUT) deletes this
 * participant's node.
 */
export class DoubleBarrier {
  private readonly readyPath: string;
  private memberPath: string | undefined;
  /** An enter or leave is running: one call at a time per participant. */
  private busy = false;

  constructor(
    readonly client: Client,
    readonly path: string,
    readonly participants: number,
  ) {
    if (!Number.isSafeInteger(participants) || participants < 1) {
      throw new ZkError("BADARGUMENTS", `a double barrier needs a positive number of participants, not ${participants}`);
    }
    this.readyPath = `${path}/${READY_NODE}`;
  }

  /** This participant's node while it is entered (or entering), else undefined. */
  get ourPath(): string | undefined {
    return this.memberPath;
  }

  /** Enters and waits until `participants` participants have entered. */
  async enter(options: WaitOptions = {}): Promise<void> {
    if (this.busy || this.memberPath !== undefined) throw new ZkError("BADARGUMENTS", `double barrier ${this.path}: already entered`);
    this.busy = true;
    const deadline = new Deadline(`double barrier enter ${this.path}`, options, this.client);
    try {
      await retryOnConnectionLoss(this.client, deadline, () => ensurePath(this.client, this.path));
      let readyCreated!: () => void;
      const ready = new Promise<void>((resolve) => (readyCreated = resolve));
      const watch = { watch: (event: { type: string }) => (event.type === "NodeCreated" ? readyCreated() : undefined) };
      const readyStat = await retryOnConnectionLoss(this.client, deadline, () => this.client.exists(this.readyPath, watch));
      this.memberPath = await createProtectedOrCleanUp(this.client, this.path, MEMBER_NAME, "", "ephemeral-sequential", deadline);
      if (readyStat !== null) return;
      if ((await this.members(deadline)).length >= this.participants) {
        await retryOnConnectionLoss(this.client, deadline, () => this.createReady());
      } else {
        await deadline.race(ready);
      }
    } catch (error) {
      // Abandoned after the create landed: the node is known, so remove it before rejecting (a
      // create still in flight is undone by createProtectedOrCleanUp once it lands).
      const made = this.memberPath;
      this.memberPath = undefined;
      if (made !== undefined) await deleteIfExists(this.client, made).catch(() => undefined);
      throw error;
    } finally {
      this.busy = false;
      deadline.dispose();
    }
  }

  /** Leaves and waits until every participant has left. */
  async leave(options: WaitOptions = {}): Promise<void> {
    const mine = this.memberPath;
    if (this.busy || mine === undefined) throw new ZkError("BADARGUMENTS", `double barrier ${this.path}: not entered`);
    this.busy = true;
    const myName = mine.slice(this.path.length + 1);
    const deadline = new Deadline(`double barrier leave ${this.path}`, options, this.client);
    let deleted = false;
    const deleteMine = async (): Promise<void> => {
      if (deleted) return;
      await deadline.race(deleteIfExists(this.client, mine));
      deleted = true;
    };
    try {
      for (;;) {
        deadline.check();
        const members = await this.members(deadline);
        const step = leaveStep(members, deleted ? undefined : myName);
        if (step.kind === "done") break;
        if (step.kind === "delete-and-done") {
          await deleteMine();
          break;
        }
        if (step.kind === "delete-and-await-lowest") await deleteMine();
        await waitUntilGone(this.client, `${this.path}/${step.node}`, deadline);
      }
      this.memberPath = undefined;
      // Everyone has left: take the round's ready node away so the next round waits again.
      await deadline.race(deleteIfExists(this.client, this.readyPath));
    } catch (error) {
      // Abandoned (or the session is gone, and the node with it): this participant has left.
      this.memberPath = undefined;
      if (!deleted && !isSessionEndError(error)) await deleteIfExists(this.client, mine).catch(() => undefined);
      throw error;
    } finally {
      this.busy = false;
      deadline.dispose();
    }
  }

  private async members(deadline: Deadline): Promise<string[]> {
    return memberOrder(await retryOnConnectionLoss(this.client, deadline, () => orIfNoNode(this.client.getChildren(this.path), [])));
  }

  private async createReady(): Promise<void> {
    try {
      await this.client.create(this.readyPath, "");
    } catch (error) {
      // Another last-arriver, or this create retried after CONNECTIONLOSS: ready is up either way.
      if (!isZkError(error, "NODEEXISTS")) throw error;
    }
  }
}
