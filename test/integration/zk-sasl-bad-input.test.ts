/**
 * Malformed SASL tokens cost at most the connection that sent them. fast-check makes tokens of
 * every size — empty, short, the size of a Kerberos AP-REQ, past the mechanisms' limits, close to a
 * whole frame — some shaped like a GSS-API token (ASN.1 application tag 0x60 and the Kerberos
 * OID) so that they reach deep into MIT's parser. Each goes, alone or after a valid first step,
 * to a DIGEST-MD5 server and to a Kerberos one (a real KDC's keytab, MIT's libgssapi_krb5): every
 * answer is OK (a challenge) or AUTHFAILED followed by the end of that connection, a bystander
 * session keeps being served, and the servers are still running at the end — also after clients
 * that hang up while their token is being evaluated. The gRPC port's SaslRequests get the same:
 * each answer a challenge or AUTHFAILED and the end of that stream, an SDK session served beside —
 * also for tokens sent after a real Kerberos context is established (the SDK's own initiator, a
 * ticket from the KDC), which reach MIT's gss_unwrap as the client's choice of security layer.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { Client } from "../../src/index.js";
import { acquireInitiatorCredential, InitiatorContext } from "../../src/client/gssapi-initiator.js";
import { ZkErrorCode } from "../../src/common/errors.js";
import { decodeRecord, ExistsRequest, GetSASLRequest, OpCode, SetSASLResponse } from "../../src/server/zk-wire/records.js";
import { JuteClient } from "../helpers/jute-client.js";
import { KerberosKdc } from "../helpers/kerberos-kdc.js";
import { digestServerJaas, kerberosKeytabJaas } from "../helpers/jaas-files.js";
import { RawStream } from "../helpers/raw-session.js";
import { startSaslServer } from "../helpers/sasl-server.js";
import type { ServerProcess } from "../helpers/server-process.js";

/** The Kerberos mechanism's OID in DER (1.2.840.113554.1.2.2): a GSS-API initial token names it. */
const KRB5_OID = [0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02];

const tokens = fc.oneof(
  { weight: 3, arbitrary: fc.uint8Array({ maxLength: 64 }) },
  { weight: 3, arbitrary: fc.uint8Array({ minLength: 200, maxLength: 3000 }) },
  // GSS-API framing with a DER length and the Kerberos OID, then noise: past the first checks.
  {
    weight: 4,
    arbitrary: fc.uint8Array({ minLength: 1, maxLength: 2000 }).map((noise) => {
      const inner = [...KRB5_OID, 0x01, 0x00, ...noise];
      const length = inner.length < 128 ? [inner.length] : [0x82, inner.length >> 8, inner.length & 0xff];
      return new Uint8Array([0x60, ...length, ...inner]);
    }),
  },
  { weight: 1, arbitrary: fc.integer({ min: 65_000, max: 900_000 }).map((size) => new Uint8Array(size).fill(0x60)) },
);

/** A client that sends `steps` sasl packets; what each got, and whether the server closed it. */
async function saslAttempt(address: string, steps: readonly Uint8Array[]): Promise<{ answers: number[]; closed: boolean }> {
  const client = await JuteClient.connect(address);
  const answers: number[] = [];
  try {
    for (const token of steps) {
      const reply = await client.request(OpCode.sasl, GetSASLRequest, { token }).catch(() => undefined);
      if (reply === undefined) break;
      answers.push(reply.header.err);
      assert.equal(reply.header.zxid, 0n, "a sasl answer carries zxid 0");
      if (reply.header.err !== ZkErrorCode.OK) assert.equal(decodeRecord(SetSASLResponse, reply.body).token, null, "a refusal carries no token");
      if (reply.header.err !== ZkErrorCode.OK) break;
    }
    const closed = await Promise.race([client.closed.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 2_000))]);
    return { answers, closed };
  } finally {
    await client.close();
  }
}

