/**
 * Damaged durable state: bytes already on disk that do not read back as they were written (a
 * record or number whose checksum fails, records missing from the middle of the log, a LevelDB
 * file LevelDB itself refuses). Unlike a failed write (faults.ts: fail-stop), nothing is wrong
 * with the running process: the files cannot be trusted, and the server must not serve from them.
 */
export class StorageDamagedError extends Error {
  readonly code = "STORAGE_DAMAGED";
  constructor(
    /** The damaged file, or the directory of the database that holds it when LevelDB does not say which. */
    readonly file: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${file}: ${reason}`, options);
    this.name = "StorageDamagedError";
  }
}

/** LevelDB's own words for a file it cannot read back (classic-level's error, or its cause at open). */
const LEVELDB_DAMAGE = /^Corruption:|^IO error: .*: (No such file or directory|Invalid argument)$/;

/**
 * The damage a LevelDB error reports, or undefined for any other failure (a lock held by another
 * process, a permission, a full disk): those are not the files' fault and stay errors.
 */
export function levelDbDamage(error: unknown, dir: string): StorageDamagedError | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const match = LEVELDB_DAMAGE.exec(e.message);
    if (match === null) continue;
    // "IO error: <dir>/000005.ldb: Invalid argument" names the file; Corruption usually does not.
    const named = /^IO error: (\S+): /.exec(e.message)?.[1];
    return new StorageDamagedError(named ?? dir, `LevelDB: ${e.message}`, { cause: error });
  }
  return undefined;
}
