/**
 * The SDK's SASL: the DIGEST-MD5 client against the server's DigestMd5Server (each side written
 * from RFC 2831, so each checks the other) and against a server that lies; the GSSAPI client
 * (RFC 4752) against the server's GssapiServer over a pair of fake GSS contexts, and against
 * servers that lie; and the JAAS Client section, DIGEST-MD5 or Kerberos, read as ZooKeeper's
 * client reads it.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { DIGEST_MD5_PROTOCOL, DIGEST_MD5_SERVER_NAME } from "../../src/common/digest-md5.js";
import { DigestMd5Client } from "../../src/client/sasl-digest-md5.js";
import { saslFromJaasFile } from "../../src/client/jaas-login.js";
import { DigestMd5Server } from "../../src/server/sasl/digest-md5.js";
import type { SaslStep } from "../../src/server/sasl/mechanism.js";
import { ZkError } from "../../src/common/errors.js";
import { GssapiClient, type GssInitiator } from "../../src/client/sasl-gssapi.js";
import { GssapiServer, type GssAcceptor } from "../../src/server/sasl/gssapi-mechanism.js";
import { digestClientJaas, kerberosKeytabJaas, kerberosTicketCacheJaas } from "../helpers/jaas-files.js";
import { makeTempDir } from "../helpers/temp-dir.js";

const PASSWORDS = new Map([
  ["bob", "bob-secret"],
  ["zoë", "pässwörd-€"],
]);

function server(): DigestMd5Server {
  let counter = 0;
  return new DigestMd5Server({
    protocol: DIGEST_MD5_PROTOCOL,
    serverName: DIGEST_MD5_SERVER_NAME,
    passwordOf: (user) => PASSWORDS.get(user),
    nonceBytes: (count) => new Uint8Array(count).fill(++counter),
  });
}

/** Runs the exchange: the server's last step, and what the client made of the server's last token. */
async function exchange(username: string, password: string, tamper: (token: Uint8Array) => Uint8Array = (t) => t) {
  const client = new DigestMd5Client(username, password, DIGEST_MD5_PROTOCOL, () => "cnonce-1");
  const side = server();
  let step: SaslStep = { kind: "continue", token: new Uint8Array(0) };
  let challenge: Uint8Array | null = null;
  for (;;) {
    const mine = await client.evaluate(challenge);
    if (mine.token === null) return { server: step, client: mine };
    step = side.step(mine.token);
    if (step.kind === "failed") return { server: step, client: mine };
    if (step.kind === "complete") return { server: step, client: await client.evaluate(tamper(step.token ?? new Uint8Array(0))).catch((e: Error) => e) };
    challenge = tamper(step.token);
  }
}

test("the DIGEST-MD5 client logs in to the server's mechanism, and checks its rspauth", async () => {
  for (const [user, password] of PASSWORDS) {
    const { server: end, client } = await exchange(user, password);
    assert.ok(end.kind === "complete", JSON.stringify(end));
    assert.equal(end.authenticationId, user);
    assert.equal(end.authorizationId, user, "the user is sent as authzid, as Java's client does");
    assert.deepEqual(client, { token: null, complete: true });
  }
});

test("a wrong password is the server's failure, never the client's completion", async () => {
  const { server: end } = await exchange("bob", "guess");
  assert.equal(end.kind, "failed");
});

test("a server that does not know the password (a wrong rspauth) is refused by the client", async () => {
  const wrongRspauth = (token: Uint8Array) => {
    const text = Buffer.from(token).toString("latin1");
    return text.startsWith("rspauth=") ? Buffer.from(`rspauth=${"0".repeat(32)}`) : token;
  };
  const { client } = await exchange("bob", "bob-secret", wrongRspauth);
  assert.ok(client instanceof Error && /rspauth is wrong/.test(client.message), JSON.stringify(client));
});

test("challenges the client cannot answer reject: no nonce, no auth qop, another algorithm, malformed, oversized, none", async () => {
  for (const challenge of [
    'realm="zk-sasl-md5",qop="auth",algorithm=md5-sess',
    'realm="zk-sasl-md5",nonce="n",qop="auth-conf",algorithm=md5-sess',
    'realm="zk-sasl-md5",nonce="n",qop="auth",algorithm=md5',
    'realm="zk-sasl-md5",nonce="unterminated',
    `nonce="${"n".repeat(3000)}",algorithm=md5-sess`,
    "",
  ]) {
    const client = new DigestMd5Client("bob", "bob-secret", DIGEST_MD5_PROTOCOL, () => "c");
    assert.deepEqual(await client.evaluate(null), { token: new Uint8Array(0), complete: false });
    await assert.rejects(client.evaluate(Buffer.from(challenge)), Error, challenge.slice(0, 60));
  }
});

