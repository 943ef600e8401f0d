/**
 * ReadWriteLock: shared reads, exclusive writes (ZooKeeper's shared-lock recipe, Curator's
 * InterProcessReadWriteLock).
 */
import type { Client } from "../client/client.js";
import { SequentialLock } from "./lock-core.js";
import { READ_POLICY, WRITE_POLICY } from "./lock-policy.js";

/**
 * A read-write lock on the directory `path`. Readers create `read-` nodes, writers `write-`
 * nodes, all sequential-ephemeral in the one directory, so they queue in one order: a reader
 * holds once no write node is below its own (and watches only the nearest lower write node), a
 * writer holds once no node at all is below its own (and watches only the node just below).
 * Many readers may hold together; a writer holds alone. Writers are not starved: a reader that
 * arrives after a waiting writer queues behind it.
 *
 * `readLock()` and `writeLock()` return the same two SequentialLock instances every time, each
 * with Lock's API and guarantees (reentrant per instance, "lost" on session loss). The write
 * lock's `fencingToken` grows with every write grant and exceeds that of every earlier read grant;
 * readers holding together each have their own node's czxid.
 * Unlike Curator, holding the write lock does not let this instance also take the read lock: the
 * read lock would wait behind the write node.
 *
 * ```ts
 * const rw = new ReadWriteLock(zk, "/locks/config");
 * await rw.readLock().acquire();
 * try { read(); } finally { await rw.readLock().release(); }
 * ```
 */
export class ReadWriteLock {
  private readonly reader: SequentialLock;
  private readonly writer: SequentialLock;

  constructor(
    readonly client: Client,
    readonly path: string,
  ) {
    this.reader = new SequentialLock(client, path, READ_POLICY);
    this.writer = new SequentialLock(client, path, WRITE_POLICY);
  }

  /** The shared side. */
  readLock(): SequentialLock {
    return this.reader;
  }

  /** The exclusive side. */
  writeLock(): SequentialLock {
    return this.writer;
  }
}
