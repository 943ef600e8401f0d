/**
 * The lock workload, judged by fencing tokens rather than by who believed it held the lock: with
 * sessions that expire, two workers can both believe they hold it (one has not yet learned its
 * session died), and ZooKeeper locks are only safe when the protected resource refuses stale tokens.
 * Tokens are zxids, so they compare as 64-bit numbers, never as text ("9" > "10" as strings).
 *   V1 no two grants share a token;
 *   V2 a grant that completed before another was requested has the smaller token;
 *   V3 the resource never accepts a token below one it already accepted, and only granted tokens;
 *   V4 a stale use refused with FENCED is the mechanism working, counted, not a violation.
 */
import type { AcquireOp, Op, UseOp, Verdict } from "../history.js";
import { describeOp, Findings, parseZxid } from "./format.js";

export const FENCED_LOCK_CHECKER = "fenced-lock";

interface Grant {
  op: AcquireOp;
  token: bigint;
}

export function checkFencedLock(ops: readonly Op[]): Verdict {
  const findings = new Findings();
  const processes = new Set<number>();
  const grants: Grant[] = [];
  const grantOf = new Map<bigint, Grant>();

  for (const op of ops) {
    if (op.f !== "acquire" && op.f !== "use" && op.f !== "release") continue;
    processes.add(op.process);
    if (op.f !== "acquire" || op.outcome !== "ok") continue;
    const token = op.token === undefined ? undefined : parseZxid(op.token);
    if (token === undefined || op.completedAt === undefined) {
      findings.add(`history malformed: ok acquire without a decimal token or completedAt: ${describeOp(op)}`);
      continue;
    }
    const grant = { op, token };
    const earlier = grantOf.get(token);
    if (earlier !== undefined) findings.add(`V1 two grants of token ${token}: ${describeOp(earlier.op)} and ${describeOp(op)}`);
    else grantOf.set(token, grant);
    grants.push(grant);
  }

  // V2: sweep the grants by request time, folding in every grant completed strictly before it.
  // Touching intervals are concurrent (the clock cannot order them), and an equal token is V1's.
  const byCompletion = [...grants].sort((a, b) => a.op.completedAt! - b.op.completedAt!);
  const byRequest = [...grants].sort((a, b) => a.op.invokedAt - b.op.invokedAt);
  let completed = 0;
  let highest: Grant | undefined;
  for (const grant of byRequest) {
    while (completed < byCompletion.length && byCompletion[completed]!.op.completedAt! < grant.op.invokedAt) {
      const done = byCompletion[completed++]!;
      if (highest === undefined || done.token > highest.token) highest = done;
    }
    if (highest !== undefined && highest.token > grant.token) {
      findings.add(`V2 tokens went backwards in real time: ${describeOp(highest.op)} completed before ${describeOp(grant.op)} was requested`);
    }
  }

  // V3: the resource's accept order is the uses' completion order. Uses completing at the same
  // instant cannot be ordered, so they are taken lowest token first, the order that accuses none.
  for (const op of ops) {
    if ((op.f === "use" || op.f === "release") && !grantOf.has(parseZxid(op.token) ?? -1n)) {
      findings.add(`V3 ${op.f} of a token no acquire was granted: ${describeOp(op)}`);
    }
  }
  const accepted = ops
    .filter((op): op is UseOp => op.f === "use" && op.outcome === "ok")
    .map((op) => ({ op, token: parseZxid(op.token) }))
    .filter((use): use is { op: UseOp; token: bigint } => use.token !== undefined)
    .sort((a, b) => (a.op.completedAt ?? Infinity) - (b.op.completedAt ?? Infinity) || (a.token < b.token ? -1 : a.token > b.token ? 1 : a.op.id - b.op.id));
  let newest: { op: UseOp; token: bigint } | undefined;
  for (const use of accepted) {
    if (newest !== undefined && use.token < newest.token) {
      findings.add(`V3 stale token accepted: ${describeOp(use.op)} after the resource had accepted ${describeOp(newest.op)}`);
    }
    if (newest === undefined || use.token > newest.token) newest = use;
  }

  const staleUsesFenced = ops.filter((op) => op.f === "use" && op.outcome === "fail" && op.error === "FENCED").length;
  return {
    checker: FENCED_LOCK_CHECKER,
    valid: findings.total === 0,
    violations: findings.list(),
    stats: { grants: grants.length, usesAccepted: accepted.length, staleUsesFenced, processes: processes.size },
  };
}
