#!/usr/bin/env node
// Generates gen/client.ts from proto/client.proto with ts-proto (run through the buf binary that
// @bufbuild/buf installs), then gives its decoders corral's one decoding policy: `npm run gen:proto`.
//
// The policy, the peer codec's (src/server/peer/peer-codec.ts) and now every direction's: a frame
// that is not well-formed protobuf is refused — truncated, a field number 0, a group or a stray
// end-group tag (proto3 has no groups), a field running past its message, and a oneof given two
// members. Fields a decoder does not read are skipped, as protobuf's own generated code does: unknown
// numbers (forward compatibility), and a known number with another wire type.
//
// ts-proto's decoders end a message silently at a zero or end-group tag, skip groups, accept a
// nested message whose last field runs past its declared length, and let a second oneof member
// replace the first. Three edits follow generation, each counted: if ts-proto ever emits different
// code, this script fails instead of producing a decoder that is quietly lenient again. A fourth
// shares one empty array as the default of every bytes field.
//
// Usage: node proto/generate.mjs [outDir]   (default gen/; test/unit/generated-codec.test.ts
// generates into a temporary directory and compares, so a stale gen/ fails `npm test`).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const outDir = resolve(process.argv[2] ?? join(root, "gen"));

const template = {
  version: "v2",
  inputs: [{ directory: "proto", paths: ["proto/client.proto"] }],
  plugins: [
    {
      local: ["node", "node_modules/ts-proto/protoc-gen-ts_proto"],
      out: "__OUT__",
      opt: [
        "esModuleInterop=true",
        "forceLong=bigint",
        "oneof=unions",
        "importSuffix=.js",
        "outputServices=false",
        "outputJsonMethods=false",
        "outputPartialMethods=false",
      ],
    },
  ],
};

const work = mkdtempSync(join(tmpdir(), "corral-gen-"));
try {
  const config = JSON.stringify(template).replace("__OUT__", work);
  execFileSync(join(root, "node_modules", ".bin", "buf"), ["generate", "--template", config], { cwd: root, stdio: "inherit" });
  mkdirSync(outDir, { recursive: true });
  const source = readFileSync(join(work, "client.ts"), "utf8");
  writeFileSync(join(outDir, "client.ts"), strict(source));
} finally {
  rmSync(work, { recursive: true, force: true });
}

/** Replaces every match of `pattern`, failing unless there are exactly `expected` of them. */
function replaceCounted(text, pattern, replacement, expected, what) {
  const found = text.match(pattern)?.length ?? 0;
  if (found !== expected) throw new Error(`generate.mjs: expected ${expected} ${what} in ts-proto's output, found ${found}`);
  return text.replace(pattern, replacement);
}

function strict(source) {
  const decoders = source.match(/^export const \w+: MessageFns<\w+> = \{$/gm)?.length ?? 0;
  if (decoders === 0) throw new Error("generate.mjs: no messages in ts-proto's output");
  let text = source;
  // A field number 0, a group, or an end-group tag.
  text = replaceCounted(
    text,
    /^( +)if \(\(tag & 7\) === 4 \|\| tag === 0\) \{\n\1 {2}break;\n\1\}/gm,
    '$1if (tag >>> 3 === 0 || (tag & 7) === 3 || (tag & 7) === 4) {\n$1  throw new globalThis.Error("invalid tag");\n$1}',
    decoders,
    "end-of-message checks",
  );
  // A message read past its declared end.
  text = replaceCounted(
    text,
    /^( {6})return message;\n( {4}\} finally \{)/gm,
    '$1if (reader.pos !== end) {\n$1  throw new globalThis.Error("field runs past its message");\n$1}\n$1return message;\n$2',
    decoders,
    "decoder returns",
  );
  // A second member of a oneof.
  const oneofMembers = text.match(/^( +)message\.(\w+) = \{ \$case: /gm)?.length ?? 0;
  if (oneofMembers === 0) throw new Error("generate.mjs: no oneof members in ts-proto's output");
  text = replaceCounted(
    text,
    /^( +)message\.(\w+) = \{ \$case: /gm,
    '$1if (message.$2 !== undefined) {\n$1  throw new globalThis.Error("a oneof with two members");\n$1}\n$1message.$2 = { $case: ',
    oneofMembers,
    "oneof members",
  );
  // Empty bytes defaults: one shared empty array, not a new one per decoded message (V8 takes
  // about as long to allocate an empty Uint8Array as to decode a small frame). It holds nothing
  // to change, and a decoded field that is present gets the bytes read.
  const emptyBytes = text.match(/new Uint8Array\(0\)/g)?.length ?? 0;
  if (emptyBytes === 0) throw new Error("generate.mjs: no bytes defaults in ts-proto's output");
  text = replaceCounted(text, /new Uint8Array\(0\)/g, "EMPTY_BYTES", emptyBytes, "bytes defaults");
  text = replaceCounted(
    text,
    /^(import \{ BinaryReader, BinaryWriter \} from "@bufbuild\/protobuf\/wire";\n)/gm,
    "$1\nconst EMPTY_BYTES: Uint8Array = new Uint8Array(0);\n",
    1,
    "wire imports",
  );
  return text.replace(
    "// Code generated by protoc-gen-ts_proto. DO NOT EDIT.",
    "// Code generated by protoc-gen-ts_proto, then given corral's decoding policy by proto/generate.mjs. DO NOT EDIT: npm run gen:proto.",
  );
}
