/**
 * The system's GSS-API (MIT Kerberos' libgssapi_krb5.so.2, Debian's libgssapi-krb5-2), called
 * through koffi's FFI: what SASL GSSAPI (RFC 4752) needs on either side — names, credentials from a
 * keytab or a ticket cache, a security context accepted (the server) or initiated (the SDK) token
 * by token, and wrap / unwrap on that context. Kerberos itself (tickets, keys, the KDC exchange,
 * the replay cache) is the library's.
 *
 * Context steps and wrap / unwrap run on koffi's worker threads (`.async`): they decrypt, may talk
 * to the KDC or touch the replay cache on disk, none of which may hold the event loop. One context
 * is used by one call at a time (its mechanism awaits each step), as MIT's contexts require.
 *
 * Every buffer the library returns is copied out and released here; every handle has one owner
 * that releases it.
 */
import koffi, { type LibraryHandle } from "koffi";

export type NativeFunction = ReturnType<LibraryHandle["func"]>;

export const GSS_S_COMPLETE = 0;
export const GSS_S_CONTINUE_NEEDED = 1;
/** The calling- and routine-error bits of a major status (GSS_ERROR); the low 16 are supplementary. */
const GSS_ROUTINE_ERROR_MASK = 0xffff0000;
const GSS_C_GSS_CODE = 1;
const GSS_C_MECH_CODE = 2;
const GSS_C_INITIATE = 1;
const GSS_C_ACCEPT = 2;

export type CredentialUsage = "initiate" | "accept";

/** An OID's DER contents (without tag and length), as gss_OID_desc points at them. */
export type Oid = Buffer;
/** 1.2.840.113554.1.2.2.1, GSS_KRB5_NT_PRINCIPAL_NAME: a name as `service/host@REALM`. */
export const KRB5_PRINCIPAL_NAME_OID: Oid = Buffer.from([0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02, 0x01]);
/** 1.2.840.113554.1.2.1.4, GSS_C_NT_HOSTBASED_SERVICE: a name as `service@host`. */
export const HOSTBASED_SERVICE_OID: Oid = Buffer.from([0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x01, 0x04]);
/** 1.2.840.113554.1.2.2, the Kerberos V5 mechanism. */
export const KRB5_MECHANISM_OID: Oid = Buffer.from([0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02]);

/** A GSS-API failure: the major and minor status and the library's words for them. */
export class GssError extends Error {
  constructor(
    readonly call: string,
    readonly major: number,
    readonly minor: number,
    detail: string,
  ) {
    super(`${call}: ${detail}`);
    this.name = "GssError";
  }
}

export interface GssBinding {
  importName: NativeFunction;
  acquireCredFrom: NativeFunction;
  acceptSecContext: NativeFunction;
  initSecContext: NativeFunction;
  displayName: NativeFunction;
  wrap: NativeFunction;
  unwrap: NativeFunction;
  releaseBuffer: NativeFunction;
  releaseName: NativeFunction;
  releaseCred: NativeFunction;
  deleteSecContext: NativeFunction;
  displayStatus: NativeFunction;
  defaultRealm(): string;
}

let loaded: GssBinding | undefined;