/** The same over the gRPC port: SaslRequests on one stream after its connect. */
async function grpcSaslAttempt(address: string, steps: readonly Uint8Array[]): Promise<{ answers: number[]; closed: boolean }> {
  const stream = RawStream.open(address);
  const answers: number[] = [];
  try {
    await stream.connect();
    for (const [i, token] of steps.entries()) {
      const response = await stream.request({ xid: i + 1, sasl: { token } }).catch(() => undefined);
      if (response === undefined) break;
      answers.push(response.err);
      assert.equal(String(response.zxid), "0", "a sasl answer carries zxid 0");
      if (response.err !== ZkErrorCode.OK) assert.equal(response.saslToken.byteLength, 0, "a refusal carries no token");
      if (response.err !== ZkErrorCode.OK) break;
    }
    const closed = await Promise.race([stream.status.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 2_000))]);
    return { answers, closed };
  } finally {
    stream.end();
  }
}

/** Every answer a challenge (OK) or AUTHFAILED, and a refused client's connection or stream ended. */
function assertChallengeOrRefused({ answers, closed }: { answers: number[]; closed: boolean }): void {
  for (const err of answers) assert.ok(err === ZkErrorCode.OK || err === ZkErrorCode.AUTHFAILED, `answer ${err}`);
  if (answers.includes(ZkErrorCode.AUTHFAILED)) assert.ok(closed, "a refused client's connection is closed");
}

async function bystanderServed(bystander: JuteClient): Promise<void> {
  const reply = await bystander.request(OpCode.exists, ExistsRequest, { path: "/zookeeper", watch: false });
  assert.equal(reply.header.err, ZkErrorCode.OK);
}

