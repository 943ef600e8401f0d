/**
 * The sasl packet on the wire, as ZooKeeper 3.8's processSasl and AuthenticationHelper answer it,
 * byte by byte with a bare client (test/helpers/jute-client.ts): the DIGEST-MD5 exchange and its
 * zxid-0 answers, a request pipelined behind the completing packet seeing the new id, a failed
 * exchange closing the connection but not the session, and the answer to a client that did not
 * authenticate when the server requires it.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ZkErrorCode } from "../../src/common/errors.js";
import { decodeRecord, ExistsRequest, GetSASLRequest, OpCode, SetSASLResponse, WhoAmIResponse, Xid } from "../../src/server/zk-wire/records.js";
import { JuteClient } from "../helpers/jute-client.js";
import { digestResponse } from "../helpers/sasl-digest-client.js";
import { digestServerJaas } from "../helpers/jaas-files.js";
import { startSaslServer } from "../helpers/sasl-server.js";
import type { ServerProcess } from "../helpers/server-process.js";
import { makeTempDir } from "../helpers/temp-dir.js";

const tokenText = (body: Uint8Array) => Buffer.from(decodeRecord(SetSASLResponse, body).token ?? new Uint8Array(0)).toString("latin1");

describe("the sasl packet on corral's ZooKeeper port", { concurrency: 1 }, () => {
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let open: ServerProcess;
  let required: ServerProcess;

  before(async () => {
    dir = await makeTempDir("corral-sasl-wire-");
    const jaas = digestServerJaas({ bob: "bob-secret" });
    open = await startSaslServer(dir.path, "open", jaas);
    required = await startSaslServer(dir.path, "required", jaas, { extraArgs: ["--session-require-client-sasl-auth", "true"] });
  });

  after(async () => {
    await open?.stop();
    await required?.stop();
    await dir?.remove();
  });

  test("the exchange: a challenge, then rspauth, each with zxid 0; a request sent right behind the last packet sees sasl:bob", async () => {
    const client = await JuteClient.connect(open.zkConnectString);
    try {
      const challenge = await client.request(OpCode.sasl, GetSASLRequest, { token: new Uint8Array(0) });
      assert.deepEqual([challenge.header.err, challenge.header.zxid], [ZkErrorCode.OK, 0n]);
      assert.match(tokenText(challenge.body), /^realm="zk-sasl-md5",nonce="[A-Za-z0-9+/]{40}",qop="auth",charset=utf-8,algorithm=md5-sess$/);
      // Not awaited: the whoAmI goes out before the sasl answer comes back.
      const last = client.request(OpCode.sasl, GetSASLRequest, { token: Buffer.from(digestResponse(tokenText(challenge.body), "bob", "bob-secret")) });
      const who = client.request(OpCode.whoAmI, undefined, undefined);
      const done = await last;
      assert.deepEqual([done.header.err, done.header.zxid], [ZkErrorCode.OK, 0n]);
      assert.match(tokenText(done.body), /^rspauth=[0-9a-f]{32}$/);
      assert.deepEqual(decodeRecord(WhoAmIResponse, (await who).body).clientInfo, [
        { authScheme: "sasl", user: "bob" },
        { authScheme: "ip", user: "127.0.0.1" },
      ]);
    } finally {
      await client.close();
    }
  });

  test("a wrong password: AUTHFAILED with a null token, the connection closes, the session lives on", async () => {
    const client = await JuteClient.connect(open.zkConnectString);
    const { sessionId, passwd } = client.response!;
    const challenge = await client.request(OpCode.sasl, GetSASLRequest, { token: new Uint8Array(0) });
    const refused = await client.request(OpCode.sasl, GetSASLRequest, { token: Buffer.from(digestResponse(tokenText(challenge.body), "bob", "wrong")) });
    assert.deepEqual([refused.header.err, refused.header.zxid], [ZkErrorCode.AUTHFAILED, 0n]);
    assert.equal(decodeRecord(SetSASLResponse, refused.body).token, null);
    await client.closed;
    const resumed = await JuteClient.connect(open.zkConnectString, { resume: { sessionId, password: passwd! } });
    try {
      assert.equal(resumed.response!.sessionId, sessionId, "the session was not closed");
      assert.ok(resumed.response!.timeOut > 0);
    } finally {
      await resumed.close();
    }
  });

  test("sessionRequireClientSaslAuth: a request or a ping before SASL is answered SESSIONCLOSEDREQUIRESASLAUTH and the connection closes", async () => {
    for (const send of [
      (client: JuteClient) => client.request(OpCode.exists, ExistsRequest, { path: "/", watch: false }),
      (client: JuteClient) => client.request(OpCode.ping, undefined, undefined, Xid.ping),
    ]) {
      const client = await JuteClient.connect(required.zkConnectString);
      const reply = await send(client);
      assert.deepEqual([reply.header.err, reply.header.zxid, reply.body.byteLength], [ZkErrorCode.SESSIONCLOSEDREQUIRESASLAUTH, 0n, 0]);
      await client.closed;
    }
    // Authenticated first, the same request is served.
    const client = await JuteClient.connect(required.zkConnectString);
    try {
      const challenge = await client.request(OpCode.sasl, GetSASLRequest, { token: new Uint8Array(0) });
      await client.request(OpCode.sasl, GetSASLRequest, { token: Buffer.from(digestResponse(tokenText(challenge.body), "bob", "bob-secret")) });
      assert.equal((await client.request(OpCode.exists, ExistsRequest, { path: "/", watch: false })).header.err, ZkErrorCode.OK);
    } finally {
      await client.close();
    }
  });
});