/** Loads the libraries once; throws when they are not installed. */
export function gssBinding(): GssBinding {
  if (loaded !== undefined) return loaded;
  const gss = koffi.load("libgssapi_krb5.so.2");
  const krb5 = koffi.load("libkrb5.so.3");
  koffi.struct("gss_buffer_desc", { length: "size_t", value: "void *" });
  koffi.struct("gss_OID_desc", { length: "uint32_t", elements: "void *" });
  koffi.struct("gss_key_value_element_desc", { key: "const char *", value: "const char *" });
  koffi.struct("gss_key_value_set_desc", { count: "uint32_t", elements: "gss_key_value_element_desc *" });
  koffi.pointer("gss_name_t", koffi.opaque("gss_name_struct"));
  koffi.pointer("gss_cred_id_t", koffi.opaque("gss_cred_id_struct"));
  koffi.pointer("gss_ctx_id_t", koffi.opaque("gss_ctx_id_struct"));
  koffi.pointer("krb5_context", koffi.opaque("krb5_context_struct"));
  const initContext = krb5.func("int32_t krb5_init_context(_Out_ krb5_context *context)");
  const getDefaultRealm = krb5.func("int32_t krb5_get_default_realm(krb5_context context, _Out_ void **realm)");
  const freeDefaultRealm = krb5.func("void krb5_free_default_realm(krb5_context context, void *realm)");
  const freeContext = krb5.func("void krb5_free_context(krb5_context context)");
  loaded = {
    importName: gss.func("uint32_t gss_import_name(_Out_ uint32_t *minor, gss_buffer_desc *name, gss_OID_desc *type, _Out_ gss_name_t *output)"),
    acquireCredFrom: gss.func(
      "uint32_t gss_acquire_cred_from(_Out_ uint32_t *minor, gss_name_t name, uint32_t time, void *mechs, int usage, gss_key_value_set_desc *store, _Out_ gss_cred_id_t *cred, void *actual_mechs, void *time_rec)",
    ),
    acceptSecContext: gss.func(
      "uint32_t gss_accept_sec_context(_Out_ uint32_t *minor, _Inout_ gss_ctx_id_t *context, gss_cred_id_t cred, gss_buffer_desc *input, void *bindings, _Out_ gss_name_t *src_name, void *mech, _Out_ gss_buffer_desc *output, _Out_ uint32_t *flags, void *time_rec, void *delegated)",
    ),
    initSecContext: gss.func(
      "uint32_t gss_init_sec_context(_Out_ uint32_t *minor, gss_cred_id_t cred, _Inout_ gss_ctx_id_t *context, gss_name_t target, gss_OID_desc *mech, uint32_t flags, uint32_t time, void *bindings, gss_buffer_desc *input, void *actual_mech, _Out_ gss_buffer_desc *output, _Out_ uint32_t *ret_flags, void *time_rec)",
    ),
    displayName: gss.func("uint32_t gss_display_name(_Out_ uint32_t *minor, gss_name_t name, _Out_ gss_buffer_desc *output, void *type)"),
    wrap: gss.func(
      "uint32_t gss_wrap(_Out_ uint32_t *minor, gss_ctx_id_t context, int conf_req, uint32_t qop, gss_buffer_desc *input, _Out_ int *conf_state, _Out_ gss_buffer_desc *output)",
    ),
    unwrap: gss.func(
      "uint32_t gss_unwrap(_Out_ uint32_t *minor, gss_ctx_id_t context, gss_buffer_desc *input, _Out_ gss_buffer_desc *output, _Out_ int *conf_state, _Out_ uint32_t *qop_state)",
    ),
    releaseBuffer: gss.func("uint32_t gss_release_buffer(_Out_ uint32_t *minor, gss_buffer_desc *buffer)"),
    releaseName: gss.func("uint32_t gss_release_name(_Out_ uint32_t *minor, _Inout_ gss_name_t *name)"),
    releaseCred: gss.func("uint32_t gss_release_cred(_Out_ uint32_t *minor, _Inout_ gss_cred_id_t *cred)"),
    deleteSecContext: gss.func("uint32_t gss_delete_sec_context(_Out_ uint32_t *minor, _Inout_ gss_ctx_id_t *context, void *output)"),
    displayStatus: gss.func(
      "uint32_t gss_display_status(_Out_ uint32_t *minor, uint32_t status, int type, void *mech, _Inout_ uint32_t *context, _Out_ gss_buffer_desc *output)",
    ),
    defaultRealm: () => {
      const context: unknown[] = [null];
      if (initContext(context) !== 0) return "";
      try {
        const realm: unknown[] = [null];
        if (getDefaultRealm(context[0], realm) !== 0) return "";
        const text = koffi.decode(realm[0], "char", -1) as string;
        freeDefaultRealm(context[0], realm[0]);
        return text;
      } finally {
        freeContext(context[0]);
      }
    },
  };
  return loaded;
}

export interface BufferDesc {
  length: number | bigint;
  value: unknown;
}

/** An empty output buffer for the library to fill. */
export function outputBuffer(): BufferDesc {
  return { length: 0, value: null };
}

