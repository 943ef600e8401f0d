/**
 * The part of node-zookeeper-client 1.1.3 (pure JavaScript, no types of its own) that corral's
 * tests and bench adapter use. Written from the package's index.js and lib/*.js, not from its
 * README where the two differ (e.g. Transaction.remove takes no data argument).
 */
declare module "node-zookeeper-client" {
  import { EventEmitter } from "node:events";

  /** jute `long`s (zxids, times, session ids, ephemeralOwner) arrive as 8-byte big-endian Buffers. */
  export interface Stat {
    czxid: Buffer;
    mzxid: Buffer;
    ctime: Buffer;
    mtime: Buffer;
    version: number;
    cversion: number;
    aversion: number;
    ephemeralOwner: Buffer;
    dataLength: number;
    numChildren: number;
    pzxid: Buffer;
  }

  export class Id {
    constructor(scheme: string, id: string);
    scheme: string;
    id: string;
    static ANYONE_ID_UNSAFE: Id;
    static AUTH_IDS: Id;
  }

  export class ACL {
    /** `permission` must be 1..31 (the constructor throws otherwise). */
    constructor(permission: number, id: Id);
    permission: number;
    id: Id;
    static OPEN_ACL_UNSAFE: ACL[];
    static CREATOR_ALL_ACL: ACL[];
    static READ_ACL_UNSAFE: ACL[];
  }

  export const Permission: {
    READ: 1;
    WRITE: 2;
    CREATE: 4;
    DELETE: 8;
    ADMIN: 16;
    ALL: 31;
  };

  export const CreateMode: {
    PERSISTENT: 0;
    EPHEMERAL: 1;
    PERSISTENT_SEQUENTIAL: 2;
    EPHEMERAL_SEQUENTIAL: 3;
  };

  export class State {
    name: string;
    code: number;
    getName(): string;
    getCode(): number;
    static DISCONNECTED: State;
    static SYNC_CONNECTED: State;
    static AUTH_FAILED: State;
    static CONNECTED_READ_ONLY: State;
    static SASL_AUTHENTICATED: State;
    static EXPIRED: State;
  }

  export class Event {
    type: number;
    name: string;
    path: string;
    getType(): number;
    getName(): string;
    getPath(): string;
    static NODE_CREATED: 1;
    static NODE_DELETED: 2;
    static NODE_DATA_CHANGED: 3;
    static NODE_CHILDREN_CHANGED: 4;
  }

  /** Every ZooKeeper error. `code` is ZooKeeper's number; `name` e.g. "NO_NODE". No path is filled in. */
  export class Exception extends Error {
    code: number;
    name: string;
    getCode(): number;
    getName(): string;
    /** Throws for a code the library does not know (e.g. -118 SESSIONMOVED, -119 NOTREADONLY). */
    static create(code: number): Exception;
    static OK: 0;
    static SYSTEM_ERROR: -1;
    static RUNTIME_INCONSISTENCY: -2;
    static DATA_INCONSISTENCY: -3;
    static CONNECTION_LOSS: -4;
    static MARSHALLING_ERROR: -5;
    static UNIMPLEMENTED: -6;
    static OPERATION_TIMEOUT: -7;
    static BAD_ARGUMENTS: -8;
    static API_ERROR: -100;
    static NO_NODE: -101;
    static NO_AUTH: -102;
    static BAD_VERSION: -103;
    static NO_CHILDREN_FOR_EPHEMERALS: -108;
    static NODE_EXISTS: -110;
    static NOT_EMPTY: -111;
    static SESSION_EXPIRED: -112;
    static INVALID_CALLBACK: -113;
    static INVALID_ACL: -114;
    static AUTH_FAILED: -115;
  }

  /**
   * One entry per op of a multi, as decoded by the library: `type` is the op code of the result
   * (1 create, 2 delete, 5 setData, 13 check, -1 error); `path` for creates, `stat` for setData,
   * `err` for error results.
   */
  export interface TransactionResult {
    type: number;
    path?: string;
    stat?: Stat;
    err?: number;
  }

  export class Transaction {
    create(path: string, data?: Buffer | null, acls?: ACL[], mode?: number): Transaction;
    create(path: string, data: Buffer | null, mode: number): Transaction;
    /** Beware: a `version` of 0 is sent as -1 (`version || -1`). */
    setData(path: string, data: Buffer | null, version?: number): Transaction;
    /** Beware: a `version` of 0 is sent as -1. */
    check(path: string, version?: number): Transaction;
    /** Beware: a `version` of 0 is sent as -1. */
    remove(path: string, version?: number): Transaction;
    /** On failure `error` is the first failed op's error and `results` still holds every op's result. */
    commit(callback: (error: Exception | Error | null | undefined, results?: TransactionResult[]) => void): void;
  }

  export interface ClientOptions {
    sessionTimeout?: number;
    spinDelay?: number;
    retries?: number;
    sessionId?: Buffer;
    sessionPassword?: Buffer;
  }

  export type Watcher = (event: Event) => void;
  type Callback<T extends unknown[]> = (error: Exception | Error | null | undefined, ...results: T) => void;

  export interface Client extends EventEmitter {
    connect(): void;
    close(): void;
    getState(): State;
    getSessionId(): Buffer;
    getSessionPassword(): Buffer;
    getSessionTimeout(): number;
    addAuthInfo(scheme: string, auth: Buffer): void;

    create(path: string, callback: Callback<[path: string]>): void;
    create(path: string, data: Buffer | null, callback: Callback<[path: string]>): void;
    create(path: string, data: Buffer | null, mode: number, callback: Callback<[path: string]>): void;
    create(path: string, data: Buffer | null, acls: ACL[], callback: Callback<[path: string]>): void;
    create(path: string, data: Buffer | null, acls: ACL[], mode: number, callback: Callback<[path: string]>): void;

    remove(path: string, callback: Callback<[]>): void;
    remove(path: string, version: number, callback: Callback<[]>): void;

    exists(path: string, callback: Callback<[stat: Stat | null]>): void;
    exists(path: string, watcher: Watcher, callback: Callback<[stat: Stat | null]>): void;

    getData(path: string, callback: Callback<[data: Buffer | undefined, stat: Stat]>): void;
    getData(path: string, watcher: Watcher, callback: Callback<[data: Buffer | undefined, stat: Stat]>): void;

    setData(path: string, data: Buffer | null, callback: Callback<[stat: Stat]>): void;
    setData(path: string, data: Buffer | null, version: number, callback: Callback<[stat: Stat]>): void;

    getChildren(path: string, callback: Callback<[children: string[], stat: Stat]>): void;
    getChildren(path: string, watcher: Watcher, callback: Callback<[children: string[], stat: Stat]>): void;

    getACL(path: string, callback: Callback<[acls: ACL[], stat: Stat]>): void;
    setACL(path: string, acls: ACL[], callback: Callback<[stat: Stat]>): void;
    setACL(path: string, acls: ACL[], version: number, callback: Callback<[stat: Stat]>): void;

    mkdirp(path: string, callback: Callback<[path: string]>): void;
    transaction(): Transaction;

    on(event: "connected" | "disconnected" | "expired" | "authenticationFailed" | "connectedReadOnly", listener: () => void): this;
    on(event: "state", listener: (state: State) => void): this;
    once(event: "connected" | "disconnected" | "expired" | "authenticationFailed" | "connectedReadOnly", listener: () => void): this;
    once(event: "state", listener: (state: State) => void): this;
  }

  export function createClient(connectionString: string, options?: ClientOptions): Client;
}
