/**
 * The super user `corral cluster` signs in as to reconfigure its cluster (only the super user may,
 * as in ZooKeeper). With reconfigEnabled and no superDigest of the user's, the launcher makes one:
 * a random password kept in DIR/super-auth ("super:<password>", mode 0600, reused by later runs)
 * and its digest in cluster.json, which only stores the SHA-1 digest. A user who sets superDigest
 * gives the launcher the password with --super-auth-file, or signs in by hand only.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateDigest } from "../common/digest.js";
import { ConfigError } from "../server/config-error.js";

export const SUPER_AUTH_FILE = "super-auth";
/** Bytes of randomness in a generated password (192 bits: no dictionary, no brute force of its digest). */
const PASSWORD_BYTES = 24;
/** Refuse a credential file larger than this unread. */
const AUTH_FILE_BYTES_MAX = 4096;

export interface SuperCredential {
  /** What `addauth digest` takes: "super:<password>". */
  auth: string;
  /** The file it was read from, for the instructions printed. */
  file: string;
  generated: boolean;
}

export interface SuperSetup {
  /** The superDigest every member runs with (unchanged when the user gave one). */
  digest: string;
  /** The launcher's own credential; undefined when the user's superDigest came without its password. */
  credential: SuperCredential | undefined;
}

/** "super:<password>" from a file, checked: private to its owner, the super user's, one line. */
function readAuthFile(file: string, flag: string): string {
  let mode: number;
  let size: number;
  try {
    ({ mode, size } = statSync(file));
  } catch (error) {
    throw new ConfigError(flag, `cannot read ${file}: ${(error as Error).message}`);
  }
  // As ssh does with a private key: a password others can read is refused, not used.
  if ((mode & 0o077) !== 0) throw new ConfigError(flag, `${file} is readable by others (mode ${(mode & 0o777).toString(8)}): chmod 600 it`);
  if (size > AUTH_FILE_BYTES_MAX) throw new ConfigError(flag, `${file} is over ${AUTH_FILE_BYTES_MAX} bytes`);
  const auth = readFileSync(file, "utf8").trim();
  if (!/^super:[^\s]+$/.test(auth)) throw new ConfigError(flag, `${file} must hold one line, super:<password>`);
  return auth;
}

/**
 * The super user for a cluster that may be reconfigured. `givenDigest`: the user's superDigest
 * ("" for none); `authFile`: --super-auth-file (absolute), the password of that digest.
 */
export function setUpSuperUser(dataDir: string, givenDigest: string, authFile: string | undefined): SuperSetup {
  if (authFile !== undefined) {
    const auth = readAuthFile(authFile, "super-auth-file");
    const digest = generateDigest(auth);
    if (givenDigest !== "" && givenDigest !== digest)
      throw new ConfigError("super-auth-file", `its password is not the one superDigest ${givenDigest} was made from`);
    return { digest, credential: { auth, file: authFile, generated: false } };
  }
  if (givenDigest !== "") return { digest: givenDigest, credential: undefined };
  const file = join(dataDir, SUPER_AUTH_FILE);
  if (existsSync(file)) {
    const auth = readAuthFile(file, "data-dir");
    return { digest: generateDigest(auth), credential: { auth, file, generated: false } };
  }
  mkdirSync(dataDir, { recursive: true });
  const auth = `super:${randomBytes(PASSWORD_BYTES).toString("base64url")}`;
  // "wx": never overwrite a credential another launcher wrote meanwhile; 0600 from the start.
  writeFileSync(file, auth + "\n", { mode: 0o600, flag: "wx" });
  return { digest: generateDigest(auth), credential: { auth, file, generated: true } };
}
