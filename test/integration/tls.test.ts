/**
 * Issue 13, TLS on the client ports of a real server process, with certificates made here by
 * openssl (test/helpers/certificates.ts): the SDK over TLS on the gRPC port, ZooKeeper's
 * secureClientPort for jute clients and zkCli.sh, client certificates required, wanted or not
 * asked for, x509 ids in ACLs and for the super user, no plain text on a TLS port, and a
 * certificate replaced on disk taken without a restart.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { connect as connectTls, type ConnectionOptions } from "node:tls";
import { promisify } from "node:util";
import { Client, CREATOR_ALL_ACL, Perms, type ClientTlsOptions } from "../../src/index.js";
import { CreateRequest, decodeRecord, GetDataRequest, GetDataResponse, OpCode } from "../../src/server/zk-wire/records.js";
import { makeTestPki, presentedSerial, type IssuedCertificate, type TestPki } from "../helpers/certificates.js";
import { JuteClient } from "../helpers/jute-client.js";
import { freePort, ServerProcess } from "../helpers/server-process.js";
import { TcpProxy } from "../helpers/tcp-proxy.js";
import { makeTempDir } from "../helpers/temp-dir.js";
import { waitFor } from "../helpers/wait.js";
import { normaliseZkCli, runZkCli, zkCliTlsFlags } from "../helpers/zk-cli-tools.js";
import { freshRoot, zkCliScript } from "../helpers/zk-diff-scripts.js";
import { withCode } from "../helpers/zk-error.js";

const OPEN_ACL = [{ perms: Perms.ALL, id: { scheme: "world", id: "anyone" } }];
const ZNONODE_NOAUTH = -102;
const bytes = (text: string) => new TextEncoder().encode(text);
const portOf = (hostPort: string) => Number(hostPort.slice(hostPort.lastIndexOf(":") + 1));

/**
 * Opens a TLS connection and waits until the server ends it; resolves with why (the TLS error the
 * client saw, or "closed"). Rejects if the server still holds the connection open after `limitMs`.
 */