/** A library-owned buffer's bytes, copied; the buffer is released. */
export function takeBuffer(gss: GssBinding, buffer: BufferDesc): Uint8Array {
  const length = Number(buffer.length);
  const bytes = length === 0 || buffer.value === null ? new Uint8Array(0) : new Uint8Array(koffi.view(buffer.value, length).slice(0));
  if (buffer.value !== null) gss.releaseBuffer([0], buffer);
  return bytes;
}

export function inputBuffer(bytes: Uint8Array): BufferDesc {
  return { length: bytes.byteLength, value: bytes.byteLength === 0 ? null : bytes };
}

export function oidDesc(oid: Oid): { length: number; elements: Oid } {
  return { length: oid.byteLength, elements: oid };
}

/** The library's text for a status, GSS words first, then the mechanism's. */
function statusText(gss: GssBinding, major: number, minor: number): string {
  const words: string[] = [];
  for (const [status, type] of [
    [major, GSS_C_GSS_CODE],
    [minor, GSS_C_MECH_CODE],
  ] as const) {
    if (type === GSS_C_MECH_CODE && minor === 0) continue;
    const context = [0];
    for (let i = 0; i < 8; i++) {
      const out = outputBuffer();
      if (gss.displayStatus([0], status, type, null, context, out) !== GSS_S_COMPLETE) break;
      words.push(Buffer.from(takeBuffer(gss, out)).toString("utf8"));
      if (context[0] === 0) break;
    }
  }
  return words.join("; ");
}

export function gssFailure(gss: GssBinding, call: string, major: number, minor: number): GssError {
  return new GssError(call, major, minor, statusText(gss, major, minor));
}

export function isGssError(major: number): boolean {
  return (major & GSS_ROUTINE_ERROR_MASK) !== 0;
}

/** koffi's `.async`, as a promise of the call's return value. */
export function callAsync(fn: NativeFunction, ...args: unknown[]): Promise<number> {
  return new Promise((resolve, reject) => {
    fn.async(...args, (error: unknown, result: unknown) =>
      error ? reject(error instanceof Error ? error : new Error("a GSS-API call failed")) : resolve(result as number),
    );
  });
}

/** The Kerberos configuration's default_realm (KRB5_CONFIG or /etc/krb5.conf); "" when none. */
export function kerberosDefaultRealm(): string {
  return gssBinding().defaultRealm();
}

/** `text` imported as a GSS name of `type`; the caller releases it (gss.releaseName). Throws GssError. */
export function importName(gss: GssBinding, text: string, type: Oid): unknown {
  const minor = [0];
  const name: unknown[] = [null];
  const major = gss.importName(minor, inputBuffer(Buffer.from(text, "utf8")), oidDesc(type), name) as number;
  if (isGssError(major)) throw gssFailure(gss, "gss_import_name", major, minor[0]!);
  return name[0];
}

/** One gss_acquire_cred_from call's arguments; `release` frees the desired name. */
class AcquireRequest {
  readonly gss = gssBinding();
  readonly args: unknown[];
  private readonly minor = [0];
  private readonly credential: unknown[] = [null];
  private readonly name: unknown;

  constructor(principal: string | undefined, usage: CredentialUsage, store: Record<string, string>) {
    this.name = principal === undefined ? null : importName(this.gss, principal, KRB5_PRINCIPAL_NAME_OID);
    const elements = Object.entries(store).map(([key, value]) => ({ key, value }));
    const storeDesc = elements.length === 0 ? null : { count: elements.length, elements };
    const usageFlag = usage === "initiate" ? GSS_C_INITIATE : GSS_C_ACCEPT;
    this.args = [this.minor, this.name, 0, null, usageFlag, storeDesc, this.credential, null, null];
  }

  settle(major: number): GssCredential {
    if (isGssError(major)) throw gssFailure(this.gss, "gss_acquire_cred_from", major, this.minor[0]!);
    return new GssCredential(this.credential[0]);
  }

  release(): void {
    if (this.name !== null) this.gss.releaseName([0], [this.name]);
  }
}

/**
 * Credentials held until released: an acceptor's from a keytab, an initiator's from a ticket cache
 * or a client keytab. `store` is gss_acquire_cred_from's credential store (keytab, client_keytab,
 * ccache); `principal` undefined takes the store's default name.
 */
export class GssCredential {
  /** `handle`: what gss_acquire_cred_from gave; this object now owns it. */
  constructor(private handle: unknown) {}

