/**
 * Issue 13, ZooKeeper's sslQuorum on real server processes: three voters whose election and quorum
 * links are mutual TLS, serving TLS clients; a peer without a certificate, or with one the others
 * do not trust, is refused on every link; a member whose certificate the others do not trust
 * never joins, while the others go on serving. Certificates are made here by openssl.
 */
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { copyFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client, Perms, type ClientTlsOptions } from "../../src/index.js";
import { PEER_PROTOCOL_METADATA, PEER_PROTOCOL_VERSION, quorumServiceDefinition, SERVER_ID_METADATA } from "../../src/server/peer/peer-wire.js";
import { makeTestPki, presentedSerial, type IssuedCertificate, type TestPki } from "../helpers/certificates.js";
import { waitForLeader } from "../helpers/cluster-client.js";
import { ClusterProcess, lastRoleLine, rolesOf } from "../helpers/cluster-process.js";
import { waitFor } from "../helpers/wait.js";
import { withCode } from "../helpers/zk-error.js";

/** The shared config of a cluster whose client ports and quorum links all use `server`'s certificate. */
function tlsConfig(pki: TestPki, server: IssuedCertificate): Record<string, unknown> {
  return { sslQuorum: true, clientPortTls: true, tlsCertFile: server.certFile, tlsKeyFile: server.keyFile, tlsCaFile: pki.trusted.caFile };
}

/** Calls Quorum.Follow on `address` as member `claimedId` with `credentials`; resolves with the status the call ended with. */
async function followCall(address: string, credentials: grpc.ChannelCredentials, claimedId: number): Promise<grpc.StatusObject> {
  const client = new grpc.Client(address, credentials, { "grpc.use_local_subchannel_pool": 1 });
  try {
    const metadata = new grpc.Metadata();
    metadata.set(SERVER_ID_METADATA, String(claimedId));
    metadata.set(PEER_PROTOCOL_METADATA, String(PEER_PROTOCOL_VERSION));
    const call = client.makeBidiStreamRequest(
      quorumServiceDefinition()["Follow"]!.path,
      (b: Buffer) => b,
      (b: Buffer) => b,
      metadata,
      {
        deadline: Date.now() + 10_000,
      },
    );
    return await new Promise<grpc.StatusObject>((resolve) => {
      call.on("error", () => undefined);
      call.on("data", () => undefined);
      call.on("status", resolve);
    });
  } finally {
    client.close();
  }
}

