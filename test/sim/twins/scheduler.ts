/**
 * The simulator's one timeline: every twin schedules its completions and deliveries here, so one
 * seeded run orders everything exactly the same way every time.
 */
export interface Scheduler {
  /** Simulated time, in ms since the run began. */
  readonly nowMs: number;
  /**
   * Run `run` after `delayMs`. An event with a `server` waits while that server's process is paused
   * (SIGSTOP) and runs, in arrival order, when it resumes.
   */
  at(delayMs: number, run: () => void, server?: number): void;
}

interface QueuedEvent {
  atMs: number;
  seq: number;
  server: number | undefined;
  run: () => void;
}

/** A binary heap of events by (time, insertion order). */
export class EventQueue {
  private readonly heap: QueuedEvent[] = [];
  private seq = 0;

  push(atMs: number, run: () => void, server: number | undefined): void {
    const heap = this.heap;
    heap.push({ atMs, seq: this.seq++, server, run });
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  peekTime(): number | undefined {
    return this.heap[0]?.atMs;
  }

  pop(): QueuedEvent | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined) return undefined;
    if (heap.length > 0) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    }
    return top;
  }
}

function before(a: QueuedEvent, b: QueuedEvent): boolean {
  return a.atMs < b.atMs || (a.atMs === b.atMs && a.seq < b.seq);
}

/**
 * A Scheduler whose events run only when its owner steps it, for tests that drive time themselves
 * (the election and Zab unit harnesses, the replica scenarios); the simulator steps its own queue
 * (cluster.ts).
 */
export class SteppedScheduler implements Scheduler {
  nowMs = 0;
  private readonly queue = new EventQueue();
  /** Events queued by `at` and not yet run. */
  private pending = 0;

  at(delayMs: number, run: () => void, server?: number): void {
    this.pending += 1;
    this.queue.push(
      this.nowMs + delayMs,
      () => {
        this.pending -= 1;
        run();
      },
      server,
    );
  }

  /** A periodic timer's next run: it never keeps the scheduler from being quiet. */
  tick(delayMs: number, run: () => void): void {
    this.queue.push(this.nowMs + delayMs, run, undefined);
  }

  /** Nothing is queued but periodic timers. */
  get quiet(): boolean {
    return this.pending === 0;
  }

  /** When the next event is due, or undefined if none is queued. */
  nextEventMs(): number | undefined {
    return this.queue.peekTime();
  }

  /** Runs the next event if it is due by `untilMs`, moving time to it; false if none is. */
  runNext(untilMs = Number.POSITIVE_INFINITY): boolean {
    const atMs = this.queue.peekTime();
    if (atMs === undefined || atMs > untilMs) return false;
    const event = this.queue.pop()!;
    this.nowMs = Math.max(this.nowMs, event.atMs);
    event.run();
    return true;
  }
}