test("a JAAS Client section is read as ZooKeeper's client reads it", async () => {
  const dir = await makeTempDir("corral-jaas-client-");
  try {
    const file = join(dir.path, "client.jaas");
    writeFileSync(file, digestClientJaas("bob", "bob-secret"));
    assert.deepEqual(saslFromJaasFile(file), { mechanism: "DIGEST-MD5", username: "bob", password: "bob-secret" });
    assert.deepEqual(saslFromJaasFile(file, { serviceName: "zk" }), { mechanism: "DIGEST-MD5", username: "bob", password: "bob-secret", serviceName: "zk" });
    // The default section may be missing (no SASL, as ZooKeeper goes on without it); a named one may not.
    const other = join(dir.path, "other.jaas");
    writeFileSync(other, digestClientJaas("bob", "x").replace("Client", "Other"));
    assert.equal(saslFromJaasFile(other), undefined);
    assert.deepEqual(saslFromJaasFile(other, { section: "Other" }), { mechanism: "DIGEST-MD5", username: "bob", password: "x" });
    const badArguments = (pattern: RegExp) => (error: unknown) => error instanceof ZkError && error.code === "BADARGUMENTS" && pattern.test(error.message);
    assert.throws(() => saslFromJaasFile(file, { section: "Missing" }), badArguments(/no section Missing/));
    assert.throws(() => saslFromJaasFile(join(dir.path, "absent.jaas")), badArguments(/absent\.jaas/));
    writeFileSync(other, "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required username=bob;\n};\n");
    assert.throws(() => saslFromJaasFile(other), badArguments(/no entry with username and password/));
    writeFileSync(other, "Client { broken");
    assert.throws(() => saslFromJaasFile(other), badArguments(/line 1/));
  } finally {
    await dir.remove();
  }
});

test("a Kerberos JAAS Client section is GSSAPI with Krb5LoginModule's options; one that would prompt is refused", async () => {
  const dir = await makeTempDir("corral-jaas-kerberos-");
  try {
    const file = join(dir.path, "client.jaas");
    writeFileSync(file, kerberosKeytabJaas("Client", "app@EX.COM", "/keytabs/app.keytab"));
    assert.deepEqual(saslFromJaasFile(file, { serverPrincipal: "zookeeper/zk1@EX.COM" }), {
      mechanism: "GSSAPI",
      useTicketCache: false,
      useKeyTab: true,
      principal: "app@EX.COM",
      keyTab: "/keytabs/app.keytab",
      serverPrincipal: "zookeeper/zk1@EX.COM",
    });
    writeFileSync(file, kerberosTicketCacheJaas("/tmp/cache"));
    assert.deepEqual(saslFromJaasFile(file, { serviceName: "zk" }), {
      mechanism: "GSSAPI",
      useTicketCache: true,
      useKeyTab: false,
      ticketCache: "/tmp/cache",
      serviceName: "zk",
    });
    const badArguments = (pattern: RegExp) => (error: unknown) => error instanceof ZkError && error.code === "BADARGUMENTS" && pattern.test(error.message);
    writeFileSync(file, "Client {\n  com.sun.security.auth.module.Krb5LoginModule required doNotPrompt=true;\n};\n");
    assert.throws(() => saslFromJaasFile(file), badArguments(/neither useTicketCache nor useKeyTab/));
    writeFileSync(file, 'Client {\n  com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/k";\n};\n');
    assert.throws(() => saslFromJaasFile(file), badArguments(/names no principal/));
  } finally {
    await dir.remove();
  }
});

/**
 * Two ends of one fake GSS context: the initiator's tokens are [1, n], the acceptor establishes
 * after `rounds` of them and answers `final` (mutual authentication's last token, or nothing);
 * wrapping prefixes 0xee, as both ends agree.
 */
