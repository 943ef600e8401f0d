/**
 * The acceptor side of the system's GSS-API (MIT Kerberos' libgssapi_krb5.so.2, Debian's
 * libgssapi-krb5-2), called through koffi's FFI: credentials from a keytab, a security context
 * accepted token by token, the peer's name, and wrap / unwrap on that context — what SASL GSSAPI
 * (RFC 4752) needs of a server. Kerberos itself (tickets, keys, replay cache) is the library's.
 *
 * Context steps and wrap / unwrap run on koffi's worker threads (`.async`): they decrypt and may
 * touch the replay cache on disk, which must not hold the event loop. One context is used by one
 * call at a time (its mechanism server awaits each step), as MIT's contexts require.
 *
 * Every buffer the library returns is copied out and released here; every handle has one owner
 * that releases it (AcceptorContext.release, AcceptorCredential.release).
 */
import koffi, { type LibraryHandle } from "koffi";

type NativeFunction = ReturnType<LibraryHandle["func"]>;

const GSS_S_COMPLETE = 0;
const GSS_S_CONTINUE_NEEDED = 1;
/** The calling- and routine-error bits of a major status (GSS_ERROR); the low 16 are supplementary. */
const GSS_ROUTINE_ERROR_MASK = 0xffff0000;
const GSS_C_ACCEPT = 2;
const GSS_C_GSS_CODE = 1;
const GSS_C_MECH_CODE = 2;
/** 1.2.840.113554.1.2.2.1, GSS_KRB5_NT_PRINCIPAL_NAME: a name as `service/host@REALM`. */
const KRB5_PRINCIPAL_NAME_OID = Buffer.from([0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02, 0x01]);

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

