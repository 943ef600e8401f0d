/**
 * The simulator's ACL layout and the verdicts it implies, as an independent model of what the
 * server must decide. Every client is anonymous, the owner, or the super user (by its id), with the
 * ids the server's own authentication gives those credentials. Nodes /r0../r2 are the owner's to
 * change and everyone's to read, /q0../q2 the owner's alone; every other node is open. No request
 * changes an ACL after its create, so whether a request must be refused NOAUTH follows from its
 * path, the existence of the nodes it names, and who sent it.
 */
import { generateDigest } from "../../src/common/digest.js";
import type { WriteRequest } from "../../src/replica/requests.js";
import { Perms, type Acl, type Id } from "../../src/store/types.js";

export type Identity = "anonymous" | "owner" | "super";

const OWNER_CREDENTIALS = "owner:secret";
const SUPER_CREDENTIALS = "super:secret";
export const SUPER_DIGEST = generateDigest(SUPER_CREDENTIALS);
const OWNER: Id = { scheme: "digest", id: generateDigest(OWNER_CREDENTIALS) };

/** /r* nodes: the owner may do anything, everyone may read. */
export const GUARDED_ACL: Acl[] = [
  { perms: Perms.ALL, id: OWNER },
  { perms: Perms.READ, id: { scheme: "world", id: "anyone" } },
];
/** /q* nodes: the owner's alone. */
export const SECRET_ACL: Acl[] = [{ perms: Perms.ALL, id: OWNER }];

const GUARDED = /^\/r\d+$/;
const SECRET = /^\/q\d+$/;

export function identityOf(clientId: number): Identity {
  return (["super", "anonymous", "owner"] as const)[clientId % 3]!;
}

/** The digest credentials the client authenticates with (`user:password`), none for the anonymous. */
export function credentialsOf(clientId: number): string | undefined {
  return { anonymous: undefined, owner: OWNER_CREDENTIALS, super: SUPER_CREDENTIALS }[identityOf(clientId)];
}

/** Whether the model refuses `write` by `identity`, given which nodes exist when prep decides it. */
export function writeRefused(write: WriteRequest, identity: Identity, exists: (path: string) => boolean): boolean {
  if (identity !== "anonymous") return false;
  switch (write.op) {
    case "setData":
      return isProtected(write.path) && exists(write.path);
    case "create":
    case "delete": {
      // Both are rights on the parent: /r* children are the owner's to make and remove.
      const parent = write.path.slice(0, Math.max(1, write.path.lastIndexOf("/")));
      return parent !== write.path && isProtected(parent) && exists(parent);
    }
    default:
      return false;
  }
}

/** Whether the model refuses a read of `path` by `identity` (a node that exists; NONODE comes first). */
export function readRefused(path: string, identity: Identity): boolean {
  return identity === "anonymous" && SECRET.test(path);
}

function isProtected(path: string): boolean {
  return GUARDED.test(path) || SECRET.test(path);
}