async function refusedHandshake(port: number, options: ConnectionOptions, limitMs = 10_000): Promise<string> {
  const socket = connectTls({ host: "127.0.0.1", port, ...options });
  socket.on("data", () => undefined); // read, so that an alert after the handshake is seen
  try {
    return await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the server kept a TLS connection on ${port} open`)), limitMs);
      socket.once("error", (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        resolve(error.code ?? error.message);
      });
      socket.once("close", () => {
        clearTimeout(timer);
        resolve("closed");
      });
    });
  } finally {
    socket.destroy();
  }
}

/** The subject of each PEM certificate file as Java's X500Principal.getName() spells it, from the JVM itself. */
async function javaSubjects(dir: string, certFiles: string[]): Promise<string[]> {
  const source = join(dir, "Subject.java");
  writeFileSync(
    source,
    `import java.io.FileInputStream;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
public class Subject {
  public static void main(String[] files) throws Exception {
    CertificateFactory factory = CertificateFactory.getInstance("X.509");
    for (String file : files) {
      try (FileInputStream in = new FileInputStream(file)) {
        System.out.println(((X509Certificate) factory.generateCertificate(in)).getSubjectX500Principal().getName());
      }
    }
  }
}
`,
  );
  const { stdout } = await promisify(execFile)("java", [source, ...certFiles], { timeout: 60_000, encoding: "utf8" });
  return stdout.replace(/\n$/, "").split("\n");
}

describe("a standalone server with TLS on its gRPC port and a secure ZooKeeper port, client certificates required", () => {
  let pki: TestPki;
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let server: ServerProcess;
  const certs: Record<"server" | "alice" | "bob" | "admin" | "stranger" | "zkcli", IssuedCertificate> = {} as never;
  const ALICE = "O=corral,CN=alice";
  const BOB = "O=corral,CN=bob";
  const ADMIN = "O=corral,CN=admin";

  before(async () => {
    pki = await makeTestPki();
    certs.server = await pki.trusted.issue({ subject: "/CN=corral server", name: "server" });
    certs.alice = await pki.trusted.issue({ subject: "/CN=alice/O=corral", name: "alice", subjectAltNames: [] });
    certs.bob = await pki.trusted.issue({ subject: "/CN=bob/O=corral", name: "bob", subjectAltNames: [] });
    certs.admin = await pki.trusted.issue({ subject: "/CN=admin/O=corral", name: "admin", subjectAltNames: [] });
    certs.zkcli = await pki.trusted.issue({ subject: "/CN=zkcli", name: "zkcli", subjectAltNames: [] });
    certs.stranger = await pki.untrusted.issue({ subject: "/CN=alice/O=corral", name: "stranger", subjectAltNames: [] });
    dir = await makeTempDir("corral-tls-server-");
    server = await ServerProcess.start({
      dataDir: dir.path,
      zkPort: await freePort(),
      secureZkPort: await freePort(),
      adminPort: await freePort(),
      logLevel: "info",
      extraArgs: [
        "--client-port-tls",
        "true",
        "--tls-cert-file",
        certs.server.certFile,
        "--tls-key-file",
        certs.server.keyFile,
        "--tls-ca-file",
        pki.trusted.caFile,
        "--x509-super-user",
        ADMIN,
      ],
    });
  });

  after(async () => {
    await server?.stop();
    await dir?.remove();
    await pki?.remove();
  });

  const tlsOf = (cert: IssuedCertificate | undefined): ClientTlsOptions => ({ ca: pki.trusted.ca, ...(cert ? { cert: cert.cert, key: cert.key } : {}) });
  const connect = (cert: IssuedCertificate | undefined, connectString = server.connectString, connectTimeoutMs = 10_000) =>
    Client.connect(connectString, { tls: tlsOf(cert), connectTimeoutMs });
  const juteTls = (cert: IssuedCertificate): ConnectionOptions => ({ ca: pki.trusted.ca, cert: cert.cert, key: cert.key });

  test("the SDK works over TLS, and its session carries its certificate's subject as its x509 id", async () => {
    const zk = await connect(certs.alice);
    try {
      await zk.create("/tls-sdk", "hello over TLS");
      assert.equal(new TextDecoder().decode((await zk.getData("/tls-sdk")).data), "hello over TLS");
      // (in ZooKeeper's order for a connection's ids, which is its hash set's)
      assert.deepEqual((await zk.whoAmI()).map((id) => `${id.authScheme}:${id.user}`).sort(), ["ip:127.0.0.1", `x509:${ALICE}`]);
    } finally {
      await zk.close();
    }
  });

  test("the web console reads the tree through the server's own TLS-only client port, as the server's certificate", async () => {
    const zk = await connect(certs.alice);
    try {
      await zk.create("/console-over-tls", "seen by the console");
    } finally {
      await zk.close();
    }
    const answer = await fetch(`${server.adminUrl}/console/api/node?path=${encodeURIComponent("/console-over-tls")}`);
    const body = (await answer.json()) as { data?: { text?: string } };
    assert.equal(answer.status, 200, JSON.stringify(body));
    assert.match(JSON.stringify(body.data), /seen by the console/);
  });

  test("a client without a certificate is refused on both TLS ports, and the SDK gets no session", async () => {
    const gone = await refusedHandshake(server.port, { ca: pki.trusted.ca, ALPNProtocols: ["h2"] });
    assert.match(gone, /CERTIFICATE_REQUIRED|closed|ECONNRESET/);
    assert.match(await refusedHandshake(portOf(server.secureZkConnectString), { ca: pki.trusted.ca }), /CERTIFICATE_REQUIRED|closed|ECONNRESET/);
    await assert.rejects(connect(undefined, server.connectString, 3_000), withCode("CONNECTIONLOSS"));
    await assert.rejects(JuteClient.connect(server.secureZkConnectString, { tls: { ca: pki.trusted.ca } }));
    // The server goes on serving clients that have one.
    const zk = await connect(certs.bob);
    await zk.close();
  });

  test("a certificate from a CA the server does not trust is refused, whatever its subject", async () => {
    const stranger = { ca: pki.trusted.ca, cert: certs.stranger.cert, key: certs.stranger.key };
    assert.match(await refusedHandshake(server.port, { ...stranger, ALPNProtocols: ["h2"] }), /UNKNOWN_CA|closed|ECONNRESET/);
    assert.match(await refusedHandshake(portOf(server.secureZkConnectString), stranger), /UNKNOWN_CA|closed|ECONNRESET/);
    await assert.rejects(connect(certs.stranger, server.connectString, 3_000), withCode("CONNECTIONLOSS"));
  });

  test("a plain-text client is refused on both TLS ports", async () => {
    await assert.rejects(Client.connect(server.connectString, { connectTimeoutMs: 3_000 }), withCode("CONNECTIONLOSS"));
    const jute = await JuteClient.open(server.secureZkConnectString);
    await assert.rejects(jute.handshake(), /closed before the connect answer/);
    assert.match(server.stderr, /TLS handshake on the secure ZooKeeper port failed/);
  });

  test("a sniffer on the link sees no znode path or data through either TLS port (and does on the plain ZooKeeper port)", async () => {
    const marker = "PLAINTEXT-MARKER-7f3a";
    const sniffGrpc = await TcpProxy.start(server.port, { capture: true });
    const sniffSecure = await TcpProxy.start(portOf(server.secureZkConnectString), { capture: true });
    const sniffPlain = await TcpProxy.start(portOf(server.zkConnectString), { capture: true });
    try {
      const zk = await connect(certs.alice, sniffGrpc.address);
      await zk.create(`/sniff-grpc-${marker}`, `data-${marker}`);
      assert.equal(new TextDecoder().decode((await zk.getData(`/sniff-grpc-${marker}`)).data), `data-${marker}`);
      await zk.close();

      const secure = await JuteClient.connect(sniffSecure.address, { tls: juteTls(certs.alice) });
      assert.equal(
        (await secure.request(OpCode.create, CreateRequest, { path: `/sniff-secure-${marker}`, data: bytes(`data-${marker}`), acl: OPEN_ACL, flags: 0 })).header
          .err,
        0,
      );
      const read = await secure.request(OpCode.getData, GetDataRequest, { path: `/sniff-secure-${marker}`, watch: false });
      assert.equal(new TextDecoder().decode(decodeRecord(GetDataResponse, read.body).data), `data-${marker}`);
      await secure.close();

      const plain = await JuteClient.connect(sniffPlain.address);
      assert.equal(
        (await plain.request(OpCode.create, CreateRequest, { path: `/sniff-plain-${marker}`, data: bytes(`data-${marker}`), acl: OPEN_ACL, flags: 0 })).header
          .err,
        0,
      );
      await plain.close();

      for (const [name, proxy] of [
        ["gRPC", sniffGrpc],
        ["secure ZooKeeper", sniffSecure],
      ] as const) {
        const seen = proxy.captured();
        assert.ok(seen.byteLength > 500, `the ${name} sniffer saw the session's traffic (${seen.byteLength} bytes)`);
        assert.equal(seen.includes(marker), false, `plain text on the ${name} TLS port`);
        assert.equal(seen.includes("sniff-"), false, `a path in plain text on the ${name} TLS port`);
      }
      assert.equal(sniffPlain.captured().includes(marker), true, "the sniffer does see plain text where there is some");
    } finally {
      await Promise.all([sniffGrpc.close(), sniffSecure.close(), sniffPlain.close()]);
    }
  });

  test("an x509 ACL is enforced through both doors, the x509 super user passes it, and an auth entry becomes the creator's x509 id", async () => {
    const alice = await connect(certs.alice);
    const bob = await connect(certs.bob);
    const admin = await connect(certs.admin);
    try {
      await alice.create("/tls-acl", "alice's", { acl: [{ perms: Perms.ALL, id: { scheme: "x509", id: ALICE } }] });
      assert.equal(new TextDecoder().decode((await alice.getData("/tls-acl")).data), "alice's");
      await assert.rejects(bob.getData("/tls-acl"), withCode("NOAUTH"));
      await assert.rejects(bob.setData("/tls-acl", "bob's"), withCode("NOAUTH"));
      // The super user: x509SuperUser's certificate also holds the super id.
      assert.deepEqual((await admin.whoAmI()).map((id) => id.authScheme).sort(), ["ip", "super", "x509"]);
      await admin.setData("/tls-acl", "admin's");
      assert.equal(new TextDecoder().decode((await alice.getData("/tls-acl")).data), "admin's");

      await alice.create("/tls-acl-creator", "", { acl: CREATOR_ALL_ACL });
      assert.deepEqual((await alice.getACL("/tls-acl-creator")).acl, [{ perms: Perms.ALL, id: { scheme: "x509", id: ALICE } }]);
      await assert.rejects(bob.setData("/tls-acl-creator", "bob's"), withCode("NOAUTH"));
      await bob.create("/tls-acl-bob", "", { acl: [{ perms: Perms.READ, id: { scheme: "x509", id: BOB } }] });
      await assert.rejects(bob.create("/tls-acl-bad", "", { acl: [{ perms: Perms.READ, id: { scheme: "x509", id: "not a DN" } }] }), withCode("INVALIDACL"));

      // The secure ZooKeeper port: the same ids from the same certificates.
      const juteBob = await JuteClient.connect(server.secureZkConnectString, { tls: juteTls(certs.bob) });
      const juteAlice = await JuteClient.connect(server.secureZkConnectString, { tls: juteTls(certs.alice) });
      try {
        assert.equal((await juteBob.request(OpCode.getData, GetDataRequest, { path: "/tls-acl", watch: false })).header.err, ZNONODE_NOAUTH);
        const read = await juteAlice.request(OpCode.getData, GetDataRequest, { path: "/tls-acl", watch: false });
        assert.equal(read.header.err, 0);
        assert.equal(new TextDecoder().decode(decodeRecord(GetDataResponse, read.body).data), "admin's");
      } finally {
        await Promise.all([juteBob.close(), juteAlice.close()]);
      }
    } finally {
      await Promise.all([alice.close(), bob.close(), admin.close()]);
    }
  });

  test("zkCli.sh over TLS to the secure ZooKeeper port reads the same as over the plain port, its x509 id added to whoami", async () => {
    // The same script on two fresh roots of one server; the transcripts compare with the roots named alike.
    const plainRoot = freshRoot("tls-plain");
    const secureRoot = freshRoot("tls-secure");
    const plain = normaliseZkCli(await runZkCli(server.zkConnectString, zkCliScript(plainRoot), 60_000)).map((line) => line.replaceAll(plainRoot, "<root>"));
    const flags = zkCliTlsFlags({ caFile: pki.trusted.caFile, keyStoreFile: certs.zkcli.keyStoreFile });
    const secure = normaliseZkCli(await runZkCli(server.secureZkConnectString, zkCliScript(secureRoot), 60_000, { jvmFlags: flags })).map((line) =>
      line.replaceAll(secureRoot, "<root>"),
    );
    assert.ok(plain.includes("out: hello") && plain.includes("out: digest: alice"), `the plain run did its work:\n${plain.join("\n")}`);
    const x509Lines = secure.filter((line) => line.startsWith("out: x509: "));
    assert.deepEqual(x509Lines, ["out: x509: CN=zkcli", "out: x509: CN=zkcli"], "each whoami lists the certificate's id");
    assert.deepEqual(
      secure.filter((line) => !line.startsWith("out: x509: ")),
      plain,
    );
  });

  test("x509 ids spell the subject exactly as Java's X500Principal.getName() does", async () => {
    const subjects = [
      "/CN=client one/OU=Eng/O=Example\\, Inc./C=US",
      "/CN=a+UID=b/O=multi",
      "/emailAddress=bob@example.com/CN=bob",
      "/CN= lead and trail /O=#hash",
      '/CN=jürgen/O=a=b;c<d>e"f\\\\g',
      "/DC=com/DC=example/CN=x_y*z@q",
    ];
    const issued = [];
    for (const subject of subjects) issued.push(await pki.trusted.issue({ subject, subjectAltNames: [] }));
    const java = await javaSubjects(
      pki.dir,
      issued.map((c) => c.certFile),
    );
    const ours: string[] = [];
    for (const cert of issued) {
      const zk = await connect(cert);
      try {
        ours.push((await zk.whoAmI()).find((id) => id.authScheme === "x509")!.user);
      } finally {
        await zk.close();
      }
    }
    assert.deepEqual(ours, java);
  });
});

