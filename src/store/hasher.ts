/**
 * A small deterministic, non-cryptographic 64-bit hash (two 32-bit FNV-1a-style lanes with
 * different multipliers, finished with murmur3's fmix32). Used for tree digests compared by the
 * simulator's checkers; never for anything an adversary controls.
 */
const TWO_POW_32 = 2 ** 32;

export class Hasher {
  private a = 0x811c9dc5;
  private b = 0x6b43a9b5;

  byte(value: number): this {
    this.a = Math.imul(this.a ^ (value & 0xff), 0x01000193);
    this.b = Math.imul(this.b ^ (value & 0xff), 0x5bd1e995);
    return this;
  }

  uint32(value: number): this {
    return this.byte(value >>> 24)
      .byte(value >>> 16)
      .byte(value >>> 8)
      .byte(value);
  }

  /** Any safe integer, negative included (two's complement of its 64 bits). */
  number(value: number): this {
    return this.uint32(Math.floor(value / TWO_POW_32) >>> 0).uint32(value >>> 0);
  }

  bigint(value: bigint): this {
    const bits = BigInt.asUintN(64, value);
    return this.uint32(Number(bits >> 32n)).uint32(Number(bits & 0xffffffffn));
  }

  /** Length-prefixed, so that ("ab","c") and ("a","bc") differ. */
  string(value: string): this {
    this.uint32(value.length);
    for (let i = 0; i < value.length; i++) {
      const c = value.charCodeAt(i);
      this.byte(c >>> 8).byte(c);
    }
    return this;
  }

  /** Length-prefixed. */
  bytes(value: Uint8Array): this {
    this.uint32(value.length);
    let a = this.a;
    let b = this.b;
    for (let i = 0; i < value.length; i++) {
      const x = value[i]!;
      a = Math.imul(a ^ x, 0x01000193);
      b = Math.imul(b ^ x, 0x5bd1e995);
    }
    this.a = a;
    this.b = b;
    return this;
  }

  /** 16 lowercase hex digits. */
  hex(): string {
    const a = fmix32(this.a ^ Math.imul(this.b, 0x9e3779b1));
    const b = fmix32(this.b ^ a);
    return (a >>> 0).toString(16).padStart(8, "0") + (b >>> 0).toString(16).padStart(8, "0");
  }
}

/** murmur3's 32-bit finalizer: every input bit reaches every output bit. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h;
}
