/**
 * The unique-id workload (sequential creates, the appended sequence number the id): under each
 * parent no id is handed out twice, ids increase in real time (an id taken after another's answer
 * arrived is larger), every acknowledged id's node is on every server at the end, no node appears
 * that no create attempted (or whose create definitively failed) or twice for one create, and the
 * servers agree.
 */
import type { FinalIdRead, Op, TakeIdOp, Verdict } from "../history.js";
import { describeOp, Findings, verdictOf } from "./format.js";

export const UNIQUE_IDS_CHECKER = "unique-ids";

/** `<parent>/<tag>-<ten digits>`, as a sequential create names its node. */
export function idNodePath(parent: string, tag: string, id: number): string {
  return `${parent}/${tag}-${String(id).padStart(10, "0")}`;
}

const NODE = /^(.*)\/([^/]+)-(\d{10})$/;

export function checkUniqueIds(ops: readonly Op[], finals: readonly FinalIdRead[]): Verdict {
  const findings = new Findings();
  const takes = ops.filter((op): op is TakeIdOp => op.f === "take-id");
  const byTag = new Map(takes.map((op) => [op.tag, op]));
  const acknowledged = takes.filter((op) => op.outcome === "ok" && op.result !== undefined);

  const byParent = new Map<string, TakeIdOp[]>();
  for (const op of acknowledged) {
    let parentOps = byParent.get(op.parent);
    if (parentOps === undefined) byParent.set(op.parent, (parentOps = []));
    parentOps.push(op);
  }
  for (const [parent, parentOps] of byParent) {
    const holder = new Map<number, TakeIdOp>();
    for (const op of parentOps) {
      const id = op.result!.id;
      const other = holder.get(id);
      if (other !== undefined) findings.add(`id ${id} under ${parent} handed out twice: ${describeOp(other)}; ${describeOp(op)}`);
      else holder.set(id, op);
    }
    checkIncreasing(parentOps, findings);
  }

  for (const { server, nodes } of finals) {
    const present = new Set(nodes);
    const lost = acknowledged.filter((op) => !present.has(idNodePath(op.parent, op.tag, op.result!.id)));
    for (const op of lost.slice(0, 5)) findings.add(`server ${server} lacks the node of an acknowledged id: ${describeOp(op)}`);
    if (lost.length > 5) findings.add(`server ${server} lacks ${lost.length} acknowledged ids in all`);
    const tagsSeen = new Set<string>();
    const idsSeen = new Set<string>();
    for (const node of nodes) {
      const [, parent, tag, digits] = NODE.exec(node) ?? [];
      if (parent === undefined || tag === undefined || digits === undefined) {
        findings.add(`server ${server} holds ${node}, which no sequential create of this workload names`);
        continue;
      }
      const op = byTag.get(tag);
      if (op === undefined) findings.add(`server ${server} holds ${node}, which no create attempted`);
      else if (op.outcome === "fail") findings.add(`server ${server} holds ${node} although its create definitively failed: ${describeOp(op)}`);
      if (tagsSeen.has(tag)) findings.add(`server ${server} holds two nodes of one create (tag ${tag})`);
      tagsSeen.add(tag);
      const parentId = `${parent}/${digits}`;
      if (idsSeen.has(parentId)) findings.add(`server ${server} holds two nodes with id ${Number(digits)} under ${parent}`);
      idsSeen.add(parentId);
    }
  }

  const reference = finals[0];
  for (const other of finals.slice(1)) {
    const mine = new Set(reference!.nodes);
    const theirs = new Set(other.nodes);
    const onlyReference = reference!.nodes.filter((n) => !theirs.has(n));
    const onlyOther = other.nodes.filter((n) => !mine.has(n));
    if (onlyReference.length > 0 || onlyOther.length > 0) {
      findings.add(
        `servers ${reference!.server} and ${other.server} diverge: ${onlyReference.length} nodes only on ${reference!.server} (${onlyReference.slice(0, 3).join(", ")}), ` +
          `${onlyOther.length} only on ${other.server} (${onlyOther.slice(0, 3).join(", ")})`,
      );
    }
  }

  const unread = finals.length === 0 && acknowledged.length > 0 ? "no final read of the id parents: acknowledged ids cannot be checked" : undefined;
  return verdictOf(
    UNIQUE_IDS_CHECKER,
    findings,
    {
      attempted: takes.length,
      acknowledged: acknowledged.length,
      unknown: takes.filter((op) => op.outcome === "unknown").length,
      parents: byParent.size,
      serversRead: finals.length,
    },
    unread,
  );
}

/**
 * Real-time order under one parent: an id taken by a create invoked after another create's answer
 * arrived must be larger. One sweep: creates in invocation order against the largest id answered
 * before each was invoked.
 */
function checkIncreasing(parentOps: readonly TakeIdOp[], findings: Findings): void {
  const byInvocation = [...parentOps].sort((a, b) => a.invokedAt - b.invokedAt);
  const byCompletion = [...parentOps].sort((a, b) => a.completedAt! - b.completedAt!);
  let next = 0;
  let largest: TakeIdOp | undefined;
  for (const op of byInvocation) {
    while (next < byCompletion.length && byCompletion[next]!.completedAt! < op.invokedAt) {
      const done = byCompletion[next++]!;
      if (largest === undefined || done.result!.id > largest.result!.id) largest = done;
    }
    if (largest !== undefined && op.result!.id <= largest.result!.id) {
      findings.add(`id ${op.result!.id} taken after id ${largest.result!.id} was answered: ${describeOp(largest)}; then ${describeOp(op)}`);
    }
  }
}