test("a certificate file missing, or a key that is not the certificate's, stops the server at start with the field named (exit 2)", async () => {
  const pki = await makeTestPki();
  const dir = await makeTempDir("corral-tls-bad-");
  try {
    const cert = await pki.trusted.issue({ subject: "/CN=corral server", name: "server" });
    const other = await pki.trusted.issue({ subject: "/CN=other", name: "other" });
    const cli = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));
    const start = async (files: string[]) => {
      const args = [
        cli,
        "server",
        "--data-dir",
        join(dir.path, "data"),
        "--client-port",
        String(await freePort()),
        "--client-port-tls",
        "true",
        "--tls-client-auth",
        "none",
        ...files,
      ];
      return promisify(execFile)(process.execPath, args, { timeout: 30_000, env: { ...process.env, CORRAL_LOG_LEVEL: "silent" } }).then(
        () => ({ code: 0, stderr: "" }),
        (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
      );
    };
    const missing = await start(["--tls-cert-file", join(dir.path, "nowhere.pem"), "--tls-key-file", cert.keyFile]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /invalid configuration: tlsCertFile: cannot read .*nowhere\.pem/);
    const mismatched = await start(["--tls-cert-file", cert.certFile, "--tls-key-file", other.keyFile]);
    assert.equal(mismatched.code, 2);
    assert.match(mismatched.stderr, /invalid configuration: tlsKeyFile: .* is not the key of /);
  } finally {
    await dir.remove();
    await pki.remove();
  }
});

