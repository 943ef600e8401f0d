/**
 * Which server a session tries next: ZooKeeper's StaticHostProvider, without randomness of its
 * own. The caller gives the hosts in the order to try them (shuffled or not) and the draws
 * updateServerList needs, so that the choices replay exactly in test/sim and in tests. Kept apart
 * from the session machine because it is one policy with its own state: where round robin stands,
 * where a move after a server list change stands, and where the probes for a read-write server stand.
 *
 * The server list can change under a running session (ZooKeeper's updateServerList,
 * ZOOKEEPER-1355): when servers join or leave, each client decides on its own whether to move,
 * with probabilities chosen so that the clients end up spread evenly over the new list without
 * any of them talking to another.
 */
import { assert } from "../common/assert.js";
import type { HostPort } from "./connect-string.js";

/**
 * After updateServerList decided to move (ZooKeeper's reconfigMode): the next attempts take a
 * server of the new list that was not in the previous one with probability `probNew`, else one
 * that was, each set in the new list's order and each server once; then round robin as always.
 */
interface Reconfig {
  readonly newHosts: readonly HostPort[];
  readonly oldHosts: readonly HostPort[];
  readonly probNew: number;
  readonly random: () => number;
  nextNew: number;
  nextOld: number;
}

/** What updateServerList decided, with what it decided from (for the log). */
export interface ServerListDecision {
  /** Set when the session moves: the chance that each attempt picks a server new to the list. */
  probNew: number | undefined;
  fields: { from: HostPort; servers: number; before: number; newServers: number; kept: boolean };
}

export class HostProvider {
  /** The servers, in the order to try them: the first list until `update` replaces it. */
  private hosts: readonly HostPort[];
  /** Where the next attempt looks when not in reconfig mode: hosts are tried round-robin. */
  private nextIndex = 0;
  /** The server of the last connection the session had or tried (before any, the first to try): "its server" while it has none. */
  private lastHost: HostPort;
  /** Set while moving after `update`, until a connection opens or every server was tried. */
  private reconfig: Reconfig | null = null;
  /** Where the next probe for a read-write server looks: round robin from the one after the read-only server. */
  private probeIndex = 0;

  constructor(hosts: readonly HostPort[]) {
    assert(hosts.length > 0, "a session needs a host");
    this.hosts = hosts.slice();
    this.lastHost = this.hosts[0] as HostPort;
  }

  get servers(): readonly HostPort[] {
    return this.hosts;
  }

  /** The server of the next attempt: reconfig mode's pick while it lasts, else the next in round robin. */
  next(): HostPort {
    const host = this.pick();
    this.lastHost = host;
    return host;
  }

  private pick(): HostPort {
    const hosts = this.hosts;
    const reconfig = this.reconfig;
    if (reconfig !== null) {
      const host = nextReconfigHost(reconfig);
      if (host !== undefined) {
        // Round robin goes on from there once reconfig mode ends.
        this.nextIndex = (indexOfHost(hosts, host) + 1) % hosts.length;
        return host;
      }
      // Every server of the new list was tried once and none took the session.
      this.reconfig = null;
    }
    const host = hosts[this.nextIndex] as HostPort;
    this.nextIndex = (this.nextIndex + 1) % hosts.length;
    return host;
  }

  /** A server holds the session now (ZooKeeper's onConnected): a move after `update` is over. */
  connected(): void {
    this.reconfig = null;
  }

  /** The session moved to `host` (a read-write server a probe found): round robin goes on after it. */
  movedTo(host: HostPort): void {
    this.lastHost = host;
    this.nextIndex = (indexOfHost(this.hosts, host) + 1) % this.hosts.length;
  }

  includes(host: HostPort): boolean {
    return indexOfHost(this.hosts, host) >= 0;
  }

  /** The session is served read-only: probing starts where round robin stands. */
  startProbing(): void {
    this.probeIndex = this.nextIndex;
  }

  /** The next host to ask for the session read-write, while `readOnlyHost` serves it read-only. */
  nextProbe(readOnlyHost: HostPort): HostPort {
    const hosts = this.hosts;
    // A list that `update` shrank may end before the index.
    this.probeIndex %= hosts.length;
    let host = hosts[this.probeIndex] as HostPort;
    this.probeIndex = (this.probeIndex + 1) % hosts.length;
    // Our read-only server ends our connection itself once it has a quorum again; a lone host is
    // still asked (a name behind which other servers may answer), as ZooKeeper's client does.
    if (sameHost(host, readOnlyHost) && hosts.length > 1) {
      host = hosts[this.probeIndex] as HostPort;
      this.probeIndex = (this.probeIndex + 1) % hosts.length;
    }
    return host;
  }

