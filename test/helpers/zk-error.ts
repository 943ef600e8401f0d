import { ZkError } from "../../src/index.js";

/** For assert.rejects / assert.throws: the error is a ZkError with this code. */
export function withCode(code: string): (error: unknown) => boolean {
  return (error) => error instanceof ZkError && error.code === code;
}
