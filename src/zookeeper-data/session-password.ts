/**
 * The password ZooKeeper gives a session (ZooKeeperServer.generatePasswd): 16 bytes of
 * java.util.Random seeded with the session id XOR a fixed secret. ZooKeeper never stores it, it
 * derives it again to check a reconnecting client; corral stores one per session, so a session
 * moved over from ZooKeeper gets this one, and its client can resume it against corral.
 */
const SUPER_SECRET = 0xb3415c00n;
const MULTIPLIER = 0x5deece66dn;
const ADDEND = 0xbn;
const MASK = (1n << 48n) - 1n;
const PASSWORD_BYTES = 16;

export function zookeeperSessionPassword(sessionId: bigint): Uint8Array {
  let seed = (BigInt.asIntN(64, sessionId ^ SUPER_SECRET) ^ MULTIPLIER) & MASK;
  const nextInt = (): number => {
    seed = (seed * MULTIPLIER + ADDEND) & MASK;
    return Number(BigInt.asIntN(32, seed >> 16n));
  };
  const out = new Uint8Array(PASSWORD_BYTES);
  for (let i = 0; i < PASSWORD_BYTES;) {
    let random = nextInt();
    for (let n = Math.min(PASSWORD_BYTES - i, 4); n-- > 0; random >>= 8) out[i++] = random & 0xff;
  }
  return out;
}
