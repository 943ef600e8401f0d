/**
 * zxid helpers. A zxid is ZooKeeper's 64-bit `epoch << 32 | counter`; inside corral it is a
 * `number` equal to `epoch * 2^32 + counter`, exact because epochs stay below 2^21 (asserted here),
 * so that zxids compare with `<` and serve as Map keys without BigInt costs.
 */
import { assert } from "../common/assert.js";
import { ZkError } from "../common/errors.js";

export const ZXID_COUNTER_LIMIT = 2 ** 32;
/** Epochs are below this, so that every zxid is a safe integer. */
export const ZXID_EPOCH_LIMIT = 2 ** 21;
/** Largest zxid representable: epoch 2^21 - 1, counter 2^32 - 1 (= Number.MAX_SAFE_INTEGER). */
export const ZXID_MAX = ZXID_EPOCH_LIMIT * ZXID_COUNTER_LIMIT - 1;

export function makeZxid(epoch: number, counter: number): number {
  if (!(Number.isInteger(epoch) && epoch >= 0 && epoch < ZXID_EPOCH_LIMIT)) assert(false, `zxid epoch out of range: ${epoch}`);
  if (!(Number.isInteger(counter) && counter >= 0 && counter < ZXID_COUNTER_LIMIT)) assert(false, `zxid counter out of range: ${counter}`);
  return epoch * ZXID_COUNTER_LIMIT + counter;
}

export function isZxid(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= ZXID_MAX;
}

export function epochOf(zxid: number): number {
  if (!isZxid(zxid)) assert(false, `not a zxid: ${String(zxid)}`);
  return Math.floor(zxid / ZXID_COUNTER_LIMIT);
}

export function counterOf(zxid: number): number {
  if (!isZxid(zxid)) assert(false, `not a zxid: ${String(zxid)}`);
  return zxid % ZXID_COUNTER_LIMIT;
}

export function zxidToBigInt(zxid: number): bigint {
  if (!isZxid(zxid)) assert(false, `not a zxid: ${String(zxid)}`);
  return BigInt(zxid);
}

/**
 * A zxid received from outside (a client's last seen zxid, a peer message). Throws
 * `ZkError("BADARGUMENTS")` when it is negative or beyond what corral's epochs can reach.
 */
export function zxidFromBigInt(value: bigint): number {
  if (value < 0n || value > BigInt(ZXID_MAX)) throw new ZkError("BADARGUMENTS", `zxid out of range: ${value}`);
  return Number(value);
}

/** Parses a decimal ("4294967297", as proto-loader hands out int64) or "0x" hex ("0x100000001") zxid. */
export function zxidFromString(text: string): number {
  if (!/^(?:[0-9]{1,20}|0x[0-9a-fA-F]{1,16})$/.test(text)) {
    throw new ZkError("BADARGUMENTS", `not a zxid: ${JSON.stringify(text)}`);
  }
  return zxidFromBigInt(BigInt(text));
}

/** ZooKeeper's rendering: "0x" + lowercase hex without padding (Long.toHexString). */
export function formatZxid(zxid: number): string {
  if (!isZxid(zxid)) assert(false, `not a zxid: ${String(zxid)}`);
  return "0x" + zxid.toString(16);
}
