/**
 * Two-phase commit, ZooKeeper's recipe. Layout under `path/<txId>`:
 *   <site>        one per site, persistent: "" (not joined) → "joined" → "commit" | "abort"
 *   alive-<site>  ephemeral, created atomically with "joined": the site's session is alive
 *   outcome       "commit" | "abort", created once by the coordinator — the decision
 */
import type { Client } from "../client/client.js";
import { op } from "../client/ops.js";
import type { Watcher } from "../client/types.js";
import { ZkError } from "../common/errors.js";
import { type Deadline, ensurePath, retryOnConnectionLoss, withDeadline, type WaitOptions } from "./common.js";
import { deleteOwnEphemeral, isZkError, orIfNoNode, textOf } from "./common.js";

/** A participant's vote. */
export type TwoPhaseVote = "commit" | "abort";
/** What the coordinator decided: commit only if every participant voted commit in time. */
export type TwoPhaseOutcome = "commit" | "abort";

/** A site child's data once the site has joined but not voted. */
export const JOINED = "joined";
const OUTCOME = "outcome";
const ALIVE = "alive-";

/**
 * What the coordinator read of one site: its child's data ("", "joined", "commit", "abort") and,
 * for a joined site, whether `alive-<site>` still existed after the site was seen joined.
 */
export interface SiteState {
  site: string;
  vote: string;
  alive: boolean;
}

/**
 * The coordinator's rule: abort as soon as one site voted abort, or joined and lost its session
 * before voting (alive node gone, read before the vote); commit once every site voted commit;
 * otherwise undecided.
 */
export function decideOutcome(sites: readonly SiteState[]): TwoPhaseOutcome | undefined {
  let allCommitted = true;
  for (const site of sites) {
    if (site.vote === "abort") return "abort";
    if (site.vote === JOINED && !site.alive) return "abort";
    if (site.vote !== "commit") allCommitted = false;
  }
  return allCommitted ? "commit" : undefined;
}

/** Throws BADARGUMENTS unless `sites` is a non-empty list of distinct names usable as site nodes. */
export function checkSites(sites: readonly string[]): void {
  if (sites.length === 0) throw new ZkError("BADARGUMENTS", "two-phase commit needs at least one site");
  if (new Set(sites).size !== sites.length) throw new ZkError("BADARGUMENTS", "two-phase commit sites must be distinct");
  for (const site of sites) checkSite(site);
}

function checkSite(site: string): void {
  if (site.length === 0 || site.includes("/") || site.includes("\n") || site === "." || site === ".." || site === OUTCOME || site.startsWith(ALIVE)) {
    throw new ZkError("BADARGUMENTS", `bad two-phase commit site name: ${JSON.stringify(site)}`);
  }
}

function checkTxId(txId: string): void {
  if (txId.length === 0 || txId.includes("/") || txId === "." || txId === "..") {
    throw new ZkError("BADARGUMENTS", `bad two-phase commit transaction id: ${JSON.stringify(txId)}`);
  }
}

function asOutcome(text: string, path: string): TwoPhaseOutcome {
  if (text === "commit" || text === "abort") return text;
  throw new ZkError("BADARGUMENTS", `${path} holds ${JSON.stringify(text)}, not an outcome`);
}

/**
 * Two-phase commit among named sites.
 *
 * Guarantees: the outcome is decided once (a `create` of `outcome`: whoever comes second gets
 * NODEEXISTS and reads the first decision) and every participant's `outcome()` answers that same
 * value. The coordinator commits only if every site voted commit, and aborts at the first abort
 * vote without waiting for the others, or when a site that joined loses its session before voting.
 *
 * Session loss: a site's session expiring before its vote aborts the transaction; a coordinator
 * whose session expires stops (SESSIONEXPIRED) without deciding, and `coordinate` called again
 * with the same txId and sites (from any session) resumes the decision from the znodes. A
 * coordinator abandoned by timeout/abort decides "abort" (unless an outcome exists) so no
 * participant waits forever.
 */
export class TwoPhaseCommit {
  private constructor() {}

  /**
   * Creates transaction `txId` with one child per site (atomically; an existing transaction with
   * the same sites is resumed), then waits for the votes and writes the outcome. Resolves with the
   * outcome — the one written first if another coordinator decided.
   */
  static async coordinate(client: Client, path: string, txId: string, sites: readonly string[], options: WaitOptions = {}): Promise<TwoPhaseOutcome> {
    checkTxId(txId);
    checkSites(sites);
    const txPath = `${path}/${txId}`;
    return withDeadline(`two-phase commit ${txPath}: coordinate`, options, client, async (deadline) => {
      try {
        await retryOnConnectionLoss(client, deadline, () => ensurePath(client, path));
        await retryOnConnectionLoss(client, deadline, () => createTransaction(client, txPath, sites));
        return await decide(client, txPath, sites, deadline);
      } catch (error) {
        if (isZkError(error, "OPERATIONTIMEOUT")) await decideAbortIfUndecided(client, txPath);
        throw error;
      }
    });
  }