describe("three voters over quorum mutual TLS", () => {
  let pki: TestPki;
  let cluster: ClusterProcess;
  const certs: Record<"server" | "alice" | "bob" | "noSan", IssuedCertificate> = {} as never;
  /** The files every server reads its certificate from, replaced by the reload test. */
  let shared: IssuedCertificate;

  before(async () => {
    pki = await makeTestPki();
    certs.server = await pki.trusted.issue({ subject: "/CN=corral peer", name: "server" });
    shared = { ...certs.server, certFile: join(pki.dir, "shared.pem"), keyFile: join(pki.dir, "shared.key") };
    copyFileSync(certs.server.certFile, shared.certFile);
    copyFileSync(certs.server.keyFile, shared.keyFile);
    certs.alice = await pki.trusted.issue({ subject: "/CN=alice", name: "alice", subjectAltNames: [] });
    certs.bob = await pki.trusted.issue({ subject: "/CN=bob", name: "bob", subjectAltNames: [] });
    certs.noSan = await pki.trusted.issue({ subject: "/CN=corral peer", name: "no-san", subjectAltNames: ["DNS:elsewhere.example"] });
    cluster = await ClusterProcess.start({
      voters: 3,
      tickMs: 200,
      secureZkClientPorts: true,
      config: { ...tlsConfig(pki, shared), tlsReloadIntervalMs: 100 },
    });
    await waitForLeader(cluster);
  });

  after(async () => {
    await cluster?.stop();
    await pki?.remove();
  });

  const tlsOf = (cert: IssuedCertificate): ClientTlsOptions => ({ ca: pki.trusted.ca, cert: cert.cert, key: cert.key });
  const connectTo = (id: number, cert: IssuedCertificate) => Client.connect(cluster.server(id).connectString, { tls: tlsOf(cert), connectTimeoutMs: 30_000 });

  test("the servers say their links are TLS, replicate every write, and enforce an x509 ACL made at one server at the others", async () => {
    for (const server of cluster.servers.values()) assert.match(server.stderr, /"tls":true.*"msg":"peer transport listening"/);
    const leader = cluster.agreedLeader()!;
    const [followerA, followerB] = [1, 2, 3].filter((id) => id !== leader) as [number, number];
    const alice = await connectTo(followerA, certs.alice);
    const bob = await connectTo(followerB, certs.bob);
    const atLeader = await connectTo(leader, certs.bob);
    try {
      await alice.create("/quorum-tls", "written at a follower", { acl: [{ perms: Perms.ALL, id: { scheme: "x509", id: "CN=alice" } }] });
      await bob.sync("/quorum-tls");
      // Forwarded to the leader with bob's x509 id, refused there by prep.
      await assert.rejects(bob.setData("/quorum-tls", "bob's"), withCode("NOAUTH"));
      await assert.rejects(atLeader.getData("/quorum-tls"), withCode("NOAUTH"));
      for (let i = 0; i < 20; i++) await bob.create(`/quorum-tls-${i}`, `n${i}`);
      await alice.sync("/");
      assert.equal(new TextDecoder().decode((await alice.getData("/quorum-tls-19")).data), "n19");
      assert.equal(new TextDecoder().decode((await alice.getData("/quorum-tls")).data), "written at a follower");
    } finally {
      await Promise.all([alice.close(), bob.close(), atLeader.close()]);
    }
  });

  test("on the quorum port, a plain-text peer, a certificate from another CA and one that does not name the member's host are refused", async () => {
    const leader = cluster.agreedLeader()!;
    const entry = JSON.parse(cluster.server(leader).stderr.match(/\{[^\n]*"msg":"peer transport listening"[^\n]*\}/)![0]) as { quorumAddress: string };
    const claimed = leader === 1 ? 2 : 1;
    const plain = await followCall(entry.quorumAddress, grpc.credentials.createInsecure(), claimed);
    assert.equal(plain.code, grpc.status.UNAVAILABLE, plain.details);
    const strangerCert = await pki.untrusted.issue({ subject: "/CN=corral peer", name: "stranger" });
    const stranger = await followCall(entry.quorumAddress, grpc.credentials.createSsl(pki.trusted.ca, strangerCert.key, strangerCert.cert), claimed);
    assert.equal(stranger.code, grpc.status.UNAVAILABLE, stranger.details);
    // Trusted, but not the certificate of a server at 127.0.0.1 (ZooKeeper's ssl.quorum.hostnameVerification).
    const elsewhere = await followCall(entry.quorumAddress, grpc.credentials.createSsl(pki.trusted.ca, certs.noSan.key, certs.noSan.cert), claimed);
    assert.equal(elsewhere.code, grpc.status.PERMISSION_DENIED, elsewhere.details);
    assert.match(elsewhere.details, /does not name 127\.0\.0\.1/);
    assert.ok(cluster.agreedLeader() !== undefined, "the cluster is undisturbed");
  });

  test("a certificate replaced on disk is presented by every quorum and election port without a restart, and new links work with it", async () => {
    const entries = (JSON.parse(readFileSync(cluster.configFile, "utf8")) as { servers: { id: number; quorumPort: number; electionPort: number }[] }).servers;
    const peerTls = { ca: pki.trusted.ca, cert: certs.server.cert, key: certs.server.key, ALPNProtocols: ["h2"] };
    const ports = entries.flatMap((e) => [e.quorumPort, e.electionPort]);
    for (const port of ports) assert.equal(await presentedSerial(port, peerTls), certs.server.serialNumber);
    const renewed = await pki.trusted.issue({ subject: "/CN=corral peer", name: "renewed", serialNumber: "3003" });
    copyFileSync(renewed.keyFile, shared.keyFile);
    copyFileSync(renewed.certFile, shared.certFile);
    await waitFor("every quorum and election port to present the renewed certificate", async () => {
      for (const port of ports) if ((await presentedSerial(port, peerTls)) !== renewed.serialNumber) return undefined;
      return true;
    });
    // A follower restarted now links to the others with the renewed certificate on both sides.
    const leader = cluster.agreedLeader()!;
    const follower = leader === 1 ? 2 : 1;
    await cluster.server(follower).stop();
    await cluster.server(follower).restart();
    await waitForLeader(cluster);
    const zk = await connectTo(follower, certs.alice);
    try {
      await zk.create("/after-renewal", "");
      await zk.sync("/");
      assert.ok(await zk.exists("/after-renewal"));
    } finally {
      await zk.close();
    }
  });
});

