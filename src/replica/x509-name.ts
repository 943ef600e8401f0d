/**
 * ZooKeeper's `x509` ids: the subject of a client certificate as X509AuthenticationProvider names
 * it — `getSubjectX500Principal().getName()`, Java's RFC 2253 form — and whether a string is a
 * name an ACL may hold (`new X500Principal(id)` accepts it). Pure: DER bytes and strings in,
 * strings out.
 *
 * Java's RFC 2253 form: the RDNs of the DER Name in reverse order, joined by ","; the attributes of
 * a multi-valued RDN in DER order, joined by "+"; the keywords CN, C, L, ST, O, OU, STREET, DC and
 * UID, any other attribute type as its dotted OID; a string value (PrintableString, T61String,
 * IA5String, GeneralString, BMPString, UTF8String — its bytes read as UTF-8, as Java does) with
 * `, = + < > # ; " \` escaped by a backslash, NUL as `\00` and leading or trailing spaces (and CRs)
 * escaped; any other value, and every value of an OID-named attribute, as "#" and the lowercase hex
 * of its whole DER encoding. Example: `CN=client one,OU=Eng,O=Example\, Inc.,C=US`.
 */

/** OIDs with an RFC 2253 keyword in Java's AVAKeyword table. */
const RFC2253_KEYWORDS: ReadonlyMap<string, string> = new Map([
  ["2.5.4.3", "CN"],
  ["2.5.4.6", "C"],
  ["2.5.4.7", "L"],
  ["2.5.4.8", "ST"],
  ["2.5.4.10", "O"],
  ["2.5.4.11", "OU"],
  ["2.5.4.9", "STREET"],
  ["0.9.2342.19200300.100.1.25", "DC"],
  ["0.9.2342.19200300.100.1.1", "UID"],
]);

/** Every keyword `new X500Principal(String)` reads (Java's AVAKeyword, DEFAULT format). */
const PARSE_KEYWORDS: ReadonlySet<string> = new Set([
  "CN",
  "C",
  "L",
  "S",
  "ST",
  "O",
  "OU",
  "T",
  "IP",
  "STREET",
  "DC",
  "DNQUALIFIER",
  "DNQ",
  "SURNAME",
  "GIVENNAME",
  "INITIALS",
  "GENERATION",
  "EMAIL",
  "EMAILADDRESS",
  "UID",
  "SERIALNUMBER",
]);

/** DER tags Java renders as strings (DerValue tags; AVA.isDerString, non-canonical). */
const STRING_TAGS: ReadonlySet<number> = new Set([0x13, 0x14, 0x16, 0x1b, 0x1e, 0x0c]);
const TAG_SEQUENCE = 0x30;
const TAG_SET = 0x31;
const TAG_OID = 0x06;
const TAG_INTEGER = 0x02;
const TAG_VERSION = 0xa0;

export class CertificateFormatError extends Error {
  constructor(message: string) {
    super(`certificate: ${message}`);
    this.name = "CertificateFormatError";
  }
}

interface Tlv {
  tag: number;
  /** Where the TLV starts (its tag byte). */
  start: number;
  /** Where its content starts and ends. */
  contentStart: number;
  end: number;
}

function readTlv(der: Uint8Array, at: number, limit: number): Tlv {
  if (at + 2 > limit) throw new CertificateFormatError("truncated DER");
  const tag = der[at]!;
  if ((tag & 0x1f) === 0x1f) throw new CertificateFormatError("multi-byte DER tags are not used in certificate names");
  let lengthByte = der[at + 1]!;
  let cursor = at + 2;
  let length: number;
  if (lengthByte < 0x80) {
    length = lengthByte;
  } else {
    lengthByte &= 0x7f;
    if (lengthByte === 0 || lengthByte > 4 || cursor + lengthByte > limit) throw new CertificateFormatError("bad DER length");
    length = 0;
    for (let i = 0; i < lengthByte; i++) length = length * 256 + der[cursor++]!;
  }
  const end = cursor + length;
  if (end > limit) throw new CertificateFormatError("DER length past its container");
  return { tag, start: at, contentStart: cursor, end };
}

function expectTag(tlv: Tlv, tag: number, what: string): Tlv {
  if (tlv.tag !== tag) throw new CertificateFormatError(`expected ${what}`);
  return tlv;
}

