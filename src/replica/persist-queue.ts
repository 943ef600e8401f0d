/**
 * Durable writes in the order a Zab core asked for them. Appends go straight to the log, which
 * orders and group-commits them; any other write (an epoch, a truncation, a SNAP install) waits for
 * every earlier write, and writes after it wait for it. The first failure stops the queue for good
 * and is reported once (fail-stop).
 */
import type { Done } from "./ports.js";

type Write = (done: Done) => void;

interface Queued {
  exclusive: boolean;
  write: Write;
  then: () => void;
}

export class PersistQueue {
  private readonly queued: Queued[] = [];
  private appendsRunning = 0;
  private exclusiveRunning = false;
  private failed = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly onFailed: (error: unknown) => void) {}

  append(write: Write, then: () => void): void {
    this.queued.push({ exclusive: false, write, then });
    this.pump();
  }

  exclusive(write: Write, then: () => void): void {
    this.queued.push({ exclusive: true, write, then });
    this.pump();
  }

  /** `idle` once everything queued so far is durable (never, if a write failed). */
  whenIdle(idle: () => void): void {
    if (this.failed) return;
    if (this.isIdle()) idle();
    else this.idleWaiters.push(idle);
  }

  private isIdle(): boolean {
    return this.queued.length === 0 && this.appendsRunning === 0 && !this.exclusiveRunning;
  }

  private pump(): void {
    while (!this.failed && this.queued.length > 0 && !this.exclusiveRunning) {
      const next = this.queued[0]!;
      if (next.exclusive && this.appendsRunning > 0) return;
      this.queued.shift();
      if (next.exclusive) this.exclusiveRunning = true;
      else this.appendsRunning += 1;
      next.write((error) => this.finished(next, error));
    }
    if (!this.failed && this.isIdle() && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const idle of waiters) idle();
    }
  }

  private finished(write: Queued, error: unknown): void {
    if (this.failed) return;
    if (error !== undefined) {
      this.failed = true;
      this.idleWaiters = [];
      this.onFailed(error);
      return;
    }
    if (write.exclusive) this.exclusiveRunning = false;
    else this.appendsRunning -= 1;
    write.then();
    this.pump();
  }
}
