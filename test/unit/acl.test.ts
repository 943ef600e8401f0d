/**
 * The ACL rules of src/server/acl.ts and the authentication of src/server/auth.ts, checked against
 * what ZooKeeper 3.8's checkACL, fixupACL and its digest / ip providers decide.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import { limits } from "../../src/common/constants.js";
import { generateDigest } from "../../src/common/digest.js";
import { ZkError } from "../../src/common/errors.js";
import { Perms, type Acl, type Id } from "../../src/common/znode.js";
import { clientInfoOf, fixupAcl, ipMatches, isValidId, permits, redactDigests, SUPER_ID } from "../../src/replica/acl.js";
import { authenticate, certificateAuthIds, initialAuthInfo, remoteAddressOfPeer, withAuthIds } from "../../src/replica/auth.js";

const bytes = (s: string) => new TextEncoder().encode(s);
const digest = (userPassword: string): Id => ({ scheme: "digest", id: generateDigest(userPassword) });
const ip = (address: string): Id => ({ scheme: "ip", id: address });
const x509 = (dn: string): Id => ({ scheme: "x509", id: dn });
const acl = (perms: number, scheme: string, id: string): Acl => ({ perms, id: { scheme, id } });
const isZk = (code: string) => (e: unknown) => e instanceof ZkError && e.code === code;

describe("digest ids are ZooKeeper's generateDigest", () => {
  test("the widely published super:test digest", () => {
    assert.equal(generateDigest("super:test"), "super:D/InIHSb7yEEbrWz8b9l71RjZJU=");
  });

  test("the whole user:password is hashed, the user is what precedes the first colon", () => {
    assert.equal(generateDigest("bob:pass:word").split(":")[0], "bob");
    assert.notEqual(generateDigest("bob:pass:word"), generateDigest("bob:pass"));
    assert.match(generateDigest("nocolon"), /^nocolon:[A-Za-z0-9+/]{27}=$/);
  });

  test("non-ASCII credentials are hashed as UTF-8", () => {
    const utf8Sha1 = createHash("sha1").update(Buffer.from("jürgen:pw", "utf8")).digest("base64");
    assert.equal(generateDigest("jürgen:pw"), `jürgen:${utf8Sha1}`);
  });
});

describe("certificate ids (X509AuthenticationProvider.handleAuthentication)", () => {
  test("a verified certificate gives its connection the x509 id after its ip id", () => {
    assert.deepEqual(initialAuthInfo("10.0.0.1", certificateAuthIds("CN=bob,O=x", { x509SuperUser: "" })), [ip("10.0.0.1"), x509("CN=bob,O=x")]);
    assert.deepEqual(initialAuthInfo("10.0.0.1"), [ip("10.0.0.1")]);
  });

  test("the configured x509 super user also gets the super id, which passes every check", () => {
    const ids = certificateAuthIds("CN=admin", { x509SuperUser: "CN=admin" });
    assert.deepEqual(ids, [{ scheme: "super", id: "CN=admin" }, x509("CN=admin")]);
    assert.equal(permits([acl(Perms.ALL, "digest", "bob:hash")], Perms.WRITE, ids), true);
    assert.deepEqual(certificateAuthIds("CN=admin2", { x509SuperUser: "CN=admin" }), [x509("CN=admin2")]);
  });

  test("an x509 entry grants to exactly that DN", () => {
    const entry = [acl(Perms.READ, "x509", "CN=bob,O=x")];
    assert.equal(permits(entry, Perms.READ, [x509("CN=bob,O=x")]), true);
    assert.equal(permits(entry, Perms.READ, [x509("CN=bob, O=x")]), false, "compared as strings, as ZooKeeper does");
    assert.equal(permits(entry, Perms.WRITE, [x509("CN=bob,O=x")]), false);
    assert.equal(permits(entry, Perms.READ, [{ scheme: "digest", id: "CN=bob,O=x" }]), false);
  });

  test("a DN longer than authBytesMax gives no id (it could not travel with a forwarded write)", () => {
    assert.deepEqual(certificateAuthIds("CN=" + "x".repeat(limits.authBytesMax), { x509SuperUser: "" }), []);
  });
});

describe("permits (checkACL)", () => {
  const bob = digest("bob:secret");
  const bobAcl = [acl(Perms.ALL, "digest", bob.id)];

  test("world:anyone grants its permissions to everyone, and only those", () => {
    const readOnly = [acl(Perms.READ, "world", "anyone")];
    assert.equal(permits(readOnly, Perms.READ, []), true);
    for (const perm of [Perms.WRITE, Perms.CREATE, Perms.DELETE, Perms.ADMIN]) assert.equal(permits(readOnly, perm, []), false);
  });

  test("a digest entry grants to a session holding exactly that digest id", () => {
    assert.equal(permits(bobAcl, Perms.WRITE, [bob]), true);
    assert.equal(permits(bobAcl, Perms.WRITE, [digest("bob:wrong")]), false);
    assert.equal(permits(bobAcl, Perms.WRITE, [digest("alice:secret")]), false);
    assert.equal(permits(bobAcl, Perms.WRITE, []), false);
  });

  test("an id of another scheme never matches, even with the same text", () => {
    assert.equal(permits([acl(Perms.ALL, "digest", "127.0.0.1")], Perms.READ, [ip("127.0.0.1")]), false);
  });

  test("each entry grants only its own bits; several entries add up", () => {
    const split = [acl(Perms.READ, "digest", bob.id), acl(Perms.WRITE, "ip", "10.0.0.0/8")];
    assert.equal(permits(split, Perms.READ, [bob]), true);
    assert.equal(permits(split, Perms.WRITE, [bob]), false);
    assert.equal(permits(split, Perms.WRITE, [bob, ip("10.1.2.3")]), true);
  });

  test("READ|ADMIN (getACL) is granted by either bit", () => {
    assert.equal(permits([acl(Perms.ADMIN, "digest", bob.id)], Perms.READ | Perms.ADMIN, [bob]), true);
    assert.equal(permits([acl(Perms.READ, "digest", bob.id)], Perms.READ | Perms.ADMIN, [bob]), true);
    assert.equal(permits([acl(Perms.WRITE, "digest", bob.id)], Perms.READ | Perms.ADMIN, [bob]), false);
  });

  test("a sasl entry grants to that sasl id, and to sasl:super whatever it names (SASLAuthenticationProvider.matches)", () => {
    const sasl = (id: string): Id => ({ scheme: "sasl", id });
    const saslAcl = [acl(Perms.ALL, "sasl", "client@EXAMPLE.COM")];
    assert.equal(permits(saslAcl, Perms.WRITE, [sasl("client@EXAMPLE.COM")]), true);
    assert.equal(permits(saslAcl, Perms.WRITE, [sasl("client")]), false);
    assert.equal(permits(saslAcl, Perms.WRITE, [digest("client@EXAMPLE.COM:pw")]), false);
    assert.equal(permits(saslAcl, Perms.WRITE, [sasl("super")]), true);
  });

  test("auth expands to a caller's sasl id, which is an authenticated one", () => {
    assert.deepEqual(fixupAcl([acl(Perms.ALL, "auth", "")], [ip("10.0.0.1"), { scheme: "sasl", id: "bob" }], "/a"), [acl(Perms.ALL, "sasl", "bob")]);
  });

  test("the super id passes every check, an empty ACL lets anyone through", () => {
    assert.equal(permits(bobAcl, Perms.ADMIN, [SUPER_ID]), true);
    assert.equal(permits([acl(0, "world", "anyone")], Perms.READ, [SUPER_ID]), true);
    assert.equal(permits([], Perms.ADMIN, []), true);
  });
});

describe("ip matching (IPAuthenticationProvider.matches)", () => {
  const cases: [remote: string, expression: string, matches: boolean][] = [
    ["10.1.2.3", "10.1.2.3", true],
    ["10.1.2.4", "10.1.2.3", false],
    ["10.1.2.3", "10.0.0.0/8", true],
    ["11.1.2.3", "10.0.0.0/8", false],
    ["10.1.2.3", "10.1.2.0/24", true],
    ["10.1.3.3", "10.1.2.0/24", false],
    ["192.168.1.130", "192.168.1.128/25", true],
    ["192.168.1.127", "192.168.1.128/25", false],
    ["1.2.3.4", "0.0.0.0/0", true],
    ["10.1.2.3", "10.1.2.3/32", true],
    ["10.1.2.3", "10.1.2.3/33", false],
    ["10.1.2.3", "10.1.2.3/-1", false],
    ["::1", "0.0.0.0/0", false],
    ["10.1.2.3", "::1", false],
  ];
  for (const [remote, expression, matches] of cases) {
    test(`${remote} ${matches ? "matches" : "does not match"} ${expression}`, () => assert.equal(ipMatches(remote, expression), matches));
  }
});

describe("ACL ids that are valid (the providers' isValid)", () => {
  const cases: [scheme: string, id: string, valid: boolean][] = [
    ["digest", "bob:hash", true],
    ["digest", ":hash", true],
    ["digest", "bob:hash:", true],
    ["digest", "bob", false],
    ["digest", "bob:", false],
    ["digest", "bob:a:b", false],
    ["digest", "", false],
    ["ip", "10.0.0.1", true],
    ["ip", "10.0.0.0/8", true],
    ["ip", "10.0.0.0/0", true],
    ["ip", "010.000.000.001", true],
    ["ip", "10.0.0.0/33", false],
    ["ip", "10.0.0.0/", false],
    ["ip", "10.0.0.0/x", false],
    ["ip", "10.0.0", false],
    ["ip", "10.0.0.256", false],
    ["ip", "10.0.0.-1", false],
    ["ip", "10.0.0.1.", false],
    ["ip", "host.example", false],
    ["ip", "::1", false],
    ["world", "anyone", false],
    ["super", "", false],
    ["sasl", "bob", true],
    ["sasl", "bob@EXAMPLE.COM", true],
    ["sasl", "zookeeper/host.example@EXAMPLE.COM", true],
    ["sasl", "a@b@c", false],
    ["sasl", "a/b/c@R", false],
    ["x509", "CN=bob", true],
    ["x509", "CN=bob,O=Example\\, Inc.,C=US", true],
    ["x509", "CN=a<b", false],
    ["x509", "bob", false],
  ];
  for (const [scheme, id, valid] of cases) {
    test(`${scheme}:${id} is ${valid ? "valid" : "invalid"}`, () => assert.equal(isValidId(scheme, id), valid));
  }
});

describe("fixupAcl", () => {
  const bob = digest("bob:secret");

  test("an empty list, an unknown scheme, a malformed id and bad permissions are INVALIDACL", () => {
    assert.throws(() => fixupAcl([], [bob], "/a"), isZk("INVALIDACL"));
    assert.throws(() => fixupAcl([acl(Perms.ALL, "bogus", "x")], [bob], "/a"), isZk("INVALIDACL"));
    assert.throws(() => fixupAcl([acl(Perms.ALL, "digest", "no-colon")], [bob], "/a"), isZk("INVALIDACL"));
    assert.throws(() => fixupAcl([acl(Perms.ALL, "ip", "10.0.0.0/40")], [bob], "/a"), isZk("INVALIDACL"));
    assert.throws(() => fixupAcl([acl(Perms.ALL, "world", "someone")], [bob], "/a"), isZk("INVALIDACL"));
    assert.throws(() => fixupAcl([acl(32, "world", "anyone")], [bob], "/a"), isZk("INVALIDACL"));
  });

  test("auth expands to the caller's x509 id as to its digest ids (X509AuthenticationProvider.isAuthenticated)", () => {
    const dn = "CN=client,O=corral";
    assert.deepEqual(fixupAcl([acl(Perms.ALL, "auth", "")], [ip("10.0.0.1"), { scheme: "super", id: dn }, x509(dn)], "/a"), [acl(Perms.ALL, "x509", dn)]);
  });

  test("auth expands to every authenticated (digest) id of the caller; ip and super ids do not count", () => {
    const alice = digest("alice:pw");
    assert.deepEqual(fixupAcl([acl(Perms.READ, "auth", "")], [ip("10.0.0.1"), bob, SUPER_ID, alice], "/a"), [
      acl(Perms.READ, "digest", bob.id),
      acl(Perms.READ, "digest", alice.id),
    ]);
    assert.throws(() => fixupAcl([acl(Perms.ALL, "auth", "")], [ip("10.0.0.1")], "/a"), isZk("INVALIDACL"));
    assert.throws(() => fixupAcl([acl(Perms.ALL, "auth", "")], [SUPER_ID], "/a"), isZk("INVALIDACL"));
    assert.throws(() => fixupAcl([acl(Perms.ALL, "auth", "")], [], "/a"), isZk("INVALIDACL"));
  });

  test("duplicates are dropped and the order kept", () => {
    const list = [acl(Perms.READ, "world", "anyone"), acl(Perms.ALL, "ip", "10.0.0.1"), acl(Perms.READ, "world", "anyone")];
    assert.deepEqual(fixupAcl(list, [], "/a"), list.slice(0, 2));
  });

  test("entries differing in any one field are all kept", () => {
    const list = [
      acl(Perms.READ, "digest", "a:bc"),
      acl(Perms.READ, "digest", "ab:c"),
      acl(Perms.WRITE, "digest", "a:bc"),
      acl(Perms.READ, "ip", "10.0.0.1"),
      acl(Perms.READ, "ip", "10.0.0.1/32"),
    ];
    assert.deepEqual(fixupAcl([...list, ...list], [], "/a"), list);
  });

  test("40,000 entries, as one 1 MiB frame holds, with every other one repeated", () => {
    const list = Array.from({ length: 40_000 }, (_, i) => acl(Perms.READ, "ip", `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${(i >> 1) & 255}`));
    const fixed = fixupAcl(list, [], "/a");
    assert.equal(fixed.length, 20_000);
    assert.deepEqual(
      fixed,
      list.filter((_, i) => i % 2 === 0),
    );
  });
});

test("getACL without ADMIN shows digest ids with the hash replaced by x", () => {
  const bob = digest("bob:secret");
  assert.deepEqual(redactDigests([acl(Perms.READ, "digest", bob.id), acl(Perms.ALL, "ip", "10.0.0.1")]), [
    acl(Perms.READ, "digest", "bob:x"),
    acl(Perms.ALL, "ip", "10.0.0.1"),
  ]);
});

test("whoAmI reports the digest user, the ip address, the x509 DN and an empty super user", () => {
  assert.deepEqual(clientInfoOf(digest("bob:secret")), { authScheme: "digest", user: "bob" });
  assert.deepEqual(clientInfoOf(x509("CN=bob,O=x")), { authScheme: "x509", user: "CN=bob,O=x" });
  assert.deepEqual(clientInfoOf(ip("10.0.0.1")), { authScheme: "ip", user: "10.0.0.1" });
  assert.deepEqual(clientInfoOf(SUPER_ID), { authScheme: "super", user: "" });
});

describe("authenticate (the auth packet)", () => {
  const superDigest = generateDigest("super:test");
  const options = { superDigest };

  test("digest credentials become the digest id", () => {
    assert.deepEqual(authenticate("digest", bytes("bob:secret"), "10.0.0.1", options), [digest("bob:secret")]);
  });

  test("the super user's credentials add the super id too; a wrong password does not", () => {
    assert.deepEqual(authenticate("digest", bytes("super:test"), "10.0.0.1", options), [SUPER_ID, { scheme: "digest", id: superDigest }]);
    assert.deepEqual(authenticate("digest", bytes("super:nope"), "10.0.0.1", options), [digest("super:nope")]);
    assert.deepEqual(authenticate("digest", bytes("super:test"), "10.0.0.1", { superDigest: "" }), [{ scheme: "digest", id: superDigest }]);
  });

  test("ip authentication proves the connection's own address, whatever it sends", () => {
    assert.deepEqual(authenticate("ip", bytes("1.2.3.4"), "10.0.0.1", options), [ip("10.0.0.1")]);
  });

  test("digest credentials without a colon are hashed whole, as ZooKeeper 3.8's addauth digest blah", () => {
    // DigestAuthenticationProvider.generateDigest: the user is the whole string, the hash is of it all.
    assert.deepEqual(authenticate("digest", bytes("blah"), "10.0.0.1", options), [
      { scheme: "digest", id: "blah:" + createHash("sha1").update("blah").digest("base64") },
    ]);
  });

  test("x509 proves the connection's verified certificate, whatever the packet holds; none is AUTHFAILED", () => {
    const ids = certificateAuthIds("CN=bob", { x509SuperUser: "" });
    assert.deepEqual(authenticate("x509", bytes("CN=mallory"), "10.0.0.1", options, ids), [x509("CN=bob")]);
    assert.equal(authenticate("x509", bytes("CN=bob"), "10.0.0.1", options), undefined);
  });

  test("AUTHFAILED: unknown schemes, oversized credentials", () => {
    for (const scheme of ["world", "auth", "super", "sasl", ""]) assert.equal(authenticate(scheme, bytes("a:b"), "10.0.0.1", options), undefined, scheme);
    assert.equal(authenticate("digest", bytes("bob:" + "x".repeat(limits.authBytesMax)), "10.0.0.1", options), undefined);
  });

  test("a connection holds each id once and at most authIdsPerConnectionMax of them", () => {
    const once = withAuthIds([ip("10.0.0.1")], [digest("bob:a"), digest("bob:a")]);
    assert.deepEqual(once, [ip("10.0.0.1"), digest("bob:a")]);
    let ids: readonly Id[] = [];
    for (let i = 0; i < limits.authIdsPerConnectionMax; i++) ids = withAuthIds(ids, [digest(`u${i}:p`)])!;
    assert.equal(withAuthIds(ids, [digest("one:more")]), undefined);
    assert.deepEqual(withAuthIds(ids, [digest("u0:p")]), ids, "an id already held does not count again");
  });

  test("a connection's address comes from its gRPC peer, IPv4-mapped IPv6 shown as IPv4", () => {
    assert.equal(remoteAddressOfPeer("127.0.0.1:54321"), "127.0.0.1");
    assert.equal(remoteAddressOfPeer("::ffff:10.1.2.3:54321"), "10.1.2.3");
    assert.equal(remoteAddressOfPeer("::1:54321"), "::1");
    assert.equal(remoteAddressOfPeer("unknown"), "");
  });
});