function oidText(der: Uint8Array, tlv: Tlv): string {
  const arcs: number[] = [];
  let value = 0;
  for (let i = tlv.contentStart; i < tlv.end; i++) {
    const byte = der[i]!;
    value = value * 128 + (byte & 0x7f);
    if (!Number.isSafeInteger(value)) throw new CertificateFormatError("OID arc too large");
    if ((byte & 0x80) === 0) {
      arcs.push(value);
      value = 0;
    }
  }
  if (arcs.length === 0 || (der[tlv.end - 1]! & 0x80) !== 0) throw new CertificateFormatError("bad OID");
  const first = arcs[0]!;
  const head = first < 40 ? [0, first] : first < 80 ? [1, first - 40] : [2, first - 80];
  return [...head, ...arcs.slice(1)].join(".");
}

function hexOf(der: Uint8Array, start: number, end: number): string {
  let text = "";
  for (let i = start; i < end; i++) text += der[i]!.toString(16).padStart(2, "0");
  return text;
}

/** DerValue.isPrintableStringChar. */
function isPrintableStringChar(c: string): boolean {
  return /^[A-Za-z0-9 '()+,\-./:=?]$/.test(c);
}

const ESCAPED = ',=+<>#;"\\';

/** Java's AVA.toRFC2253String for a string value. */
function escapeValue(value: string): string {
  let escaped = "";
  for (const c of value.split("")) {
    if (ESCAPED.includes(c)) escaped += "\\" + c;
    else if (isPrintableStringChar(c)) escaped += c;
    else if (c === "\u0000") escaped += "\\00";
    else escaped += c;
  }
  const chars = escaped.split("");
  let lead = 0;
  while (lead < chars.length && (chars[lead] === " " || chars[lead] === "\r")) lead++;
  let trail = chars.length - 1;
  while (trail >= 0 && (chars[trail] === " " || chars[trail] === "\r")) trail--;
  return chars.map((c, i) => (i < lead || i > trail ? "\\" + c : c)).join("");
}

const utf8 = new TextDecoder("utf-8");

function attributeText(der: Uint8Array, attribute: Tlv): string {
  const type = expectTag(readTlv(der, attribute.contentStart, attribute.end), TAG_OID, "an attribute type OID");
  const value = readTlv(der, type.end, attribute.end);
  if (value.end !== attribute.end) throw new CertificateFormatError("trailing bytes in an attribute");
  const oid = oidText(der, type);
  const keyword = RFC2253_KEYWORDS.get(oid);
  if (keyword === undefined || !STRING_TAGS.has(value.tag)) return `${keyword ?? oid}=#${hexOf(der, value.start, value.end)}`;
  return `${keyword}=${escapeValue(utf8.decode(der.subarray(value.contentStart, value.end)))}`;
}

/** A DER Name (SEQUENCE OF SET OF AttributeTypeAndValue) in Java's RFC 2253 form. */
export function distinguishedNameOfDer(der: Uint8Array, name: Tlv = readTlv(der, 0, der.byteLength)): string {
  expectTag(name, TAG_SEQUENCE, "a Name");
  const rdns: string[] = [];
  for (let at = name.contentStart; at < name.end;) {
    const rdn = expectTag(readTlv(der, at, name.end), TAG_SET, "an RDN");
    const attributes: string[] = [];
    for (let inner = rdn.contentStart; inner < rdn.end;) {
      const attribute = expectTag(readTlv(der, inner, rdn.end), TAG_SEQUENCE, "an AttributeTypeAndValue");
      attributes.push(attributeText(der, attribute));
      inner = attribute.end;
    }
    if (attributes.length === 0) throw new CertificateFormatError("an empty RDN");
    rdns.push(attributes.join("+"));
    at = rdn.end;
  }
  return rdns.reverse().join(",");
}

/**
 * The subject of a DER certificate as ZooKeeper's X509AuthenticationProvider names it (the `x509`
 * id). Throws CertificateFormatError for bytes that are not a certificate.
 */
export function subjectOfCertificate(certificateDer: Uint8Array): string {
  const certificate = expectTag(readTlv(certificateDer, 0, certificateDer.byteLength), TAG_SEQUENCE, "a Certificate");
  const tbs = expectTag(readTlv(certificateDer, certificate.contentStart, certificate.end), TAG_SEQUENCE, "a TBSCertificate");
  let field = readTlv(certificateDer, tbs.contentStart, tbs.end);
  if (field.tag === TAG_VERSION) field = readTlv(certificateDer, field.end, tbs.end);
  expectTag(field, TAG_INTEGER, "a serial number");
  const signature = expectTag(readTlv(certificateDer, field.end, tbs.end), TAG_SEQUENCE, "a signature algorithm");
  const issuer = expectTag(readTlv(certificateDer, signature.end, tbs.end), TAG_SEQUENCE, "an issuer Name");
  const validity = expectTag(readTlv(certificateDer, issuer.end, tbs.end), TAG_SEQUENCE, "a validity");
  const subject = readTlv(certificateDer, validity.end, tbs.end);
  return distinguishedNameOfDer(certificateDer, subject);
}

// -------------------------------------------------------------------------------------------------
// Validity of a name in an ACL: what `new X500Principal(String)` accepts (RFC 1779, 2253 and 4514
// syntax, Java's keywords or OIDs), as X509AuthenticationProvider.isValid checks.

const DEFAULT_ESCAPABLE = ',=\n+<>#;\\" ';
const QUOTED_ESCAPABLE = ',=\n+<>#;\\"';
const MUST_BE_ESCAPED = ',+<>;"';
const HEX = /^[0-9A-Fa-f]$/;

/** Splits at the separators outside quotes and not escaped; undefined on an unterminated quote. */
function splitUnquoted(text: string, separators: string): string[] | undefined {
  const parts: string[] = [];
  let current = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "\\" && i + 1 < text.length) {
      current += c + text[++i]!;
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (!quoted && separators.includes(c)) {
      parts.push(current);
      current = "";
    } else {
      current += c;
    }
  }
  if (quoted) return undefined;
  parts.push(current);
  return parts;
}

