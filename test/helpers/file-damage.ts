/**
 * What storage damage does to a file already on disk, for tests that damage a member's files
 * while it is down: a flipped bit, a file cut short, a zeroed page, a torn tail. Each acts in the
 * file's middle (the part past any header, and away from its last bytes) unless it is about the end.
 */
import { open, readdir, stat } from "node:fs/promises";
import { join } from "node:path";

export type Damage = "bitFlip" | "truncation" | "zeroedPage" | "tornTail";
export const DAMAGES: readonly Damage[] = ["bitFlip", "truncation", "zeroedPage", "tornTail"];

const PAGE_BYTES = 4096;

/** Applies `damage` to `file`; answers what was done, for assertion messages. */
export async function damageFile(file: string, damage: Damage, seed = 0): Promise<string> {
  const size = (await stat(file)).size;
  if (size === 0) throw new Error(`${file} is empty: nothing to damage`);
  const handle = await open(file, "r+");
  try {
    switch (damage) {
      case "bitFlip": {
        const offset = Math.min(size - 1, Math.floor(size / 2) + (seed % Math.max(1, Math.floor(size / 4))));
        const byte = Buffer.alloc(1);
        await handle.read(byte, 0, 1, offset);
        byte[0] = byte[0]! ^ (1 << (seed % 8));
        await handle.write(byte, 0, 1, offset);
        return `bit ${seed % 8} of byte ${offset} of ${size} flipped`;
      }
      case "truncation": {
        const length = Math.floor(size / 2);
        await handle.truncate(length);
        return `cut from ${size} to ${length} bytes`;
      }
      case "zeroedPage": {
        // The page holding the middle byte, or the whole file when it is smaller than one.
        const start = size <= PAGE_BYTES ? 0 : Math.floor(size / 2 / PAGE_BYTES) * PAGE_BYTES;
        const length = Math.min(PAGE_BYTES, size - start);
        await handle.write(Buffer.alloc(length), 0, length, start);
        return `${length} bytes zeroed at ${start} of ${size}`;
      }
      case "tornTail": {
        // A write cut short: the last few bytes never made it (at least one, never the whole file).
        const cut = Math.max(1, Math.min(size - 1, 37));
        await handle.truncate(size - cut);
        return `last ${cut} of ${size} bytes torn off`;
      }
    }
  } finally {
    await handle.sync();
    await handle.close();
  }
}

/** The files of `dir` whose names match `pattern`, sorted (LevelDB's numbered files: oldest first). */
export async function filesMatching(dir: string, pattern: RegExp): Promise<string[]> {
  return (await readdir(dir))
    .filter((name) => pattern.test(name))
    .sort()
    .map((name) => join(dir, name));
}

/** The kinds of file in a member's data dir: LevelDB's (the txn log) and the snapshots. */
export type FileKind = "leveldb .log" | "leveldb table" | "MANIFEST" | "CURRENT" | "snapshot";
export const FILE_KINDS: readonly FileKind[] = ["leveldb .log", "leveldb table", "MANIFEST", "CURRENT", "snapshot"];

/** The file of `kind` in a member's data dir: the newest one of its kind. */
export async function fileOf(dataDir: string, kind: FileKind): Promise<string> {
  const logDir = join(dataDir, "log");
  const pick = async (dir: string, pattern: RegExp): Promise<string> => {
    const files = await filesMatching(dir, pattern);
    const newest = files[files.length - 1];
    if (newest === undefined) throw new Error(`no ${kind} file in ${dir}`);
    return newest;
  };
  switch (kind) {
    case "leveldb .log":
      return pick(logDir, /^\d+\.log$/);
    case "leveldb table":
      return pick(logDir, /^\d+\.ldb$/);
    case "MANIFEST":
      return pick(logDir, /^MANIFEST-\d+$/);
    case "CURRENT":
      return join(logDir, "CURRENT");
    case "snapshot":
      return pick(join(dataDir, "snapshots"), /^snapshot\.[0-9a-f]{16}$/);
  }
}
