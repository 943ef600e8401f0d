/**
 * The SDK's SASL: the DIGEST-MD5 client against the server's DigestMd5Server (each side written
 * from RFC 2831, so each checks the other) and against a server that lies, and the JAAS Client
 * section read as ZooKeeper's client reads it.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { DIGEST_MD5_PROTOCOL, DIGEST_MD5_SERVER_NAME } from "../../src/common/digest-md5.js";
import { DigestMd5Client } from "../../src/client/sasl-digest-md5.js";
import { saslFromJaasFile } from "../../src/client/jaas-login.js";
import { DigestMd5Server } from "../../src/server/sasl/digest-md5.js";
import type { SaslStep } from "../../src/server/sasl/mechanism.js";
import { ZkError } from "../../src/common/errors.js";
import { digestClientJaas } from "../helpers/jaas-files.js";
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
    assert.deepEqual(saslFromJaasFile(other, { section: "Other" })?.username, "bob");
    const badArguments = (pattern: RegExp) => (error: unknown) => error instanceof ZkError && error.code === "BADARGUMENTS" && pattern.test(error.message);
    assert.throws(() => saslFromJaasFile(file, { section: "Missing" }), badArguments(/no section Missing/));
    assert.throws(() => saslFromJaasFile(join(dir.path, "absent.jaas")), badArguments(/absent\.jaas/));
    writeFileSync(other, "Client {\n  com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true;\n};\n");
    assert.throws(() => saslFromJaasFile(other), badArguments(/Kerberos \(GSSAPI\)/));
    writeFileSync(other, "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required username=bob;\n};\n");
    assert.throws(() => saslFromJaasFile(other), badArguments(/no entry with username and password/));
    writeFileSync(other, "Client { broken");
    assert.throws(() => saslFromJaasFile(other), badArguments(/line 1/));
  } finally {
    await dir.remove();
  }
});