  /**
   * Joins as `site` (waiting for the coordinator to create the transaction): marks the site
   * "joined" and creates its ephemeral `alive-<site>` node in one multi, so from now on this
   * session's death before a vote aborts. Abandoned (timeout/abort), a join that landed is undone
   * by deleting the alive node, which aborts the transaction.
   */
  static async join(client: Client, path: string, txId: string, site: string, options: WaitOptions = {}): Promise<void> {
    checkTxId(txId);
    checkSite(site);
    const sitePath = `${path}/${txId}/${site}`;
    const alivePath = `${path}/${txId}/${ALIVE}${site}`;
    await withDeadline(`two-phase commit ${sitePath}: join`, options, client, async (deadline) => {
      let joining: Promise<unknown> | undefined;
      try {
        for (;;) {
          deadline.check();
          await waitUntilCreated(client, sitePath, deadline);
          const read = await retryOnConnectionLoss(client, deadline, () => readIfExists(client, sitePath));
          if (read === null) continue;
          if (read.version > 0) {
            // Joined already — by an earlier attempt of ours whose answer was lost, or by someone else.
            const alive = await retryOnConnectionLoss(client, deadline, () => client.exists(alivePath));
            if (alive !== null && alive.ephemeralOwner === client.sessionId) return;
            throw new ZkError("NODEEXISTS", `two-phase commit ${sitePath}: site already joined (${read.text || "?"})`, sitePath);
          }
          joining = client.multi([op.setData(sitePath, JOINED, { version: 0 }), op.create(alivePath, "", { mode: "ephemeral" })]);
          try {
            await deadline.race(joining);
            return;
          } catch (error) {
            if (isZkError(error, "CONNECTIONLOSS")) {
              await retryOnConnectionLoss(client, deadline, () => client.exists(sitePath));
            } else if (!isZkError(error, "BADVERSION") && !isZkError(error, "NODEEXISTS")) {
              throw error;
            }
          }
        }
      } catch (error) {
        if (isZkError(error, "OPERATIONTIMEOUT") && joining !== undefined) {
          const landed = joining;
          // A session that is gone took the ephemeral with it: nothing is left to remove then.
          const removeAlive = (): Promise<void> => deleteOwnEphemeral(client, alivePath).catch(() => undefined);
          void landed.then(removeAlive, removeAlive);
        }
        throw error;
      }
    });
  }

  /**
   * Writes `site`'s vote (once: the same vote again is a no-op, a different one fails BADVERSION).
   * Joining first is what makes this site's death count as abort; a vote alone is also accepted.
   */
  static async vote(client: Client, path: string, txId: string, site: string, vote: TwoPhaseVote, options: WaitOptions = {}): Promise<void> {
    checkTxId(txId);
    checkSite(site);
    if (vote !== "commit" && vote !== "abort") throw new ZkError("BADARGUMENTS", `a vote is "commit" or "abort", not ${JSON.stringify(vote)}`);
    const sitePath = `${path}/${txId}/${site}`;
    // Compare-and-set on the site's version: repeating after a lost connection is safe.
    await withDeadline(`two-phase commit ${sitePath}: vote`, options, client, (deadline) =>
      retryOnConnectionLoss(client, deadline, async () => {
        for (;;) {
          const { data, stat } = await client.getData(sitePath);
          const current = textOf(data);
          if (current === "commit" || current === "abort") {
            if (current === vote) return;
            throw new ZkError("BADVERSION", `two-phase commit ${sitePath}: already voted ${current}`, sitePath);
          }
          try {
            await client.setData(sitePath, vote, { version: stat.version });
            return;
          } catch (error) {
            if (!isZkError(error, "BADVERSION")) throw error;
          }
        }
      }),
    );
  }

  /** The outcome of `txId`, waiting (one watch on the outcome node) until it is decided. */
  static async outcome(client: Client, path: string, txId: string, options: WaitOptions = {}): Promise<TwoPhaseOutcome> {
    checkTxId(txId);
    const outcomePath = `${path}/${txId}/${OUTCOME}`;
    return withDeadline(`two-phase commit ${outcomePath}: outcome`, options, client, async (deadline) => {
      await waitUntilCreated(client, outcomePath, deadline);
      return readOutcome(client, outcomePath, deadline);
    });
  }

  /** Deletes transaction `txId` and everything under it (once every participant has its outcome). */
  static async remove(client: Client, path: string, txId: string, options: WaitOptions = {}): Promise<void> {
    checkTxId(txId);
    const txPath = `${path}/${txId}`;
    await withDeadline(`two-phase commit ${txPath}: remove`, options, client, (deadline) =>
      retryOnConnectionLoss(client, deadline, async () => {
        for (;;) {
          const children = await orIfNoNode(client.getChildren(txPath), null);
          if (children === null) return;
          try {
            await client.multi([...children.map((child) => op.delete(`${txPath}/${child}`)), op.delete(txPath)]);
            return;
          } catch (error) {
            // A child came or went meanwhile: read again.
            if (!isZkError(error, "NONODE") && !isZkError(error, "NOTEMPTY")) throw error;
          }
        }
      }),
    );
  }
}