function fakeContextPair(rounds: number, final: Uint8Array): { initiator: GssInitiator & { released: boolean }; acceptor: GssAcceptor } {
  let accepted = 0;
  let initiated = 0;
  const wrap = (message: Uint8Array) => Promise.resolve(new Uint8Array([0xee, ...message]));
  const unwrap = (token: Uint8Array) => (token[0] === 0xee ? Promise.resolve(token.subarray(1)) : Promise.reject(new Error("bad wrap token")));
  return {
    initiator: {
      released: false,
      step(token) {
        initiated += 1;
        // The initiator is established once it has seen the acceptor's last token (or at once, when that is empty).
        if (token !== null && token.byteLength > 0 && token[0] === 0x7f) return Promise.resolve({ output: new Uint8Array(0), established: true });
        const done = initiated >= rounds && final.byteLength === 0;
        return Promise.resolve({ output: new Uint8Array([1, initiated]), established: done });
      },
      wrap,
      unwrap,
      release() {
        this.released = true;
      },
    },
    acceptor: {
      step(token) {
        if (token[0] !== 1) return Promise.reject(new Error("defective token"));
        accepted += 1;
        return Promise.resolve(
          accepted < rounds ? { output: new Uint8Array([2]), established: false, peer: undefined } : { output: final, established: true, peer: "app@EX.COM" },
        );
      },
      wrap,
      unwrap,
      release: () => undefined,
    },
  };
}

/** Runs the client against the server token by token; the server's verdict. */
async function gssapiLogin(client: GssapiClient, server: GssapiServer): Promise<SaslStep> {
  let step = await client.evaluate(null);
  for (let i = 0; i < 10; i++) {
    const answer = await server.evaluate(step.token ?? new Uint8Array(0));
    if (answer.kind !== "continue") {
      assert.equal(step.complete, answer.kind === "complete", "the client is complete exactly when the server is");
      return answer;
    }
    step = await client.evaluate(answer.token);
  }
  throw new Error("the exchange did not end");
}

describe("the GSSAPI client (RFC 4752, quality of protection auth)", () => {
  for (const [what, rounds, final] of [
    ["mutual authentication (the acceptor's last token answered empty)", 1, new Uint8Array([0x7f])],
    ["a context established by its first token", 1, new Uint8Array(0)],
    ["a context of two round trips", 2, new Uint8Array([0x7f])],
  ] as const) {
    test(`logs in to the server's mechanism as its principal: ${what}`, async () => {
      const pair = fakeContextPair(rounds, final);
      const client = new GssapiClient(() => Promise.resolve(pair.initiator));
      const verdict = await gssapiLogin(client, new GssapiServer(pair.acceptor));
      assert.deepEqual(verdict, { kind: "complete", token: null, authenticationId: "app@EX.COM", authorizationId: "app@EX.COM" });
      client.dispose();
      assert.equal(pair.initiator.released, true);
    });
  }

  test("chooses no security layer with no receive buffer and no authorization id", async () => {
    const pair = fakeContextPair(1, new Uint8Array(0));
    const client = new GssapiClient(() => Promise.resolve(pair.initiator));
    await client.evaluate(null);
    const answer = await client.evaluate(new Uint8Array([0xee, 0b111, 1, 0, 0]));
    assert.deepEqual(answer, { token: new Uint8Array([0xee, 1, 0, 0, 0]), complete: true });
  });

  test("refuses servers that lie: no 'none' layer, a short or unwrappable offer, an oversized token, a context that never ends", async () => {
    for (const offer of [
      new Uint8Array([0xee, 0b110, 1, 0, 0]),
      new Uint8Array([0xee, 1, 0]),
      new Uint8Array([0x00, 1, 1, 0, 0]),
      new Uint8Array(64 * 1024 + 1),
    ]) {
      const client = new GssapiClient(() => Promise.resolve(fakeContextPair(1, new Uint8Array(0)).initiator));
      await client.evaluate(null);
      await assert.rejects(client.evaluate(offer));
    }
    const endless: GssInitiator = {
      step: () => Promise.resolve({ output: new Uint8Array([1]), established: false }),
      wrap: () => Promise.reject(new Error("unused")),
      unwrap: () => Promise.reject(new Error("unused")),
      release: () => undefined,
    };
    const client = new GssapiClient(() => Promise.resolve(endless));
    let step = await client.evaluate(null);
    const steps: unknown[] = [];
    await assert.rejects(async () => {
      for (;;) {
        step = await client.evaluate(new Uint8Array([2]));
        steps.push(step);
      }
    }, /not established after 4 steps/);
    assert.equal(steps.length, 3);
  });

  test("a login that cannot get credentials fails; a connection that ends while they are fetched releases them", async () => {
    await assert.rejects(
      new GssapiClient(() => Promise.reject(new Error("gss_acquire_cred_from: no credentials cache found"))).evaluate(null),
      /no credentials cache/,
    );
    const pair = fakeContextPair(1, new Uint8Array(0));
    let arrive!: (initiator: GssInitiator) => void;
    const client = new GssapiClient(() => new Promise((resolve) => (arrive = resolve)));
    const first = client.evaluate(null);
    client.dispose();
    arrive(pair.initiator);
    await assert.rejects(first, /connection ended/);
    assert.equal(pair.initiator.released, true);
  });
});
