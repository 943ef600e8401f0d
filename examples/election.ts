/**
 * Three candidates (three sessions) in one LeaderElection; each leader resigns in turn and the
 * next candidate takes over, printing its fencing token.
 *
 *   npm start                                   # a three-voter cluster, in another terminal
 *   npm run build && node dist/examples/election.js [connectString]
 *
 * Only the candidate right after the leader is woken by a resignation (it watches only its
 * predecessor's node), and each new leader's fencing token (the czxid of its candidate node) is
 * larger than the last one's.
 */
import { Client, LeaderElection } from "../src/index.js";

const connectString = process.argv[2] ?? "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183";
const ELECTION_PATH = "/examples/election";
const NAMES = ["alice", "bob", "carol"];

async function main(): Promise<void> {
  const clients = await Promise.all(NAMES.map(() => Client.connect(connectString, { sessionTimeoutMs: 10_000 })));
  try {
    const candidates = NAMES.map((name, i) => {
      const election = new LeaderElection(clients[i]!, ELECTION_PATH, { id: name });
      election.on("elected", (token) => console.log(`${name}: elected (fencing token ${token})`));
      election.on("revoked", (reason) => console.log(`${name}: no longer leader (${reason})`));
      return election;
    });
    // One after another, so the line of succession is alice, bob, carol.
    for (const election of candidates) await election.start({ timeoutMs: 30_000 });
    for (const election of candidates) {
      await election.awaitLeadership({ timeoutMs: 30_000 });
      console.log(`${election.id}: leads; the leader is ${await election.leaderId()}; resigning`);
      await election.resign();
    }
  } finally {
    await Promise.allSettled(clients.map((client) => client.close()));
  }
}

// Closed sessions leave nothing running: the process ends by itself.
main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