describe("a member whose certificate the others do not trust", () => {
  let pki: TestPki;
  let cluster: ClusterProcess;
  let server: IssuedCertificate;

  before(async () => {
    pki = await makeTestPki();
    server = await pki.trusted.issue({ subject: "/CN=corral peer", name: "server" });
    const impostor = await pki.untrusted.issue({ subject: "/CN=corral peer", name: "impostor" });
    cluster = await ClusterProcess.start({
      voters: 3,
      tickMs: 200,
      config: tlsConfig(pki, server),
      // Server 3 trusts the others, but presents a certificate from a CA they do not know.
      serverArgs: (id) => (id === 3 ? ["--quorum-tls-cert-file", impostor.certFile, "--quorum-tls-key-file", impostor.keyFile] : []),
    });
  });

  after(async () => {
    await cluster?.stop();
    await pki?.remove();
  });

  test("never joins: it cannot vote or learn, the other two elect a leader and serve, and it serves no session", async () => {
    const tls = { ca: pki.trusted.ca, cert: server.cert, key: server.key };
    const leader = await waitFor(
      "servers 1 and 2 to agree on a leader",
      () => {
        const roles = rolesOf(new Map([1, 2].map((id) => [id, cluster.server(id)])));
        const leading = [...roles].filter(([, r]) => r.role === "leading").map(([id]) => id);
        if (leading.length !== 1) return undefined;
        const other = leading[0] === 1 ? 2 : 1;
        return roles.get(other)?.role === "following" && roles.get(other)?.leader === leading[0] ? leading[0] : undefined;
      },
      60_000,
    );
    // Refused both ways, as each side that dialled saw it: the others do not accept server 3's
    // certificate, and server 3's connections are dropped.
    await waitFor(
      "server 3 to see its connections dropped",
      () => (/"peer":[12],[^\n]*the peer dropped the connection/.test(cluster.server(3).stderr) ? true : undefined),
      60_000,
    );
    await waitFor(
      "the others to refuse server 3's certificate",
      () => ([1, 2].some((id) => /"peer":3,[^\n]*does not accept the peer's certificate/.test(cluster.server(id).stderr)) ? true : undefined),
      60_000,
    );

    const zk = await Client.connect(cluster.server(leader).connectString, { tls, connectTimeoutMs: 30_000 });
    try {
      for (let i = 0; i < 10; i++) await zk.create(`/without-3-${i}`, "");
      await zk.sync("/");
      assert.equal((await zk.getChildren("/")).filter((c) => c.startsWith("without-3-")).length, 10);
    } finally {
      await zk.close();
    }
    const role = lastRoleLine(cluster.server(3).stderr);
    assert.ok(role === undefined || role.role === "looking", `server 3 said it was ${JSON.stringify(role)}`);
    assert.equal(cluster.server(3).running, true);
    await assert.rejects(Client.connect(cluster.server(3).connectString, { tls, connectTimeoutMs: 3_000 }), withCode("CONNECTIONLOSS"));
    assert.equal(cluster.server(3).stderr.includes('"role":"following"'), false);
  });
});