interface Binding {
  importName: NativeFunction;
  acquireCredFrom: NativeFunction;
  acceptSecContext: NativeFunction;
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

let loaded: Binding | undefined;

/** Loads the libraries once; throws when they are not installed. */
function binding(): Binding {
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

interface BufferDesc {
  length: number | bigint;
  value: unknown;
}

/** A library-owned buffer's bytes, copied; the buffer is released. */
function takeBuffer(gss: Binding, buffer: BufferDesc): Uint8Array {
  const length = Number(buffer.length);
  const bytes = length === 0 || buffer.value === null ? new Uint8Array(0) : new Uint8Array(koffi.view(buffer.value, length).slice(0));
  if (buffer.value !== null) gss.releaseBuffer([0], buffer);
  return bytes;
}

function input(bytes: Uint8Array): BufferDesc {
  return { length: bytes.byteLength, value: bytes.byteLength === 0 ? null : bytes };
}

/** The library's text for a status, GSS words first, then the mechanism's. */
function statusText(gss: Binding, major: number, minor: number): string {
  const words: string[] = [];
  for (const [status, type] of [
    [major, GSS_C_GSS_CODE],
    [minor, GSS_C_MECH_CODE],
  ] as const) {
    if (type === GSS_C_MECH_CODE && minor === 0) continue;
    const context = [0];
    for (let i = 0; i < 8; i++) {
      const out: BufferDesc = { length: 0, value: null };
      if (gss.displayStatus([0], status, type, null, context, out) !== GSS_S_COMPLETE) break;
      words.push(Buffer.from(takeBuffer(gss, out)).toString("utf8"));
      if (context[0] === 0) break;
    }
  }
  return words.join("; ");
}

function failed(gss: Binding, call: string, major: number, minor: number): GssError {
  return new GssError(call, major, minor, statusText(gss, major, minor));
}

function isError(major: number): boolean {
  return (major & GSS_ROUTINE_ERROR_MASK) !== 0;
}

/** koffi's `.async`, as a promise of the call's return value. */
function callAsync(fn: NativeFunction, ...args: unknown[]): Promise<number> {
  return new Promise((resolve, reject) => {
    fn.async(...args, (error: unknown, result: unknown) =>
      error ? reject(error instanceof Error ? error : new Error("a GSS-API call failed")) : resolve(result as number),
    );
  });
}

/** The Kerberos configuration's default_realm (KRB5_CONFIG or /etc/krb5.conf); "" when none. */
export function kerberosDefaultRealm(): string {
  return binding().defaultRealm();
}

/** Acceptor credentials for `principal` from `keyTab`, held until released. */
export class AcceptorCredential {
  private constructor(private handle: unknown) {}

  /** Throws GssError when the keytab has no key for the principal (or cannot be read). */
  static acquire(principal: string, keyTab: string): AcceptorCredential {
    const gss = binding();
    const minor = [0];
    const name: unknown[] = [null];
    const nameBytes = Buffer.from(principal, "utf8");
    let major = gss.importName(minor, input(nameBytes), { length: KRB5_PRINCIPAL_NAME_OID.byteLength, elements: KRB5_PRINCIPAL_NAME_OID }, name) as number;
    if (isError(major)) throw failed(gss, "gss_import_name", major, minor[0]!);
    try {
      const credential: unknown[] = [null];
      const store = { count: 1, elements: [{ key: "keytab", value: keyTab }] };
      major = gss.acquireCredFrom(minor, name[0], 0, null, GSS_C_ACCEPT, store, credential, null, null) as number;
      if (isError(major)) throw failed(gss, "gss_acquire_cred_from", major, minor[0]!);
      return new AcceptorCredential(credential[0]);
    } finally {
      gss.releaseName([0], name);
    }
  }

  get current(): unknown {
    return this.handle;
  }

  release(): void {
    if (this.handle === null) return;
    binding().releaseCred([0], [this.handle]);
    this.handle = null;
  }
}

/**
 * One security context being accepted, then used to wrap and unwrap. A release while a call is on
 * a worker thread (the client hung up mid-step) waits for that call: the context is deleted only
 * once no thread uses it.
 */
export class AcceptorContext {
  private handle: unknown = null;
  private inFlight = 0;
  private released = false;

  constructor(private readonly credential: AcceptorCredential) {}

  /** One token of the client's; `peer` once the context is established. Rejects with GssError. */
  step(token: Uint8Array): Promise<{ output: Uint8Array; established: boolean; peer: string | undefined }> {
    return this.using(async (gss) => {
      const minor = [0];
      const context = [this.handle];
      const source: unknown[] = [null];
      const output: BufferDesc = { length: 0, value: null };
      const major = await callAsync(gss.acceptSecContext, minor, context, this.credential.current, input(token), null, source, null, output, [0], null, null);
      this.handle = context[0] ?? null;
      const bytes = takeBuffer(gss, output);
      try {
        if (isError(major)) throw failed(gss, "gss_accept_sec_context", major, minor[0]!);
        if (major === GSS_S_CONTINUE_NEEDED) return { output: bytes, established: false, peer: undefined };
        if (major !== GSS_S_COMPLETE) throw failed(gss, "gss_accept_sec_context", major, minor[0]!);
        const display: BufferDesc = { length: 0, value: null };
        const displayed = gss.displayName(minor, source[0], display, null) as number;
        if (isError(displayed)) throw failed(gss, "gss_display_name", displayed, minor[0]!);
        return { output: bytes, established: true, peer: Buffer.from(takeBuffer(gss, display)).toString("utf8") };
      } finally {
        if (source[0] !== null) gss.releaseName([0], source);
      }
    });
  }

  /** Integrity-protected (not encrypted) `message`, as the SASL GSSAPI layer negotiation sends it. */
  wrap(message: Uint8Array): Promise<Uint8Array> {
    return this.using(async (gss) => {
      const minor = [0];
      const output: BufferDesc = { length: 0, value: null };
      const major = await callAsync(gss.wrap, minor, this.handle, 0, 0, input(message), [0], output);
      const bytes = takeBuffer(gss, output);
      if (isError(major)) throw failed(gss, "gss_wrap", major, minor[0]!);
      return bytes;
    });
  }

  unwrap(token: Uint8Array): Promise<Uint8Array> {
    return this.using(async (gss) => {
      const minor = [0];
      const output: BufferDesc = { length: 0, value: null };
      const major = await callAsync(gss.unwrap, minor, this.handle, input(token), output, [0], [0]);
      const bytes = takeBuffer(gss, output);
      if (isError(major)) throw failed(gss, "gss_unwrap", major, minor[0]!);
      return bytes;
    });
  }

  release(): void {
    this.released = true;
    if (this.inFlight === 0) this.deleteContext();
  }

  private async using<R>(call: (gss: Binding) => Promise<R>): Promise<R> {
    if (this.released) throw new Error("the security context was released");
    this.inFlight += 1;
    try {
      return await call(binding());
    } finally {
      this.inFlight -= 1;
      if (this.released && this.inFlight === 0) this.deleteContext();
    }
  }

  private deleteContext(): void {
    if (this.handle === null) return;
    binding().deleteSecContext([0], [this.handle], null);
    this.handle = null;
  }
}
