/**
 * ZooKeeper error codes, numerically identical to org.apache.zookeeper.KeeperException.Code so that
 * a ZooKeeper wire-protocol front door can pass them through unchanged.
 */
export const ZkErrorCode = {
  OK: 0,
  SYSTEMERROR: -1,
  RUNTIMEINCONSISTENCY: -2,
  DATAINCONSISTENCY: -3,
  CONNECTIONLOSS: -4,
  MARSHALLINGERROR: -5,
  UNIMPLEMENTED: -6,
  OPERATIONTIMEOUT: -7,
  BADARGUMENTS: -8,
  UNKNOWNSESSION: -12,
  NEWCONFIGNOQUORUM: -13,
  RECONFIGINPROGRESS: -14,
  APIERROR: -100,
  NONODE: -101,
  NOAUTH: -102,
  BADVERSION: -103,
  NOCHILDRENFOREPHEMERALS: -108,
  NODEEXISTS: -110,
  NOTEMPTY: -111,
  SESSIONEXPIRED: -112,
  INVALIDCALLBACK: -113,
  INVALIDACL: -114,
  AUTHFAILED: -115,
  SESSIONMOVED: -118,
  NOTREADONLY: -119,
  EPHEMERALONLOCALSESSION: -120,
  NOWATCHER: -121,
  REQUESTTIMEOUT: -122,
  RECONFIGDISABLED: -123,
  SESSIONCLOSEDREQUIRESASLAUTH: -124,
  QUOTAEXCEEDED: -125,
  THROTTLEDOP: -127,
} as const;

/** A ZooKeeper error name, e.g. `NONODE`: the `code` of every `ZkError`. */
export type ZkErrorName = keyof typeof ZkErrorCode;

const NAME_BY_CODE = new Map<number, ZkErrorName>((Object.entries(ZkErrorCode) as [ZkErrorName, number][]).map(([name, code]) => [code, name]));

/** The name of ZooKeeper error number `code` (-101 → `NONODE`); undefined for a number ZooKeeper does not define. */
export function zkErrorName(code: number): ZkErrorName | undefined {
  return NAME_BY_CODE.get(code);
}

/** Every failure a caller can cause or observe; `code` is the ZooKeeper name, `errno` its number. */
export class ZkError extends Error {
  /** The error's ZooKeeper name: what to switch on. */
  readonly code: ZkErrorName;
  /** ZooKeeper's number for it (KeeperException.Code), e.g. -101 for NONODE. */
  readonly errno: number;
  /** The path the failed request named, when it named one. */
  readonly path: string | undefined;

  constructor(code: ZkErrorName, message?: string, path?: string) {
    super(message ?? (path === undefined ? code : `${code}: ${path}`));
    this.name = "ZkError";
    this.code = code;
    this.errno = ZkErrorCode[code];
    this.path = path;
  }

  /** The ZkError for ZooKeeper error number `errno` (SYSTEMERROR for an unknown one). */
  static fromErrno(errno: number, path?: string): ZkError {
    return new ZkError(zkErrorName(errno) ?? "SYSTEMERROR", undefined, path);
  }
}
