/**
 * The set workload: each "add" creates one child znode named by a unique element, and at the end
 * every server is read after a sync. Acknowledged creates must survive on every server, nothing may
 * appear that no one tried to add (or whose create definitively failed), and the servers must agree.
 */
import type { AddOp, FinalSetRead, Op, Verdict } from "../history.js";
import { describeOp, Findings, verdictOf } from "./format.js";

export const SET_CHECKER = "set";

const MAX_ELEMENTS_LISTED = 10;

function listed(elements: string[]): string {
  const shown = elements.slice(0, MAX_ELEMENTS_LISTED).map((e) => JSON.stringify(e));
  return elements.length > MAX_ELEMENTS_LISTED ? `${shown.join(", ")} … (${elements.length} in all)` : shown.join(", ");
}

export function checkSet(ops: readonly Op[], finals: readonly FinalSetRead[]): Verdict {
  const findings = new Findings();
  /** Every add of each element (a retried add after CONNECTIONLOSS may name the same element). */
  const addsOf = new Map<string, AddOp[]>();
  for (const op of ops) {
    if (op.f !== "add") continue;
    let adds = addsOf.get(op.element);
    if (adds === undefined) addsOf.set(op.element, (adds = []));
    adds.push(op);
  }
  const acknowledged = [...addsOf].filter(([, adds]) => adds.some((a) => a.outcome === "ok")).map(([element]) => element);
  const unknown = [...addsOf]
    .filter(([, adds]) => adds.every((a) => a.outcome !== "ok") && adds.some((a) => a.outcome === "unknown"))
    .map(([element]) => element);
  const finalSets = finals.map((read) => ({ server: read.server, elements: new Set(read.elements) }));
  const present = new Set(finals.flatMap((read) => read.elements));

  const lost = new Set<string>();
  for (const { server, elements } of finalSets) {
    const missing = acknowledged.filter((e) => !elements.has(e));
    missing.forEach((e) => lost.add(e));
    if (missing.length > 0) findings.add(`server ${server} lacks ${missing.length} acknowledged elements: ${listed(missing)}`);
  }

  const phantoms = [...present].filter((e) => !addsOf.has(e));
  if (phantoms.length > 0) findings.add(`elements present that no add attempted: ${listed(phantoms)}`);
  for (const element of present) {
    const adds = addsOf.get(element);
    if (adds !== undefined && adds.every((a) => a.outcome === "fail")) {
      findings.add(`element present although its add definitively failed: ${adds.map(describeOp).join("; ")}`);
    }
  }

  const reference = finalSets[0];
  if (reference !== undefined) {
    for (const other of finalSets.slice(1)) {
      const onlyReference = [...reference.elements].filter((e) => !other.elements.has(e));
      const onlyOther = [...other.elements].filter((e) => !reference.elements.has(e));
      if (onlyReference.length > 0 || onlyOther.length > 0) {
        findings.add(
          `servers ${reference.server} and ${other.server} diverge: only on ${reference.server}: [${listed(onlyReference)}]; only on ${other.server}: [${listed(onlyOther)}]`,
        );
      }
    }
  }

  const unread = finals.length === 0 && addsOf.size > 0 ? "no final read of the set: acknowledged adds cannot be checked" : undefined;
  return verdictOf(
    SET_CHECKER,
    findings,
    {
      attempted: addsOf.size,
      acknowledged: acknowledged.length,
      unknown: unknown.length,
      unknownAppeared: unknown.filter((e) => present.has(e)).length,
      lost: lost.size,
      serversRead: finals.length,
    },
    unread,
  );
}
