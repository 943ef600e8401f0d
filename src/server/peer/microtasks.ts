/**
 * The two microtask tricks the peer transport's batching rests on. A message sent to an idle
 * stream leaves at the end of the current microtask run, with whatever else the same run sent
 * (the answers to one received frame travel together), not a turn of the event loop later: a
 * proposal, ack or commit must not wait for the loop.
 */

/** Runs `run` in a microtask: once, however many times it is asked for before that microtask runs. */
export class MicrotaskOnce {
  private scheduled = false;

  constructor(private readonly run: () => void) {}

  request(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.run();
    });
  }
}

/** Something with queued output. */
export interface Flushable {
  flush(): void;
}

/** Flushes every stream that has output, once the current run of microtasks is over. */
export class FlushScheduler {
  private readonly targets: Flushable[] = [];
  private readonly soon = new MicrotaskOnce(() => this.flushAll());

  schedule(target: Flushable): void {
    this.targets.push(target);
    this.soon.request();
  }

  private flushAll(): void {
    // Targets queued while flushing (a drain) land in the same array and are flushed too.
    const targets = this.targets;
    for (let i = 0; i < targets.length; i++) targets[i]!.flush();
    targets.length = 0;
  }
}
