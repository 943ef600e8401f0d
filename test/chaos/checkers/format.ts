/**
 * What the checkers share: one line per operation in violation messages (so a reader can find the
 * op in the history by id) and a bounded list of findings (a badly broken run would otherwise
 * produce a report nobody reads to the end).
 */
import type { Op, Verdict } from "../history.js";

function span(op: Op): string {
  // An unknown outcome has no completion bound whatever the harness recorded as its end.
  const end = op.outcome === "unknown" ? "…" : String(op.completedAt ?? "…");
  return `[${op.invokedAt}, ${end}${op.outcome === "unknown" ? ")" : "]"}`;
}

function outcomeText(op: Op): string {
  if (op.outcome === "ok") return "ok";
  return op.error === undefined ? op.outcome : `${op.outcome} ${op.error}`;
}

/** e.g. `#12 p3 cas 2→"v12" ok v3 zxid 4294967301 [100, 105]`. */
export function describeOp(op: Op): string {
  const head = `#${op.id} p${op.process}`;
  switch (op.f) {
    case "write": {
      const answer = op.result === undefined ? "" : ` v${op.result.version} zxid ${op.result.mzxid}`;
      return `${head} write ${op.key}=${JSON.stringify(op.value)} ${outcomeText(op)}${answer} ${span(op)}`;
    }
    case "cas": {
      const answer = op.result === undefined ? "" : ` v${op.result.version} zxid ${op.result.mzxid}`;
      return `${head} cas ${op.key} if v${op.expectedVersion} =${JSON.stringify(op.value)} ${outcomeText(op)}${answer} ${span(op)}`;
    }
    case "read": {
      const answer = op.result === undefined ? "" : ` ${JSON.stringify(op.result.value)} v${op.result.version} zxid ${op.result.mzxid}`;
      return `${head} read ${op.key} ${outcomeText(op)}${answer} session ${op.session} ${span(op)}`;
    }
    case "add":
      return `${head} add ${JSON.stringify(op.element)} ${outcomeText(op)} ${span(op)}`;
    case "take-id": {
      const answer = op.result === undefined ? "" : ` id ${op.result.id}`;
      return `${head} take-id ${op.parent}/${op.tag}- ${outcomeText(op)}${answer} ${span(op)}`;
    }
    case "acquire":
      return `${head} acquire ${outcomeText(op)}${op.token === undefined ? "" : ` token ${op.token}`} ${span(op)}`;
    case "use":
      return `${head} use token ${op.token} ${outcomeText(op)} ${span(op)}`;
    case "release":
      return `${head} release token ${op.token} ${outcomeText(op)} ${span(op)}`;
    case "enqueue":
      return `${head} enqueue ${op.item} ${outcomeText(op)} ${span(op)}`;
    case "dequeue":
      return `${head} dequeue ${op.path} (${op.item}) ${outcomeText(op)} ${span(op)}`;
    case "increment":
      return `${head} increment from ${op.expectedVersion} ${outcomeText(op)}${op.result === undefined ? "" : ` count ${op.result.value}`} ${span(op)}`;
    case "counter-read":
      return `${head} counter-read ${outcomeText(op)}${op.result === undefined ? "" : ` count ${op.result.value}`} ${span(op)}`;
    case "watch-write": {
      const answer = op.result === undefined ? "" : ` v${op.result.version} zxid ${op.result.mzxid}`;
      return `${head} watch-write ${JSON.stringify(op.value)} ${outcomeText(op)}${answer} ${span(op)}`;
    }
    case "watch-read": {
      const answer = op.result === undefined ? "" : ` ${JSON.stringify(op.result.value)} v${op.result.version} zxid ${op.result.mzxid}`;
      return `${head} ${op.mode} watch-read ${outcomeText(op)}${answer} session ${op.session} ${span(op)}`;
    }
    case "watch-event":
      return `${head} ${op.mode} watch-event zxid ${op.zxid} session ${op.session} at ${op.invokedAt}`;
    case "watch-lost":
      return `${head} ${op.mode} watcher ${op.state} session ${op.session} at ${op.invokedAt}`;
  }
}

/** Findings beyond `limit` are counted, not listed. */
export class Findings {
  private readonly listed: string[] = [];
  total = 0;

  constructor(private readonly limit = 50) {}

  add(message: string): void {
    this.total++;
    if (this.listed.length < this.limit) this.listed.push(message);
  }

  list(): string[] {
    const more = this.total - this.listed.length;
    return more > 0 ? [...this.listed, `… and ${more} more`] : [...this.listed];
  }
}

/**
 * A checker's verdict from its findings. With `unread` (acknowledged operations but no final read
 * to judge them against) nothing was verified, and calling that valid would pass a broken run: the
 * verdict is unknown, and `unread` says why.
 */
export function verdictOf(checker: string, findings: Findings, stats: Record<string, number>, unread?: string): Verdict {
  if (unread !== undefined) findings.add(unread);
  return { checker, valid: unread !== undefined ? "unknown" : findings.total === 0, violations: findings.list(), stats };
}

/** A zxid or fencing token from its decimal text; undefined when the text is not one. */
export function parseZxid(text: string): bigint | undefined {
  // BigInt("") is 0n and BigInt accepts hex/octal prefixes; the history promises plain decimal.
  if (!/^\d+$/.test(text)) return undefined;
  return BigInt(text);
}
