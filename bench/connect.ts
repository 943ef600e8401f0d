import type { ClientTlsOptions } from "../src/index.js";
import { errorLabel, type BenchConnection, type BenchTarget } from "./target.js";

const CLOSE_TIMEOUT_MS = 5_000;

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Opens `count` connections, connection i to hosts[i % hosts.length] (the reference setup's "spread over the
 * servers"). All or nothing: on any failure the others are closed and the first failure thrown.
 */
export async function connectAll(
  target: BenchTarget,
  hosts: readonly string[],
  count: number,
  options: { sessionTimeoutMs: number; connectTimeoutMs: number; tls?: ClientTlsOptions },
): Promise<BenchConnection[]> {
  if (hosts.length === 0) throw new RangeError("no hosts");
  const attempts = Array.from({ length: count }, (_, i) => {
    const host = hosts[i % hosts.length]!;
    return { host, attempt: target.connect(host, { sessionTimeoutMs: options.sessionTimeoutMs, ...(options.tls === undefined ? {} : { tls: options.tls }) }) };
  });
  const settled = await Promise.allSettled(attempts.map(({ host, attempt }) => withTimeout(attempt, options.connectTimeoutMs, `connect to ${host}`)));
  const connections = settled.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  const failures = settled.flatMap((s, i) => (s.status === "rejected" ? [{ host: attempts[i]!.host, error: s.reason as unknown }] : []));
  const firstFailure = failures[0];
  if (firstFailure === undefined) return connections;
  // An attempt that timed out may still succeed later: close it when it does.
  for (const { attempt } of attempts) {
    attempt.then(
      (connection) => (connections.includes(connection) ? undefined : connection.close().catch(() => undefined)),
      () => undefined,
    );
  }
  await closeAll(connections);
  const detail = firstFailure.error instanceof Error ? firstFailure.error.message : errorLabel(firstFailure.error);
  throw new Error(`${failures.length} of ${count} connections failed, e.g. ${firstFailure.host}: ${detail}`, {
    cause: firstFailure.error,
  });
}

/** Closes every connection, giving each at most a few seconds. */
export async function closeAll(connections: readonly BenchConnection[]): Promise<void> {
  await Promise.allSettled(connections.map((c) => withTimeout(c.close(), CLOSE_TIMEOUT_MS, "close")));
}
