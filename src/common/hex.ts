/**
 * The one way corral writes a 64-bit id (session id, zxid, configuration version) for people: as
 * ZooKeeper does, Java's Long.toHexString of the two's complement, lower case, no padding, after "0x".
 */

/** Hex digits of `value` as an unsigned 64-bit integer, without "0x" (Java's Long.toHexString). */
export function hexDigits64(value: bigint | number): string {
  return BigInt.asUintN(64, BigInt(value)).toString(16);
}

/** `value` as "0x" and its unsigned 64-bit hex digits: how logs, the shell and the console show ids. */
export function hex64(value: bigint | number): string {
  return `0x${hexDigits64(value)}`;
}
