/**
 * x509 ids (src/server/x509-name.ts): a certificate subject in Java's X500Principal.getName() form,
 * and which ACL ids `new X500Principal(id)` accepts. The expected strings are what OpenJDK 17
 * printed for the same names (test/integration/tls.test.ts compares with a live JVM on
 * certificates openssl makes).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { distinguishedNameOfDer, isValidDistinguishedName, subjectOfCertificate, CertificateFormatError } from "../../src/replica/x509-name.js";

/** A minimal DER writer: enough to spell Names. */
function tlv(tag: number, content: Uint8Array): Uint8Array {
  const length = content.byteLength;
  const header = length < 0x80 ? [tag, length] : length < 0x100 ? [tag, 0x81, length] : [tag, 0x82, length >> 8, length & 0xff];
  return Uint8Array.from([...header, ...content]);
}
const concat = (...parts: Uint8Array[]): Uint8Array => Uint8Array.from(parts.flatMap((p) => [...p]));
function oid(text: string): Uint8Array {
  const [a, b, ...rest] = text.split(".").map(Number) as [number, number, ...number[]];
  const bytes: number[] = [];
  for (const arc of [a * 40 + b, ...rest]) {
    const groups = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) groups.unshift((v & 0x7f) | 0x80);
    bytes.push(...groups);
  }
  return tlv(0x06, Uint8Array.from(bytes));
}
const utf8 = (text: string) => tlv(0x0c, new TextEncoder().encode(text));
const printable = (text: string) => tlv(0x13, new TextEncoder().encode(text));
const ia5 = (text: string) => tlv(0x16, new TextEncoder().encode(text));
const attribute = (type: string, value: Uint8Array) => tlv(0x30, concat(oid(type), value));
const rdn = (...attributes: Uint8Array[]) => tlv(0x31, concat(...attributes));
const name = (...rdns: Uint8Array[]) => tlv(0x30, concat(...rdns));
const CN = "2.5.4.3";
const O = "2.5.4.10";
const C = "2.5.4.6";

describe("a Name in Java's RFC 2253 form", () => {
  test("RDNs in reverse order, joined by commas, with RFC 2253 keywords", () => {
    const der = name(
      rdn(attribute(C, printable("US"))),
      rdn(attribute(O, utf8("Example"))),
      rdn(attribute("2.5.4.11", utf8("Eng"))),
      rdn(attribute(CN, utf8("client one"))),
    );
    assert.equal(distinguishedNameOfDer(der), "CN=client one,OU=Eng,O=Example,C=US");
  });

  test("a multi-valued RDN keeps its DER order, joined by +", () => {
    assert.equal(
      distinguishedNameOfDer(name(rdn(attribute(O, utf8("x"))), rdn(attribute(CN, utf8("a")), attribute("0.9.2342.19200300.100.1.1", utf8("b"))))),
      "CN=a+UID=b,O=x",
    );
  });

  test("attributes without an RFC 2253 keyword are dotted OIDs with the hex of their DER value", () => {
    const der = name(rdn(attribute(CN, utf8("bob"))), rdn(attribute("1.2.840.113549.1.9.1", ia5("bob@example.com"))));
    assert.equal(distinguishedNameOfDer(der), "1.2.840.113549.1.9.1=#160f626f62406578616d706c652e636f6d,CN=bob");
    assert.equal(distinguishedNameOfDer(name(rdn(attribute("2.5.4.12", utf8("boss"))))), "2.5.4.12=#0c04626f7373");
  });

  test("a keyword attribute whose value is not a string type is hex too", () => {
    assert.equal(distinguishedNameOfDer(name(rdn(attribute(CN, tlv(0x04, Uint8Array.from([1, 2])))))), "CN=#04020102");
  });

  test("special characters are escaped with a backslash, leading and trailing blanks too", () => {
    assert.equal(distinguishedNameOfDer(name(rdn(attribute(O, utf8(`a=b;c<d>e"f\\g,h+i#j`))))), String.raw`O=a\=b\;c\<d\>e\"f\\g\,h\+i\#j`);
    assert.equal(distinguishedNameOfDer(name(rdn(attribute(CN, utf8(" lead and trail "))))), String.raw`CN=\ lead and trail\ `);
    assert.equal(distinguishedNameOfDer(name(rdn(attribute(CN, utf8("#hash"))))), String.raw`CN=\#hash`);
    assert.equal(distinguishedNameOfDer(name(rdn(attribute(CN, utf8("nul\u0000byte"))))), String.raw`CN=nul\00byte`);
  });

  test("other characters, non-ASCII ones included, are kept as they are", () => {
    assert.equal(distinguishedNameOfDer(name(rdn(attribute(CN, utf8("jürgen x_y*z@q"))))), "CN=jürgen x_y*z@q");
  });

  test("the empty Name is the empty string", () => {
    assert.equal(distinguishedNameOfDer(name()), "");
  });

  test("bytes that are not a certificate are a CertificateFormatError", () => {
    assert.throws(() => subjectOfCertificate(Uint8Array.from([0x30, 0x05, 0x01])), CertificateFormatError);
    assert.throws(() => subjectOfCertificate(new Uint8Array(0)), CertificateFormatError);
    assert.throws(() => distinguishedNameOfDer(name(rdn())), CertificateFormatError);
  });
});

describe("x509 ACL ids: what new X500Principal(id) accepts (OpenJDK 17's answers)", () => {
  const cases: [string, boolean][] = [
    ["CN=bob", true],
    [String.raw`C=US,O=Example\, Inc.,OU=Eng,CN=client one`, true],
    ["cn=bob, o=x", true],
    ["CN=bob;O=x", true],
    ["CN=a+UID=b,O=x", true],
    ["CN=bob,1.2.840.113549.1.9.1=#160f626f62406578616d706c652e636f6d", true],
    ["OID.2.5.4.3=bob", true],
    ["2.5.4.3=bob", true],
    ["2.999=x", true],
    ["EMAILADDRESS=a@b", true],
    ['CN="quoted, value"', true],
    ['CN="a"  ', true],
    [String.raw`CN=\#hash`, true],
    ["CN=#0c0161", true],
    ["CN=", true],
    ["", true],
    [String.raw`CN=a\41b`, true],
    [String.raw`CN=\ lead`, true],
    [String.raw`CN=x\,y`, true],
    [" CN = bob ", true],
    ["CN=a=b", true],
    ["CN=jürgen", true],
    ["CN=a  b", true],
    ["ST=x,S=y,T=z,IP=1.2.3.4,DNQ=x,SURNAME=x,GIVENNAME=x,INITIALS=x,GENERATION=x,EMAIL=x,SERIALNUMBER=x,DNQUALIFIER=x,STREET=x,DC=x,L=x", true],
    ['CN="unterminated', false],
    ['CN=a"b', false],
    ["CN=a<b", false],
    ['CN="a" b', false],
    ["CN=#zz", false],
    ["CN=#0c", false],
    ["CN=#0c01", false],
    ["bob", false],
    ["=bob", false],
    ["FOO=bar", false],
    ["CN=bob,", false],
    [",CN=bob", false],
    ["CN=bob,,O=x", false],
    ["CN=a+", false],
    ["CN=bob,O=x+", false],
    ["CN=a;b", false],
    [String.raw`CN=a\qb`, false],
    ["CN=a\\", false],
    ["5.4.3=x", false],
    ["1.50.3=x", false],
  ];
  for (const [id, valid] of cases) {
    test(`${JSON.stringify(id)} is ${valid ? "valid" : "invalid"}`, () => assert.equal(isValidDistinguishedName(id), valid));
  }
});