  /** Blocking the event loop: for a server's keytab at start. Throws GssError. */
  static acquireNow(principal: string | undefined, usage: CredentialUsage, store: Record<string, string>): GssCredential {
    const request = new AcquireRequest(principal, usage, store);
    try {
      return request.settle(request.gss.acquireCredFrom(...request.args) as number);
    } finally {
      request.release();
    }
  }

  /** On a worker thread: an initiator's store may fetch a ticket from the KDC. Rejects with GssError. */
  static async acquire(principal: string | undefined, usage: CredentialUsage, store: Record<string, string>): Promise<GssCredential> {
    const request = new AcquireRequest(principal, usage, store);
    try {
      return request.settle(await callAsync(request.gss.acquireCredFrom, ...request.args));
    } finally {
      request.release();
    }
  }

  get current(): unknown {
    return this.handle;
  }

  release(): void {
    if (this.handle === null) return;
    gssBinding().releaseCred([0], [this.handle]);
    this.handle = null;
  }
}

/**
 * One security context, established by a subclass's steps, then used to wrap and unwrap. A release
 * while a call is on a worker thread (the peer hung up mid-step) waits for that call: the context
 * is deleted only once no thread uses it.
 */
export abstract class GssSecurityContext {
  protected handle: unknown = null;
  private inFlight = 0;
  private released = false;

  /** Integrity-protected (not encrypted) `message`, as the SASL GSSAPI layer negotiation sends it. */
  wrap(message: Uint8Array): Promise<Uint8Array> {
    return this.using(async (gss) => {
      const minor = [0];
      const output = outputBuffer();
      const major = await callAsync(gss.wrap, minor, this.handle, 0, 0, inputBuffer(message), [0], output);
      const bytes = takeBuffer(gss, output);
      if (isGssError(major)) throw gssFailure(gss, "gss_wrap", major, minor[0]!);
      return bytes;
    });
  }

  unwrap(token: Uint8Array): Promise<Uint8Array> {
    return this.using(async (gss) => {
      const minor = [0];
      const output = outputBuffer();
      const major = await callAsync(gss.unwrap, minor, this.handle, inputBuffer(token), output, [0], [0]);
      const bytes = takeBuffer(gss, output);
      if (isGssError(major)) throw gssFailure(gss, "gss_unwrap", major, minor[0]!);
      return bytes;
    });
  }

  release(): void {
    this.released = true;
    if (this.inFlight === 0) this.deleteContext();
  }

  /** Runs `call` as the context's one call in flight; rejects once the context is released. */
  protected async using<R>(call: (gss: GssBinding) => Promise<R>): Promise<R> {
    if (this.released) throw new Error("the security context was released");
    this.inFlight += 1;
    try {
      return await call(gssBinding());
    } finally {
      this.inFlight -= 1;
      if (this.released && this.inFlight === 0) this.deleteContext();
    }
  }

  /**
   * One step of establishing the context on a worker thread: `fn` is gss_init_sec_context or
   * gss_accept_sec_context, given by `args` the minor status, the context handle (updated here)
   * and the output buffer in the places it takes them. Rejects with GssError.
   */
  protected async establishStep(
    gss: GssBinding,
    call: string,
    fn: NativeFunction,
    args: (minor: number[], context: unknown[], output: BufferDesc) => unknown[],
  ): Promise<{ output: Uint8Array; established: boolean }> {
    const minor = [0];
    const context = [this.handle];
    const output = outputBuffer();
    const major = await callAsync(fn, ...args(minor, context, output));
    this.handle = context[0] ?? null;
    const bytes = takeBuffer(gss, output);
    if (isGssError(major) || (major !== GSS_S_COMPLETE && major !== GSS_S_CONTINUE_NEEDED)) throw gssFailure(gss, call, major, minor[0]!);
    return { output: bytes, established: major === GSS_S_COMPLETE };
  }

  /** Frees what the context holds beside itself (an initiator's credential); called once no thread uses the context. */
  protected releaseHeld(): void {}

  private deleteContext(): void {
    if (this.handle !== null) gssBinding().deleteSecContext([0], [this.handle], null);
    this.handle = null;
    this.releaseHeld();
  }
}