/** Creates the transaction node and every site child in one multi; an identical existing one is fine. */
async function createTransaction(client: Client, txPath: string, sites: readonly string[]): Promise<void> {
  const description = sites.join("\n");
  try {
    await client.multi([op.create(txPath, description), ...sites.map((site) => op.create(`${txPath}/${site}`, ""))]);
  } catch (error) {
    if (!isZkError(error, "NODEEXISTS")) throw error;
    const { data } = await client.getData(txPath);
    if (textOf(data) !== description) {
      throw new ZkError("BADARGUMENTS", `two-phase commit ${txPath} exists with other sites: ${textOf(data).split("\n").join(", ")}`, txPath);
    }
  }
}

/** The coordinator's loop: read everything with watches, decide if the rule allows, else wait for a watch. */
async function decide(client: Client, txPath: string, sites: readonly string[], deadline: Deadline): Promise<TwoPhaseOutcome> {
  const outcomePath = `${txPath}/${OUTCOME}`;
  let wake: () => void = () => undefined;
  const watcher: Watcher = () => wake();
  for (;;) {
    deadline.check();
    // Armed before the reads, so an event during them is not missed.
    const woken = new Promise<void>((resolve) => (wake = resolve));
    const decided = await retryOnConnectionLoss(client, deadline, () => client.exists(outcomePath, { watch: watcher }));
    if (decided !== null) return readOutcome(client, outcomePath, deadline);
    const states = await retryOnConnectionLoss(client, deadline, () => readSites(client, txPath, sites, watcher));
    const decision = decideOutcome(states);
    if (decision !== undefined) {
      await retryOnConnectionLoss(client, deadline, () => createOutcome(client, outcomePath, decision));
      return readOutcome(client, outcomePath, deadline);
    }
    await deadline.race(woken);
  }
}

/**
 * Each site's vote and, for a site that has joined but not voted, whether it is still alive. The
 * order of the reads is what makes "died before voting" sound: "joined" (so its alive node had been
 * created), then no alive node (so its session has ended since), then still "joined" (so it did not
 * vote before dying — and a dead session cannot vote any more).
 */
async function readSites(client: Client, txPath: string, sites: readonly string[], watcher: Watcher): Promise<SiteState[]> {
  const states: SiteState[] = [];
  for (const site of sites) {
    const sitePath = `${txPath}/${site}`;
    let vote = textOf((await client.getData(sitePath, { watch: watcher })).data);
    let alive = true;
    if (vote === JOINED) {
      alive = (await client.exists(`${txPath}/${ALIVE}${site}`, { watch: watcher })) !== null;
      if (!alive) vote = textOf((await client.getData(sitePath)).data);
    }
    const state = { site, vote, alive };
    states.push(state);
    if (decideOutcome([state]) === "abort") break; // short-circuit: the rest cannot change an abort
  }
  return states;
}

async function createOutcome(client: Client, outcomePath: string, outcome: TwoPhaseOutcome): Promise<void> {
  try {
    await client.create(outcomePath, outcome);
  } catch (error) {
    // Decided already (by us before a lost connection, or by another coordinator): that decision stands.
    if (!isZkError(error, "NODEEXISTS")) throw error;
  }
}

async function readOutcome(client: Client, outcomePath: string, deadline: Deadline): Promise<TwoPhaseOutcome> {
  const { data } = await retryOnConnectionLoss(client, deadline, () => client.getData(outcomePath));
  return asOutcome(textOf(data), outcomePath);
}

/** An abandoned coordinator aborts (bounded only by its session), unless an outcome exists. */
async function decideAbortIfUndecided(client: Client, txPath: string): Promise<void> {
  await withDeadline(`two-phase commit ${txPath}: abort on abandon`, {}, client, async (deadline) => {
    try {
      await retryOnConnectionLoss(client, deadline, () => createOutcome(client, `${txPath}/${OUTCOME}`, "abort"));
    } catch {
      // No transaction (NONODE) or no session: nothing to decide.
    }
  });
}

/** Resolves once `path` exists (one exists-watch per round, no polling). */
async function waitUntilCreated(client: Client, path: string, deadline: Deadline): Promise<void> {
  for (;;) {
    deadline.check();
    let fired: () => void = () => undefined;
    const event = new Promise<void>((resolve) => (fired = resolve));
    const stat = await retryOnConnectionLoss(client, deadline, () => client.exists(path, { watch: () => fired() }));
    if (stat !== null) return;
    await deadline.race(event);
  }
}

async function readIfExists(client: Client, path: string): Promise<{ text: string; version: number } | null> {
  const node = await orIfNoNode(client.getData(path), null);
  return node && { text: textOf(node.data), version: node.stat.version };
}