  /**
   * Replaces the server list with `hosts` (StaticHostProvider's updateServerList) and decides
   * whether the session, connected to `connectedHost` if it is, moves. A session whose server
   * stays in the list keeps its connection unless the list grew, when it moves with probability
   * 1 − old size / new size, so that each server keeps its share; one whose server left always
   * moves. Moving enters reconfig mode (see Reconfig and `next`).
   */
  update(hosts: readonly HostPort[], connectedHost: HostPort | undefined, random: () => number): ServerListDecision {
    assert(hosts.length > 0, "a session needs a host");
    const previous = this.hosts;
    // ZooKeeper's client asks its socket; between attempts, the server tried last is the one round robin goes on from.
    const current = connectedHost ?? this.lastHost;
    const kept = indexOfHost(hosts, current) >= 0;
    const oldHosts = hosts.filter((host) => indexOfHost(previous, host) >= 0);
    const newHosts = hosts.filter((host) => indexOfHost(previous, host) < 0);
    const sizeBefore = previous.length;
    const size = hosts.length;
    let probNew: number | undefined;
    if (size > sizeBefore) {
      // Each server should end with size⁻¹ of the clients, and each held sizeBefore⁻¹ of them: the
      // share that leaves every old server goes to the new ones.
      if (!kept || random() < 1 - sizeBefore / size) probNew = 1;
    } else if (!kept) {
      probNew = 1 - oldServerProbability(sizeBefore, oldHosts.length, size);
    }
    this.hosts = hosts.slice();
    const fields = { from: current, servers: size, before: sizeBefore, newServers: newHosts.length, kept };
    if (probNew === undefined) {
      // A move still under way from an earlier update is called off, as ZooKeeper's is.
      this.reconfig = null;
      this.nextIndex = (indexOfHost(this.hosts, current) + 1) % size;
      this.probeIndex = this.nextIndex;
    } else {
      this.reconfig = { newHosts, oldHosts, probNew, random, nextNew: 0, nextOld: 0 };
      this.nextIndex = 0;
    }
    return { probNew, fields };
  }
}

/**
 * A new server with probability probNew, else an old one; the other set once one is used up.
 * It draws only when both sets have a server left and the odds are not certain, so that a
 * scripted random source says exactly which choices were left to chance.
 */
function nextReconfigHost(reconfig: Reconfig): HostPort | undefined {
  const newLeft = reconfig.nextNew < reconfig.newHosts.length;
  const oldLeft = reconfig.nextOld < reconfig.oldHosts.length;
  if (!newLeft && !oldLeft) return undefined;
  let takeNew = newLeft;
  if (newLeft && oldLeft && reconfig.probNew < 1) takeNew = reconfig.probNew > 0 && reconfig.random() < reconfig.probNew;
  return takeNew ? reconfig.newHosts[reconfig.nextNew++] : reconfig.oldHosts[reconfig.nextOld++];
}

/**
 * When the list did not grow and our server left it: the chance of moving to a server that was in
 * the previous list (StaticHostProvider's pOld). The old servers that stay must each end with
 * 1/size of the clients; they hold 1/sizeBefore each already, so the clients that must move give
 * them only the difference, and the new servers the rest.
 */
function oldServerProbability(sizeBefore: number, oldCount: number, size: number): number {
  const denominator = size * (sizeBefore - oldCount);
  // Every previous server is in the list (so ours was not one of them): there is only the old set.
  if (denominator <= 0) return 1;
  return Math.min(1, Math.max(0, (oldCount * (sizeBefore - size)) / denominator));
}

/** Hosts are the same server when their names and ports are (the list holds fresh objects after an update). */
function sameHost(a: HostPort, b: HostPort): boolean {
  return a.host === b.host && a.port === b.port;
}

function indexOfHost(hosts: readonly HostPort[], host: HostPort): number {
  return hosts.findIndex((candidate) => sameHost(candidate, host));
}