function isValidOid(text: string): boolean {
  if (!/^[0-9]+(\.[0-9]+)+$/.test(text)) return false;
  const [first, second] = text.split(".").map(Number) as [number, number];
  return first <= 2 && (first === 2 || second < 40);
}

function isValidKeyword(raw: string): boolean {
  let keyword = raw.trim().toUpperCase();
  if (PARSE_KEYWORDS.has(keyword)) return true;
  if (keyword.startsWith("OID.")) keyword = keyword.slice(4);
  return isValidOid(keyword);
}

/** `\` followed by two hex digits, or by one of `escapable`; returns the index after it, or -1. */
function skipEscape(value: string, at: number, escapable: string): number {
  const next = value[at + 1];
  if (next === undefined) return -1;
  if (HEX.test(next) && value[at + 2] !== undefined && HEX.test(value[at + 2]!)) return at + 3;
  return escapable.includes(next) ? at + 2 : -1;
}

function isValidHexValue(hex: string): boolean {
  if (hex.length === 0 || hex.length % 2 !== 0 || !/^[0-9A-Fa-f]+$/.test(hex)) return false;
  const bytes = Uint8Array.from(hex.match(/../g)!.map((pair) => parseInt(pair, 16)));
  try {
    return readTlv(bytes, 0, bytes.byteLength).end === bytes.byteLength;
  } catch {
    return false;
  }
}

function isValidValue(raw: string): boolean {
  const value = raw.replace(/^[ \n]+/, "");
  if (value === "") return true;
  if (value.startsWith("#")) return isValidHexValue(value.slice(1));
  if (value.startsWith('"')) {
    let i = 1;
    for (;;) {
      if (i >= value.length) return false;
      const c = value[i]!;
      if (c === '"') break;
      if (c === "\\") {
        i = skipEscape(value, i, QUOTED_ESCAPABLE);
        if (i < 0) return false;
      } else {
        i++;
      }
    }
    return /^[ \n]*$/.test(value.slice(i + 1));
  }
  for (let i = 0; i < value.length;) {
    const c = value[i]!;
    if (c === "\\") {
      i = skipEscape(value, i, DEFAULT_ESCAPABLE);
      if (i < 0) return false;
    } else {
      if (MUST_BE_ESCAPED.includes(c)) return false;
      i++;
    }
  }
  return true;
}

/** Whether `new X500Principal(text)` would accept `text` (the empty name included). */
export function isValidDistinguishedName(text: string): boolean {
  if (text === "") return true;
  const rdns = splitUnquoted(text, ",;");
  if (rdns === undefined) return false;
  for (const rdn of rdns) {
    const attributes = splitUnquoted(rdn, "+");
    if (attributes === undefined) return false;
    for (const attribute of attributes) {
      const equals = attribute.indexOf("=");
      if (equals < 0) return false;
      if (!isValidKeyword(attribute.slice(0, equals)) || !isValidValue(attribute.slice(equals + 1))) return false;
    }
  }
  return true;
}
