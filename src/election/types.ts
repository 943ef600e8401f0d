/**
 * FastLeaderElection's records (ZooKeeper's FastLeaderElection.Notification / Vote), shared by the
 * pure election core and the peer transport that carries them. Times are milliseconds handed in by
 * the host (`nowMs`), never read from a clock here.
 */

/** A server's own view of where it stands (ZooKeeper's ServerState). */
export type ServerState = "looking" | "following" | "leading" | "observing";

/** A proposed leader, ordered by (peerEpoch, zxid, leader) — the higher wins. */
export interface Vote {
  /** Server id of the proposed leader; 0 (with zxid and peerEpoch 0) is an observer's vote for nobody. */
  leader: number;
  /** The proposed leader's last logged zxid. */
  zxid: number;
  /** The proposed leader's current epoch. */
  peerEpoch: number;
}

/** What one server tells another during (and after) an election. */
export interface Notification {
  /** Sender's server id. */
  from: number;
  /** Sender's state: a following/leading sender tells a looking one who already leads. */
  state: ServerState;
  vote: Vote;
  /** The sender's logical clock (ZooKeeper's electionEpoch): the election round it votes in. */
  round: number;
  /**
   * The configuration in force at the sender (ZooKeeper's notifications carry it too): a server
   * that missed a reconfiguration learns it here. The election itself ignores it; the host adopts
   * a newer one. `version` is the zxid of the reconfiguration (0: the one the servers started
   * with); `text` is /zookeeper/config's.
   */
  config?: { version: number; text: string };
  /**
   * The latest reconfiguration the sender has logged and not seen committed (ZooKeeper's
   * notifications do not carry it): a server that it makes a voter, and that never logged it,
   * learns that it must vote. Same form as `config`; never in force because of this.
   */
  pending?: { version: number; text: string };
  /**
   * The zxid of the last txn the sender applied to its tree, which only ever holds committed txns
   * (ZooKeeper's notifications do not carry it). With `config`, it tells a server holding a
   * reconfiguration that never committed: one older than this zxid and newer than the sender's
   * configuration in force was left out of the committed history, and never joins it.
   */
  applied?: number;
  /**
   * Set when the sender repairs damaged durable state from a leader (it holds no good copy, and
   * votes for nobody of its own): what a repairing server counts to tell whether enough good copies
   * are left for a quorum. The election itself ignores it. The number grows with each notification
   * the sender sends while repairing (1, 2, …), so a receiver tells a voter still repairing from its
   * last notification re-sent on a new link, which may be from before its repair finished.
   */
  repairing?: number;
}
