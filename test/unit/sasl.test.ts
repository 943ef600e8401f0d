/**
 * SASL on the ZooKeeper port, piece by piece: the JAAS file, DIGEST-MD5 (RFC 2831) as Java's
 * DigestMD5Server answers ZooKeeper's clients, the GSSAPI layer negotiation (RFC 4752) over a fake
 * GSS acceptor, principal names (KerberosName), processSasl's answers, and the enforcement
 * settings. The real Kerberos library is exercised by test/integration/zk-sasl-kerberos.test.ts.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import fc from "fast-check";
import pino from "pino";
import { ZkErrorCode } from "../../src/common/errors.js";
import { ConfigError } from "../../src/server/config-error.js";
import { ServerMetrics } from "../../src/server/metrics.js";
import { authenticationMissing } from "../../src/replica/auth.js";
import { parseKerberosName, saslAuthorizedId } from "../../src/replica/kerberos-name.js";
import { ConnectionSasl, type SaslPolicy } from "../../src/server/sasl/connection-sasl.js";
import { parseDirectives } from "../../src/common/digest-md5.js";
import { DIGEST_RESPONSE_BYTES_MAX, DigestMd5Server } from "../../src/server/sasl/digest-md5.js";
import { GssapiServer, type GssAcceptor } from "../../src/server/sasl/gssapi-mechanism.js";
import { JaasSyntaxError, parseJaasConfig } from "../../src/common/jaas-config.js";
import type { SaslMechanismServer, SaslStep } from "../../src/server/sasl/mechanism.js";
import { enforcedAuthSchemes, saslLoginOf } from "../../src/server/sasl/sasl-config.js";
import { digestResponse } from "../helpers/sasl-digest-client.js";

const KAZOO_JAAS = `
Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_super="super_secret"
    user_jaasuser="jaas_password";
};`;

const KERBEROS_JAAS = `
// the server's keytab
Server {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true
  keyTab="/etc/zk/server.keytab"
  storeKey=true
  useTicketCache=false
  principal="zookeeper/zk1.example@EXAMPLE.COM";
};
/* a client section beside it */
Client {
  org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password="p\\"w";
};`;

describe("the JAAS file", () => {
  test("kazoo's DIGEST-MD5 Server section gives its users", () => {
    const login = saslLoginOf(KAZOO_JAAS, "Server", "");
    assert.equal(login.mechanism, "DIGEST-MD5");
    assert.deepEqual(login.mechanism === "DIGEST-MD5" ? [...login.passwords] : [], [
      ["super", "super_secret"],
      ["jaasuser", "jaas_password"],
    ]);
  });

  test("superPassword stands in for user super's password", () => {
    const login = saslLoginOf(KAZOO_JAAS, "Server", "other");
    assert.equal(login.mechanism === "DIGEST-MD5" ? login.passwords.get("super") : undefined, "other");
  });

  test("a Krb5LoginModule entry makes the section Kerberos, with its keytab and principal", () => {
    assert.deepEqual(saslLoginOf(KERBEROS_JAAS, "Server", ""), {
      mechanism: "GSSAPI",
      keyTab: "/etc/zk/server.keytab",
      principal: "zookeeper/zk1.example@EXAMPLE.COM",
    });
  });

  test("comments, unquoted values and escapes are read as Java reads them", () => {
    const config = parseJaasConfig(KERBEROS_JAAS);
    assert.deepEqual([...config.keys()], ["Server", "Client"]);
    const client = config.get("Client")![0]!;
    assert.equal(client.flag, "required");
    assert.equal(client.options.get("password"), 'p"w');
    assert.equal(config.get("Server")![0]!.options.get("useKeyTab"), "true");
  });

  test("a missing section, a keytab-less Kerberos entry or bad syntax is a ConfigError naming jaasConfigFile", () => {
    assert.throws(
      () => saslLoginOf(KAZOO_JAAS, "Other", ""),
      (e) => e instanceof ConfigError && e.field === "jaasConfigFile",
    );
    assert.throws(() => saslLoginOf('Server { com.sun.security.auth.module.Krb5LoginModule required principal="a/b@C"; };', "Server", ""), ConfigError);
    assert.throws(() => saslLoginOf("Server { x required a=b }", "Server", ""), ConfigError);
  });

  test("syntax errors name their line", () => {
    assert.throws(
      () => parseJaasConfig('Server {\n  m required\n  a="b\n'),
      (e) => e instanceof JaasSyntaxError && /line 3/.test(e.message),
    );
    assert.throws(
      () => parseJaasConfig("Server {\n m mandatory;\n};"),
      (e) => e instanceof JaasSyntaxError && /line 2/.test(e.message),
    );
    assert.throws(() => parseJaasConfig("A { m required; };\nA { m required; };"), /appears twice/);
  });

  test("any text either parses or is a JaasSyntaxError", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (text) => {
        try {
          parseJaasConfig(text);
        } catch (error) {
          assert.ok(error instanceof JaasSyntaxError, String(error));
        }
      }),
      { numRuns: 500 },
    );
  });
});

function digestServer(passwords: Record<string, string> = { jaasuser: "jaas_password" }): DigestMd5Server {
  let counter = 0;
  return new DigestMd5Server({
    protocol: "zookeeper",
    serverName: "zk-sasl-md5",
    passwordOf: (user) => passwords[user],
    nonceBytes: (count) => new Uint8Array(count).fill(++counter),
  });
}

const text = (step: SaslStep) => (step.kind === "failed" || step.token === null ? "" : Buffer.from(step.token).toString("latin1"));

describe("DIGEST-MD5 (RFC 2831, Java's DigestMD5Server for protocol zookeeper, server zk-sasl-md5)", () => {
  test("the challenge offers ZooKeeper's realm, a fresh nonce, qop auth, UTF-8 and md5-sess", () => {
    const step = digestServer().step(new Uint8Array(0));
    assert.equal(step.kind, "continue");
    assert.equal(text(step), `realm="zk-sasl-md5",nonce="${Buffer.alloc(30, 1).toString("base64")}",qop="auth",charset=utf-8,algorithm=md5-sess`);
  });

  test("the right password completes the exchange with rspauth, the server's proof", () => {
    const server = digestServer();
    const challenge = text(server.step(new Uint8Array(0)));
    const step = server.step(Buffer.from(digestResponse(challenge, "jaasuser", "jaas_password")));
    assert.equal(step.kind, "complete");
    if (step.kind !== "complete") return;
    assert.equal(step.authenticationId, "jaasuser");
    assert.equal(step.authorizationId, "jaasuser");
    // rspauth is the response digest with A2 = ":" digest-uri.
    const c = parseDirectives(challenge) as Map<string, string>;
    const md5 = (b: Buffer | string) => createHash("md5").update(b).digest();
    const a1 = Buffer.concat([md5(`jaasuser:zk-sasl-md5:jaas_password`), Buffer.from(`:${c.get("nonce")}:OA6MHXh6VqTrRk`)]);
    const rspauth = md5(`${md5(a1).toString("hex")}:${c.get("nonce")}:00000001:OA6MHXh6VqTrRk:auth:${md5(":zookeeper/zk-sasl-md5").toString("hex")}`).toString(
      "hex",
    );
    assert.equal(text(step), `rspauth=${rspauth}`);
  });

  const refusals: [string, (challenge: string) => string][] = [
    ["a wrong password", (c) => digestResponse(c, "jaasuser", "wrong")],
    ["an unknown user", (c) => digestResponse(c, "baduser", "badpassword")],
    ["another nonce", (c) => digestResponse(c, "jaasuser", "jaas_password", { nonce: "AAAA" })],
    ["a replayed nonce count", (c) => digestResponse(c, "jaasuser", "jaas_password", { nc: "00000002" })],
    ["another realm", (c) => digestResponse(c, "jaasuser", "jaas_password", { realm: "elsewhere" })],
    ["another service in the digest-uri", (c) => digestResponse(c, "jaasuser", "jaas_password", { "digest-uri": "ldap/zk-sasl-md5" })],
    ["another host in the digest-uri", (c) => digestResponse(c, "jaasuser", "jaas_password", { "digest-uri": "zookeeper/other" })],
    ["a qop that was not offered", (c) => digestResponse(c, "jaasuser", "jaas_password", { qop: "auth-conf" })],
    ["a response that is not the digest", (c) => digestResponse(c, "jaasuser", "jaas_password", { response: "0".repeat(32) })],
    ["a directive given twice", (c) => digestResponse(c, "jaasuser", "jaas_password") + ',username="jaasuser"'],
    ["no response at all", () => 'username="jaasuser"'],
    ["an oversized response", () => "x".repeat(DIGEST_RESPONSE_BYTES_MAX + 1)],
  ];
  for (const [what, respond] of refusals) {
    test(`${what} fails the exchange`, () => {
      const server = digestServer();
      const challenge = text(server.step(new Uint8Array(0)));
      assert.equal(server.step(Buffer.from(respond(challenge), "latin1")).kind, "failed");
    });
  }

  test("an initial response, and any token after the exchange, fail", () => {
    assert.equal(digestServer().step(Buffer.from("username=x")).kind, "failed");
    const server = digestServer();
    const challenge = text(server.step(new Uint8Array(0)));
    assert.equal(server.step(Buffer.from(digestResponse(challenge, "jaasuser", "jaas_password"))).kind, "complete");
    assert.equal(server.step(new Uint8Array(0)).kind, "failed");
  });

  test("with charset=utf-8, a password beyond ISO 8859-1 is hashed as UTF-8", () => {
    const server = digestServer({ jürgen: "пароль" });
    const challenge = text(server.step(new Uint8Array(0)));
    const c = parseDirectives(challenge) as Map<string, string>;
    const md5 = (b: Buffer | string) => createHash("md5").update(b).digest();
    // The user fits ISO 8859-1 (hashed so); the password does not (hashed as UTF-8).
    const key = md5(Buffer.concat([Buffer.from("jürgen", "latin1"), Buffer.from(":zk-sasl-md5:"), Buffer.from("пароль", "utf8")]));
    const a1 = Buffer.concat([key, Buffer.from(`:${c.get("nonce")}:cn`)]);
    const response = md5(`${md5(a1).toString("hex")}:${c.get("nonce")}:00000001:cn:auth:${md5("AUTHENTICATE:zookeeper/zk-sasl-md5").toString("hex")}`).toString(
      "hex",
    );
    const user = Buffer.from("jürgen", "utf8").toString("latin1");
    const token = `charset=utf-8,username="${user}",realm="zk-sasl-md5",nonce="${c.get("nonce")}",cnonce="cn",nc=00000001,qop=auth,digest-uri="zookeeper/zk-sasl-md5",response=${response}`;
    const step = server.step(Buffer.from(token, "latin1"));
    assert.equal(step.kind === "complete" ? step.authenticationId : step.kind, "jürgen");
  });

  test("any bytes as a response fail the exchange and never throw", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (token) => {
        const server = digestServer();
        server.step(new Uint8Array(0));
        assert.equal(server.step(token).kind, "failed");
      }),
      { numRuns: 1000 },
    );
  });
});

/** A GSS acceptor that accepts after `rounds` tokens, as `peer`, and wraps by prefixing a byte. */
function fakeAcceptor(peer: string, rounds = 1, finalToken = new Uint8Array([7])): GssAcceptor & { released: boolean } {
  let seen = 0;
  return {
    released: false,
    step: (token) => {
      if (token.byteLength === 0) return Promise.reject(new Error("defective token"));
      seen += 1;
      return Promise.resolve(
        seen < rounds ? { output: new Uint8Array([seen]), established: false, peer: undefined } : { output: finalToken, established: true, peer },
      );
    },
    wrap: (message) => Promise.resolve(new Uint8Array([0xee, ...message])),
    unwrap: (token) => (token[0] === 0xee ? Promise.resolve(token.subarray(1)) : Promise.reject(new Error("bad wrap token"))),
    release() {
      this.released = true;
    },
  };
}

describe("GSSAPI (RFC 4752, quality of protection auth)", () => {
  test("context, then the wrapped layer offer, then the client's wrapped choice completes as the peer", async () => {
    const server = new GssapiServer(fakeAcceptor("client@EXAMPLE.COM", 2));
    assert.deepEqual(await server.evaluate(new Uint8Array([1])), { kind: "continue", token: new Uint8Array([1]) });
    assert.deepEqual(await server.evaluate(new Uint8Array([2])), { kind: "continue", token: new Uint8Array([7]) });
    // No security layer (1), 65536 bytes receivable, wrapped.
    assert.deepEqual(await server.evaluate(new Uint8Array(0)), { kind: "continue", token: new Uint8Array([0xee, 1, 1, 0, 0]) });
    assert.deepEqual(await server.evaluate(new Uint8Array([0xee, 1, 0, 0x10, 0])), {
      kind: "complete",
      token: null,
      authenticationId: "client@EXAMPLE.COM",
      authorizationId: "client@EXAMPLE.COM",
    });
  });

  test("the offer follows at once when the context's last step has no token; an authzid is passed on", async () => {
    const server = new GssapiServer(fakeAcceptor("client@EXAMPLE.COM", 1, new Uint8Array(0)));
    assert.deepEqual(await server.evaluate(new Uint8Array([1])), { kind: "continue", token: new Uint8Array([0xee, 1, 1, 0, 0]) });
    const step = await server.evaluate(new Uint8Array([0xee, 1, 0, 0, 0, ...Buffer.from("other")]));
    assert.equal(step.kind === "complete" ? step.authorizationId : step.kind, "other");
  });

  test("a security layer other than none, a bad wrap token or a token after the context's end fail", async () => {
    for (const answer of [
      new Uint8Array([0xee, 2, 0, 0, 0]),
      new Uint8Array([0xee, 4, 0, 0, 0]),
      new Uint8Array([0x00, 1, 0, 0, 0]),
      new Uint8Array([0xee, 1]),
    ]) {
      const server = new GssapiServer(fakeAcceptor("c@R", 1, new Uint8Array(0)));
      await server.evaluate(new Uint8Array([1]));
      assert.equal((await server.evaluate(answer)).kind, "failed", String(answer));
    }
    const server = new GssapiServer(fakeAcceptor("c@R", 1));
    await server.evaluate(new Uint8Array([1]));
    assert.equal((await server.evaluate(new Uint8Array([9]))).kind, "failed");
  });

  test("a token the GSS library refuses fails the exchange, and dispose releases the context", async () => {
    const acceptor = fakeAcceptor("c@R");
    const server = new GssapiServer(acceptor);
    assert.equal((await server.evaluate(new Uint8Array(0))).kind, "failed");
    server.dispose();
    assert.equal(acceptor.released, true);
  });
});

describe("principal names (KerberosName, SaslServerCallbackHandler)", () => {
  test("names parse as service[/host]@REALM or a simple name; others are invalid", () => {
    assert.deepEqual(parseKerberosName("zookeeper/h.example@EX.COM"), { serviceName: "zookeeper", hostName: "h.example", realm: "EX.COM" });
    assert.deepEqual(parseKerberosName("bob"), { serviceName: "bob", hostName: undefined, realm: undefined });
    assert.equal(parseKerberosName("a@b@c"), undefined);
  });

  const rules = { removeHostFromPrincipal: false, removeRealmFromPrincipal: false, defaultRealm: "EX.COM" };
  const cases: [string, Partial<typeof rules>, string | undefined][] = [
    ["client@EX.COM", {}, "client@EX.COM"],
    ["client@EX.COM", { removeRealmFromPrincipal: true }, "client"],
    ["hbase/h1.example@EX.COM", {}, "hbase/h1.example@EX.COM"],
    ["hbase/h1.example@EX.COM", { removeHostFromPrincipal: true }, "hbase@EX.COM"],
    ["hbase/h1.example@EX.COM", { removeHostFromPrincipal: true, removeRealmFromPrincipal: true }, "hbase"],
    // Another realm has no short name under the DEFAULT rule: the authorization id stays.
    ["client@OTHER.COM", { removeRealmFromPrincipal: true }, "authz"],
    ["jaasuser", { removeRealmFromPrincipal: true }, "jaasuser"],
    ["a@b@c", {}, undefined],
  ];
  for (const [principal, overrides, id] of cases) {
    test(`${principal} with ${JSON.stringify(overrides)} is ${id}`, () => {
      assert.equal(saslAuthorizedId(principal, "authz", { ...rules, ...overrides }), id);
    });
  }
});

const quiet = pino({ level: "silent" });

function policy(mechanism: () => SaslMechanismServer, overrides: Partial<SaslPolicy> = {}): SaslPolicy {
  return {
    newMechanism: mechanism,
    rules: { removeHostFromPrincipal: false, removeRealmFromPrincipal: false, defaultRealm: "" },
    superUsers: new Set(),
    saslRequired: false,
    allowSaslFailedClients: false,
    ...overrides,
  };
}

async function digestExchange(sasl: ConnectionSasl, user: string, password: string) {
  const challenge = await sasl.answer(new Uint8Array(0), "0x1");
  return sasl.answer(Buffer.from(digestResponse(Buffer.from(challenge.token!).toString("latin1"), user, password)), "0x1");
}

describe("processSasl's answers", () => {
  test("without a SASL login: OK, no token, nothing added", async () => {
    const sasl = new ConnectionSasl({ ...policy(() => digestServer()), newMechanism: undefined }, { authenticated: () => {} }, quiet);
    assert.deepEqual(await sasl.answer(new Uint8Array([1, 2]), "0x1"), { err: ZkErrorCode.OK, token: null, ids: [], close: false });
  });

  test("the completing step adds sasl:<id>, and super for a configured super user", async () => {
    const outcomes: string[] = [];
    const record = { authenticated: (scheme: string, ok: boolean) => outcomes.push(`${scheme} ${ok}`) };
    const plain = await digestExchange(
      new ConnectionSasl(
        policy(() => digestServer()),
        record,
        quiet,
      ),
      "jaasuser",
      "jaas_password",
    );
    assert.deepEqual([plain.err, plain.ids, plain.close], [0, [{ scheme: "sasl", id: "jaasuser" }], false]);
    const superUser = await digestExchange(
      new ConnectionSasl(
        policy(() => digestServer(), { superUsers: new Set(["jaasuser"]) }),
        record,
        quiet,
      ),
      "jaasuser",
      "jaas_password",
    );
    assert.deepEqual(superUser.ids, [
      { scheme: "sasl", id: "jaasuser" },
      { scheme: "super", id: "" },
    ]);
    assert.deepEqual(outcomes, ["sasl true", "sasl true"]);
  });

  test("a failed step is AUTHFAILED, no token, and closes the connection", async () => {
    const answer = await digestExchange(
      new ConnectionSasl(
        policy(() => digestServer()),
        { authenticated: () => {} },
        quiet,
      ),
      "jaasuser",
      "nope",
    );
    assert.deepEqual(answer, { err: ZkErrorCode.AUTHFAILED, token: null, ids: [], close: true });
  });

  test("when SASL is required, a failure is SESSIONCLOSEDREQUIRESASLAUTH", async () => {
    const answer = await digestExchange(
      new ConnectionSasl(
        policy(() => digestServer(), { saslRequired: true }),
        { authenticated: () => {} },
        quiet,
      ),
      "x",
      "y",
    );
    assert.deepEqual([answer.err, answer.close], [ZkErrorCode.SESSIONCLOSEDREQUIRESASLAUTH, true]);
  });

  test("allowSaslFailedClients keeps the connection, answered OK without an id, unless SASL is required", async () => {
    const kept = await digestExchange(
      new ConnectionSasl(
        policy(() => digestServer(), { allowSaslFailedClients: true }),
        { authenticated: () => {} },
        quiet,
      ),
      "x",
      "y",
    );
    assert.deepEqual(kept, { err: ZkErrorCode.OK, token: null, ids: [], close: false });
    const required = policy(() => digestServer(), { allowSaslFailedClients: true, saslRequired: true });
    assert.equal((await digestExchange(new ConnectionSasl(required, { authenticated: () => {} }, quiet), "x", "y")).close, true);
  });

  test("a packet after a completed exchange fails", async () => {
    const sasl = new ConnectionSasl(
      policy(() => digestServer()),
      { authenticated: () => {} },
      quiet,
    );
    await digestExchange(sasl, "jaasuser", "jaas_password");
    assert.equal((await sasl.answer(new Uint8Array(0), "0x1")).err, ZkErrorCode.AUTHFAILED);
  });
});

describe("enforcement (AuthenticationHelper)", () => {
  const settings = { sessionRequireClientSaslAuth: false, enforceAuthEnabled: false, enforceAuthSchemes: "" };
  test("sessionRequireClientSaslAuth is sasl alone; enforceAuthEnabled takes its schemes; off, nothing", () => {
    assert.deepEqual(
      [...enforcedAuthSchemes({ ...settings, sessionRequireClientSaslAuth: true, enforceAuthEnabled: true, enforceAuthSchemes: "digest" })],
      ["sasl"],
    );
    assert.deepEqual([...enforcedAuthSchemes({ ...settings, enforceAuthEnabled: true, enforceAuthSchemes: " digest , sasl" })], ["digest", "sasl"]);
    assert.deepEqual([...enforcedAuthSchemes({ ...settings, enforceAuthSchemes: "digest" })], []);
  });

  test("enforcing no scheme, or an unknown one, is a ConfigError", () => {
    assert.throws(() => enforcedAuthSchemes({ ...settings, enforceAuthEnabled: true }), ConfigError);
    assert.throws(() => enforcedAuthSchemes({ ...settings, enforceAuthEnabled: true, enforceAuthSchemes: "kerberos" }), ConfigError);
  });

  test("a connection lacks authentication until it holds an id of an enforced scheme", () => {
    const sasl = new Set(["sasl"]);
    assert.equal(authenticationMissing([{ scheme: "ip", id: "127.0.0.1" }], sasl), true);
    assert.equal(
      authenticationMissing(
        [
          { scheme: "ip", id: "127.0.0.1" },
          { scheme: "sasl", id: "bob" },
        ],
        sasl,
      ),
      false,
    );
    assert.equal(authenticationMissing([{ scheme: "ip", id: "127.0.0.1" }], new Set(["ip"])), false);
    assert.equal(authenticationMissing([], new Set()), false);
  });
});

describe("the authentication metric", () => {
  test("corral_client_authentications counts by scheme and result; a scheme corral does not know is one label", async () => {
    const metrics = new ServerMetrics();
    try {
      metrics.clientAuthenticated("sasl", true);
      metrics.clientAuthenticated("sasl", false);
      metrics.clientAuthenticated("digest", true);
      for (const scheme of ["bogus", "x".repeat(300), "é"]) metrics.clientAuthenticated(scheme, false);
      const text = await metrics.registry.getSingleMetricAsString("corral_client_authentications");
      const samples = text.split("\n").filter((line) => !line.startsWith("#"));
      assert.deepEqual(samples.sort(), [
        'corral_client_authentications{scheme="digest",result="success"} 1',
        'corral_client_authentications{scheme="sasl",result="failure"} 1',
        'corral_client_authentications{scheme="sasl",result="success"} 1',
        'corral_client_authentications{scheme="unknown",result="failure"} 3',
      ]);
    } finally {
      metrics.close();
    }
  });
});
