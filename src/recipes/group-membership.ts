/**
 * Group membership: each member is a protected `member-` ephemeral-sequential node carrying its
 * data under the group path; the children are the members, in join order; a child watch (re-armed
 * after every event) reports changes.
 */
import { EventEmitter } from "node:events";
import type { Client } from "../client/client.js";
import type { Data } from "../client/types.js";
import { ZkError } from "../common/errors.js";
import {
  Deadline,
  deleteIfExists,
  ensurePath,
  retryOnConnectionLoss,
  sequenceOf,
  withoutProtectedPrefix,
  type WaitOptions,
  sessionEndError,
} from "./common.js";
import { createProtectedOrCleanUp, nameOf, orIfNoNode, SerialJob, type SessionBoundEvents, type SessionEnd, SessionFollower, withDeadline } from "./common.js";

/** One member of a group, as `members()` and the `changed` event list them. */
export interface Member {
  /** The member's node name without its protected prefix ("member-0000000004"), unique in the group. */
  id: string;
  /** What the member joined with. */
  data: Uint8Array;
}

const MEMBER = /^member-\d{10}$/;

/** The member nodes among a group's children, in join (sequence) order. */
export function memberNodesInOrder(children: readonly string[]): string[] {
  return children.filter((child) => MEMBER.test(withoutProtectedPrefix(child))).sort((a, b) => sequenceOf(a) - sequenceOf(b));
}

/** Whether two member lists name the same members with the same data, in the same order. */
export function sameMembers(a: readonly Member[], b: readonly Member[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((member, i) => {
    const other = b[i]!;
    return member.id === other.id && Buffer.from(member.data).equals(Buffer.from(other.data));
  });
}

/** The events of a GroupMembership and their listeners' arguments. */
export interface GroupMembershipEvents extends SessionBoundEvents {
  changed: [members: Member[]];
}

/**
 * Membership of the group at `path` through one session: `join` / `leave` this session's member
 * node, `members()` the current list, and — after `watch()` — a `changed` event with the whole
 * list whenever it changes.
 *
 * A member belongs exactly as long as its node exists: if the session expires (or is closed) the
 * node is gone for everyone, `isMember` turns false and `lost` is emitted (also for a watcher
 * that never joined, whose `changed` events stop). A lost connection changes nothing by itself:
 * the node lives while the session does, and the watch is re-registered on reconnect.
 */
export class GroupMembership extends EventEmitter<GroupMembershipEvents> {
  private node: string | undefined;
  private watching = false;
  private last: Member[] | undefined;
  private readonly refreshes = new SerialJob(() => this.refresh(), this);
  private ended: SessionEnd | undefined;
  private readonly session: SessionFollower;
  private readonly onChildEvent = (): void => void this.refreshes.request();

  constructor(
    private readonly client: Client,
    readonly path: string,
  ) {
    super();
    this.session = new SessionFollower(client, {
      reconnected: () => void this.refreshes.request(),
      ended: (reason) => this.lose(reason),
    });
    this.session.start();
  }

  /** This session's member id while it is a member. */
  get memberId(): string | undefined {
    return this.node === undefined ? undefined : withoutProtectedPrefix(nameOf(this.node));
  }

  /** True while this object's member node exists in the group. */
  get isMember(): boolean {
    return this.node !== undefined;
  }

  /**
   * Joins with `data`; resolves with the member id. The create is protected, so a retry after a
   * lost connection finds the node it made; abandoned (timeout/abort), no node is left behind.
   */
  async join(data: Data = "", options: WaitOptions = {}): Promise<string> {
    this.checkOpen();
    if (this.node !== undefined) throw new ZkError("BADARGUMENTS", `group ${this.path}: already a member`);
    return withDeadline(`group ${this.path}: join`, options, this.client, async (deadline) => {
      this.node = await createProtectedOrCleanUp(this.client, this.path, "member-", data, "ephemeral-sequential", deadline);
      return this.memberId!;
    });
  }

  /** Leaves the group (deletes this session's member node). */
  async leave(options: WaitOptions = {}): Promise<void> {
    const node = this.node;
    if (node === undefined) return;
    this.node = undefined;
    await deleteIfExists(this.client, node, new Deadline(`group ${this.path}: leave`, options, this.client));
  }

  /** The current members, in join order (a member leaving while it is read is skipped). */
  async members(options: WaitOptions = {}): Promise<Member[]> {
    this.checkOpen();
    return withDeadline(`group ${this.path}: members`, options, this.client, (deadline) =>
      retryOnConnectionLoss(this.client, deadline, () => this.readMembers(false)),
    );
  }

  /**
   * Starts watching the group: resolves with the current list, then emits `changed` with the new
   * list after every change (one child watch, re-armed each time).
   */
  async watch(options: WaitOptions = {}): Promise<Member[]> {
    this.checkOpen();
    return withDeadline(`group ${this.path}: watch`, options, this.client, async (deadline) => {
      try {
        await retryOnConnectionLoss(this.client, deadline, () => ensurePath(this.client, this.path));
        this.watching = true;
        const members = await retryOnConnectionLoss(this.client, deadline, () => this.readMembers(true));
        this.last = members;
        return members;
      } catch (error) {
        this.watching = false;
        throw error;
      }
    });
  }

  /** Stops `changed` events (the one pending watch fires once more, unheard). */
  unwatch(): void {
    this.watching = false;
  }

  /** Leaves the group if a member and stops watching; the client stays open. */
  async close(options: WaitOptions = {}): Promise<void> {
    this.unwatch();
    this.session.stop();
    if (this.ended === undefined) await this.leave(options);
  }

  private checkOpen(): void {
    if (this.ended !== undefined) throw sessionEndError(this.ended, `group ${this.path}: session ${this.ended}`);
  }

  private async readMembers(watch: boolean): Promise<Member[]> {
    const children = await orIfNoNode(this.client.getChildren(this.path, watch ? { watch: this.onChildEvent } : {}), []);
    const members: Member[] = [];
    for (const child of memberNodesInOrder(children)) {
      const node = await orIfNoNode(this.client.getData(`${this.path}/${child}`), null);
      if (node !== null) members.push({ id: withoutProtectedPrefix(child), data: node.data });
    }
    return members;
  }

  /** Re-reads the list (re-arming the watch) and emits `changed` if it differs from the last one. */
  private async refresh(): Promise<void> {
    if (!this.watching || this.ended !== undefined || !this.client.connected) return;
    const members = await this.readMembers(true);
    if (!this.watching) return;
    if (this.last === undefined || !sameMembers(this.last, members)) {
      this.last = members;
      this.emit("changed", members);
    }
  }

  private lose(reason: SessionEnd): void {
    this.ended = reason;
    this.node = undefined;
    this.watching = false;
    this.emit("lost", reason);
  }
}
