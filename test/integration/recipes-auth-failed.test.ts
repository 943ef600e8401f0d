/**
 * Recipes on a session whose SASL login is refused on a new connection (the client's "authFailed"
 * state, ZooKeeper's AUTH_FAILED): the client never reconnects, so a recipe that waited for a
 * reconnect would wait forever. Instead each stops and reports ZkError AUTHFAILED — a lock's
 * waiting acquire and a held lock, a leader election's waiting candidate, a tree cache — and later
 * calls fail at once. A real server process with a DIGEST-MD5 JAAS section forgets bob's password
 * across a restart; carol, whose password holds, keeps her lock and her leadership.
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client, LeaderElection, Lock, TreeCache, ZkError, type SaslOptions } from "../../src/index.js";
import type { RevokedReason } from "../../src/index.js";
import { digestServerJaas } from "../helpers/jaas-files.js";
import { startSaslServer } from "../helpers/sasl-server.js";
import type { ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";

const BOB: SaslOptions = { mechanism: "DIGEST-MD5", username: "bob", password: "bob-secret" };
const CAROL: SaslOptions = { mechanism: "DIGEST-MD5", username: "carol", password: "carol-secret" };
/** Sessions that outlive the server's restart. */
const SESSION_MS = 30_000;

const isAuthFailed = (error: unknown) => error instanceof ZkError && error.code === "AUTHFAILED";

/** A promise's rejection, kept from the moment it is made (so that none goes unhandled). */
function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => new Error("resolved, not rejected"),
    (error: unknown) => error,
  );
}

describe("recipes stop with AUTHFAILED when their session's SASL login is refused", { concurrency: 1 }, () => {
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let server: ServerProcess;
  let carol: Client;
  let bob: Client;
  let carolLock: Lock;
  let carolElection: LeaderElection;
  let bobHeldLock: Lock;
  let bobElection: LeaderElection;
  let cache: TreeCache;
  const seen: { waitingAcquire?: unknown; heldLockLost?: ZkError; awaitLeadership?: unknown; electionLost?: RevokedReason; cacheLost?: ZkError } = {};

  before(async () => {
    dir = await makeTempDir("corral-recipes-auth-failed-");
    server = await startSaslServer(dir.path, "recipes", digestServerJaas({ bob: "bob-secret", carol: "carol-secret" }), {
      extraArgs: ["--max-session-timeout-ms", String(SESSION_MS)],
    });
    carol = await Client.connect(server.connectString, { sasl: CAROL, sessionTimeoutMs: SESSION_MS });
    bob = await Client.connect(server.connectString, { sasl: BOB, sessionTimeoutMs: SESSION_MS });

    // carol holds /af/lock and leads /af/election; bob waits for both, holds /af/bob-lock and mirrors /af.
    carolLock = new Lock(carol, "/af/lock");
    await carolLock.acquire();
    carolElection = new LeaderElection(carol, "/af/election");
    await carolElection.start();
    await carolElection.awaitLeadership();
    bobHeldLock = new Lock(bob, "/af/bob-lock");
    await bobHeldLock.acquire();
    bobHeldLock.once("lost", (error) => (seen.heldLockLost = error));
    const bobWaiting = new Lock(bob, "/af/lock");
    const waitingAcquire = rejectionOf(bobWaiting.acquire());
    bobElection = new LeaderElection(bob, "/af/election");
    bobElection.once("lost", (reason) => (seen.electionLost = reason));
    await bobElection.start();
    const awaitLeadership = rejectionOf(bobElection.awaitLeadership());
    cache = new TreeCache(bob, "/af");
    cache.once("lost", (error) => (seen.cacheLost = error));
    await cache.start();
    await waitFor("bob's acquire waiting behind carol", () => bobWaiting.waitingFor);

    // The server forgets bob's password: his session's next login, after the restart, is refused.
    await writeFile(join(dir.path, "recipes.jaas"), digestServerJaas({ bob: "changed", carol: "carol-secret" }));
    await server.stop();
    await server.restart();
    seen.waitingAcquire = await waitingAcquire;
    seen.awaitLeadership = await awaitLeadership;
  });

  after(async () => {
    cache?.close();
    await bob?.close().catch(() => undefined);
    await carol?.close().catch(() => undefined);
    await server?.stop();
    await dir?.remove();
  });

  test("the session ends in authFailed and the client does not reconnect", () => {
    assert.equal(bob.state, "authFailed");
  });

  test("lock: a waiting acquire rejects with AUTHFAILED, a held lock reports 'lost' with AUTHFAILED, a new acquire fails at once", async () => {
    assert.ok(isAuthFailed(seen.waitingAcquire), String(seen.waitingAcquire));
    assert.ok(isAuthFailed(seen.heldLockLost), String(seen.heldLockLost));
    assert.equal(bobHeldLock.isHeld, false);
    await assert.rejects(new Lock(bob, "/af/lock").acquire(), isAuthFailed);
    // carol logged in again after the restart and still holds her lock.
    await waitFor("carol reconnected", () => carol.connected || undefined);
    assert.equal(carolLock.isHeld, true);
  });

  test("leader election: a waiting candidate's awaitLeadership rejects with AUTHFAILED, 'lost' says authFailed, and it never claims again", async () => {
    assert.ok(isAuthFailed(seen.awaitLeadership), String(seen.awaitLeadership));
    assert.equal(seen.electionLost, "authFailed");
    assert.equal(bobElection.status, "lost");
    await assert.rejects(bobElection.awaitLeadership(), isAuthFailed);
    await waitFor("carol leads again", () => carolElection.isLeader || undefined);
  });

  test("tree cache: it reports 'lost' with AUTHFAILED, clears its mirror and stops", () => {
    assert.ok(isAuthFailed(seen.cacheLost), String(seen.cacheLost));
    assert.equal(cache.running, false);
    assert.equal(cache.size, 0);
  });
});
