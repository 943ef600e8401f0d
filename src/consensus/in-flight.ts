/**
 * The proposals sent to one follower and not yet acked, oldest first, with their bytes: the
 * leader's per-follower flow-control window. Kept apart from the history, which trims committed
 * records a slow follower may still have in flight.
 */
export class InFlight {
  private zxids: number[] = [];
  private sizes: number[] = [];
  private head = 0;
  private bytesValue = 0;

  get count(): number {
    return this.zxids.length - this.head;
  }

  get bytes(): number {
    return this.bytesValue;
  }

  sent(zxid: number, bytes: number): void {
    this.zxids.push(zxid);
    this.sizes.push(bytes);
    this.bytesValue += bytes;
  }

  /** Everything up to `zxid` is acked. */
  ackedThrough(zxid: number): void {
    while (this.head < this.zxids.length && this.zxids[this.head]! <= zxid) {
      this.bytesValue -= this.sizes[this.head]!;
      this.head += 1;
    }
    if (this.head === this.zxids.length) {
      this.zxids = [];
      this.sizes = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.zxids.length) {
      this.zxids = this.zxids.slice(this.head);
      this.sizes = this.sizes.slice(this.head);
      this.head = 0;
    }
  }
}
