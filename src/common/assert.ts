/** An invariant violation is a bug in corral, never a caller's fault: it crashes loudly. */
export class AssertionError extends Error {
  constructor(message: string) {
    super(`invariant violated: ${message}`);
    this.name = "AssertionError";
  }
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new AssertionError(message);
}