describe("client certificates wanted, not required (tlsClientAuth want)", () => {
  let pki: TestPki;
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let server: ServerProcess;
  let alice: IssuedCertificate;
  let stranger: IssuedCertificate;

  before(async () => {
    pki = await makeTestPki();
    const cert = await pki.trusted.issue({ subject: "/CN=corral server", name: "server" });
    alice = await pki.trusted.issue({ subject: "/CN=alice", name: "alice", subjectAltNames: [] });
    stranger = await pki.untrusted.issue({ subject: "/CN=alice", name: "stranger", subjectAltNames: [] });
    dir = await makeTempDir("corral-tls-want-");
    server = await ServerProcess.start({
      dataDir: dir.path,
      extraArgs: [
        "--client-port-tls",
        "true",
        "--tls-client-auth",
        "want",
        "--tls-cert-file",
        cert.certFile,
        "--tls-key-file",
        cert.keyFile,
        "--tls-ca-file",
        pki.trusted.caFile,
      ],
    });
  });

  after(async () => {
    await server?.stop();
    await dir?.remove();
    await pki?.remove();
  });

  test("a client without a certificate, or with one the CAs do not verify, connects without an x509 id; a verified one gets it", async () => {
    const idsOf = async (tls: ClientTlsOptions) => {
      const zk = await Client.connect(server.connectString, { tls, connectTimeoutMs: 10_000 });
      try {
        return (await zk.whoAmI()).map((id) => `${id.authScheme}:${id.user}`).sort();
      } finally {
        await zk.close();
      }
    };
    assert.deepEqual(await idsOf({ ca: pki.trusted.ca }), ["ip:127.0.0.1"]);
    assert.deepEqual(await idsOf({ ca: pki.trusted.ca, cert: stranger.cert, key: stranger.key }), ["ip:127.0.0.1"]);
    assert.deepEqual(await idsOf({ ca: pki.trusted.ca, cert: alice.cert, key: alice.key }), ["ip:127.0.0.1", "x509:CN=alice"]);
    await assert.rejects(Client.connect(server.connectString, { connectTimeoutMs: 3_000 }), withCode("CONNECTIONLOSS"), "still no plain text");
  });
});