describe("malformed SASL tokens cost at most their connection", { concurrency: 1 }, () => {
  let kdc: KerberosKdc;
  let digest: ServerProcess;
  let kerberos: ServerProcess;

  let clientKeytab: string;
  const savedKrb5Config = process.env.KRB5_CONFIG;

  before(async () => {
    kdc = await KerberosKdc.start();
    const keytab = kdc.addPrincipal("zookeeper/127.0.0.1", "server.keytab");
    clientKeytab = kdc.addPrincipal("client", "client.keytab");
    // This process initiates contexts too (the established-context case): the realm's configuration.
    process.env.KRB5_CONFIG = kdc.krb5Conf;
    digest = await startSaslServer(kdc.dir, "digest", digestServerJaas({ bob: "secret" }));
    kerberos = await startSaslServer(kdc.dir, "kerberos", kerberosKeytabJaas("Server", `zookeeper/127.0.0.1@${kdc.realm}`, keytab), {
      env: { ...kdc.env, KRB5RCACHEDIR: kdc.dir },
    });
  });

  after(async () => {
    await digest?.stop();
    await kerberos?.stop();
    await kdc?.stop();
    if (savedKrb5Config === undefined) delete process.env.KRB5_CONFIG;
    else process.env.KRB5_CONFIG = savedKrb5Config;
  });

  /**
   * A gRPC stream whose Kerberos context is established with the server (a real ticket, mutual
   * authentication) and whose server has sent its wrapped layer offer; the next token is the client's choice.
   */
  async function establishedStream(): Promise<{ stream: RawStream; release: () => void }> {
    const credential = await acquireInitiatorCredential({
      principal: `client@${kdc.realm}`,
      useKeyTab: true,
      keyTab: clientKeytab,
      useTicketCache: false,
      ticketCache: undefined,
    });
    const context = new InitiatorContext(credential, { name: `zookeeper/127.0.0.1@${kdc.realm}`, hostBased: false });
    const stream = RawStream.open(kerberos.connectString);
    try {
      await stream.connect();
      let step = await context.step(null);
      for (let xid = 1; ; xid++) {
        const response = await stream.request({ xid, sasl: { token: step.output } });
        assert.equal(response.err, ZkErrorCode.OK);
        if (step.established) break;
        step = await context.step(response.saslToken);
      }
      return { stream, release: () => context.release() };
    } catch (error) {
      context.release();
      stream.end();
      throw error;
    }
  }

  test("GSSAPI (MIT Kerberos) on the gRPC port after an established context: malformed layer choices are AUTHFAILED and the end of that stream only", async () => {
    const bystander = await Client.connect(kerberos.connectString);
    try {
      await fc.assert(
        fc.asyncProperty(tokens, async (token) => {
          const { stream, release } = await establishedStream();
          try {
            const response = await stream.request({ xid: 100, sasl: { token } }).catch(() => undefined);
            // A random token is never a valid wrap of the context: refused, or the stream ended before an answer.
            if (response !== undefined) {
              assert.equal(response.err, ZkErrorCode.AUTHFAILED);
              assert.equal(response.saslToken.byteLength, 0);
              const closed = await Promise.race([stream.status.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 2_000))]);
              assert.ok(closed, "a refused stream is ended");
            }
          } finally {
            stream.end();
            release();
          }
          assert.notEqual(await bystander.exists("/zookeeper"), null);
        }),
        { numRuns: 25 },
      );
      assert.ok(kerberos.running, "the server is still running");
      assert.match(kerberos.stderr, /gss_unwrap/);
    } finally {
      await bystander.close();
    }
  });

  for (const [name, server, firstStep, refusedBy] of [
    ["DIGEST-MD5", () => digest, [new Uint8Array(0)], /malformed digest-response|digest-response lacks/],
    // The tokens reached MIT's library, which refused them (not only corral's size check).
    ["GSSAPI (MIT Kerberos)", () => kerberos, [], /gss_accept_sec_context/],
  ] as const) {
    test(`${name}: every answer is a challenge or AUTHFAILED and the end of that connection; others are served`, async () => {
      const bystander = await JuteClient.connect(server().zkConnectString);
      try {
        await fc.assert(
          fc.asyncProperty(fc.array(tokens, { minLength: 1, maxLength: 3 }), async (steps) => {
            assertChallengeOrRefused(await saslAttempt(server().zkConnectString, [...firstStep, ...steps]));
            await bystanderServed(bystander);
          }),
          { numRuns: 120 },
        );
        // Many at once: the Kerberos steps run on worker threads, each connection waits for its own.
        const flood = await Promise.all(
          Array.from({ length: 40 }, (_, i) => saslAttempt(server().zkConnectString, [...firstStep, new Uint8Array([0x60, i, 1, 2, 3])])),
        );
        for (const { answers } of flood) assert.deepEqual(answers.slice(firstStep.length), [ZkErrorCode.AUTHFAILED]);
        // Clients that hang up while their token is being evaluated: the context outlives its connection until the call is done.
        await Promise.all(
          Array.from({ length: 40 }, async (_, i) => {
            const client = await JuteClient.connect(server().zkConnectString);
            for (const token of [...firstStep, new Uint8Array([0x60, 0x82, 0x01, i, ...KRB5_OID])])
              void client.request(OpCode.sasl, GetSASLRequest, { token }).catch(() => undefined);
            await client.close();
          }),
        );
        await bystanderServed(bystander);
        assert.ok(server().running, "the server is still running");
        assert.match(server().stderr, refusedBy);
      } finally {
        await bystander.close();
      }
    });

    test(`${name} on the gRPC port: every answer is a challenge or AUTHFAILED and the end of that stream; an SDK session is served beside`, async () => {
      const bystander = await Client.connect(server().connectString);
      try {
        await fc.assert(
          fc.asyncProperty(fc.array(tokens, { minLength: 1, maxLength: 3 }), async (steps) => {
            assertChallengeOrRefused(await grpcSaslAttempt(server().connectString, [...firstStep, ...steps]));
            assert.notEqual(await bystander.exists("/zookeeper"), null);
          }),
          { numRuns: 60 },
        );
        // Streams that go away while their token is being evaluated.
        await Promise.all(
          Array.from({ length: 20 }, async (_, i) => {
            const stream = RawStream.open(server().connectString);
            await stream.connect();
            for (const [xid, token] of [...firstStep, new Uint8Array([0x60, 0x82, 0x01, i, ...KRB5_OID])].entries())
              stream.send({ request: { xid: xid + 1, sasl: { token } } });
            stream.abandon();
          }),
        );
        assert.notEqual(await bystander.exists("/zookeeper"), null);
        assert.ok(server().running, "the server is still running");
      } finally {
        await bystander.close();
      }
    });
  }
});
