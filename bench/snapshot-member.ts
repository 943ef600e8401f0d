/**
 * One server of `npm run bench:snapshot`'s cluster: a production CorralServer in a process of its
 * own, started from the cluster's config file, that also takes a snapshot whenever its launcher
 * asks over IPC (corral has no snapshot command; this is the bench's way to take one on demand).
 *
 *   fork(dist/bench/snapshot-member.js, [configFile, serverId])
 *   → { kind: "serving" }   ← { kind: "snapshot" }   → { kind: "snapshotWritten", ms }
 */
import { loadConfig } from "../src/server/config.js";
import { createLogger } from "../src/server/log.js";
import { CorralServer } from "../src/server/server.js";

export type MemberRequest = { kind: "snapshot" } | { kind: "stop" };
export type MemberReport = { kind: "serving" } | { kind: "snapshotWritten"; ms: number } | { kind: "stopped" };

async function main(): Promise<void> {
  const [configFile, serverId, dataDir] = process.argv.slice(2);
  if (configFile === undefined || serverId === undefined || dataDir === undefined || process.send === undefined) {
    throw new Error("usage: fork(snapshot-member.js, [configFile, serverId, dataDir]) with an IPC channel");
  }
  const send = (report: MemberReport): void => void process.send!(report);
  const config = loadConfig({ file: configFile, flags: { "server-id": serverId, "data-dir": dataDir, "log-level": "warn" }, env: {} });
  const server = await CorralServer.start(config, createLogger(config.logLevel, { serverId: config.serverId }));
  process.on("message", (request: MemberRequest) => {
    if (request.kind === "snapshot") {
      const started = performance.now();
      void server.snapshot().then(() => send({ kind: "snapshotWritten", ms: performance.now() - started }));
    } else {
      void server.stop().then(() => {
        send({ kind: "stopped" });
        process.exit(0);
      });
    }
  });
  // The launcher is gone (even killed): go too.
  process.on("disconnect", () => void server.stop().then(() => process.exit(0)));
  send({ kind: "serving" });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