describe("a certificate replaced on disk is taken without a restart", () => {
  let pki: TestPki;
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let server: ServerProcess;
  let first: IssuedCertificate;
  let second: IssuedCertificate;
  let client: IssuedCertificate;
  let certFile: string;
  let keyFile: string;

  before(async () => {
    pki = await makeTestPki();
    first = await pki.trusted.issue({ subject: "/CN=corral server", name: "first", serialNumber: "1001" });
    second = await pki.trusted.issue({ subject: "/CN=corral server", name: "second", serialNumber: "2002" });
    client = await pki.trusted.issue({ subject: "/CN=client", name: "client", subjectAltNames: [] });
    dir = await makeTempDir("corral-tls-reload-");
    certFile = join(dir.path, "server.pem");
    keyFile = join(dir.path, "server.key");
    copyFileSync(first.certFile, certFile);
    copyFileSync(first.keyFile, keyFile);
    server = await ServerProcess.start({
      dataDir: join(dir.path, "data"),
      secureZkPort: await freePort(),
      logLevel: "info",
      extraArgs: [
        "--client-port-tls",
        "true",
        "--tls-cert-file",
        certFile,
        "--tls-key-file",
        keyFile,
        "--tls-ca-file",
        pki.trusted.caFile,
        "--tls-reload-interval-ms",
        "50",
      ],
    });
  });

  after(async () => {
    await server?.stop();
    await dir?.remove();
    await pki?.remove();
  });

  test("new connections on both TLS ports see the new certificate's serial; a half-written rotation keeps the old one; sessions go on", async () => {
    const tls = { ca: pki.trusted.ca, cert: client.cert, key: client.key };
    const securePort = portOf(server.secureZkConnectString);
    const serials = async () => [await presentedSerial(server.port, { ...tls, ALPNProtocols: ["h2"] }), await presentedSerial(securePort, tls)];
    assert.deepEqual(await serials(), [first.serialNumber, first.serialNumber]);
    const before = await Client.connect(server.connectString, { tls, connectTimeoutMs: 10_000 });
    try {
      await before.create("/rotation", "before");

      // The certificate is replaced, its key not yet: the pair is refused and the old one kept.
      copyFileSync(second.certFile, certFile);
      await waitFor("the half-written rotation to be noticed", () => (server.stderr.includes("do not form a certificate and its key") ? true : undefined));
      assert.deepEqual(await serials(), [first.serialNumber, first.serialNumber]);

      copyFileSync(second.keyFile, keyFile);
      await waitFor("the new certificate on both ports", async () => {
        const now = await serials();
        return now[0] === second.serialNumber && now[1] === second.serialNumber ? now : undefined;
      });
      assert.match(server.stderr, new RegExp(`"serialNumber":"${second.serialNumber}".*"msg":"TLS certificate reloaded"`));

      const after = await Client.connect(server.connectString, { tls, connectTimeoutMs: 10_000 });
      try {
        assert.equal(new TextDecoder().decode((await after.getData("/rotation")).data), "before");
      } finally {
        await after.close();
      }
      await before.setData("/rotation", "the session opened before the rotation goes on");
    } finally {
      await before.close();
    }
  });
});
