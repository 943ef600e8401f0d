/**
 * The one error the ZooKeeper data readers throw: a file that is not what it should be (damaged,
 * truncated, of another kind or version), named with what is wrong, so that an import stops with a
 * message an operator can act on and never with half a tree.
 */
export class ZooKeeperDataError extends Error {
  readonly code = "ZOOKEEPER_DATA_INVALID";
  constructor(
    /** The file (or directory) at fault, "" when none applies. */
    readonly file: string,
    detail: string,
  ) {
    super(file === "" ? detail : `${file}: ${detail}`);
    this.name = "ZooKeeperDataError";
  }
}
