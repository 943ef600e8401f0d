/**
 * The scripted sessions of the ZooKeeper-wire differential test (test/integration/
 * zk-wire-differential.test.ts): the same lines go to a real ZooKeeper 3.8 and to corral.
 */
import { createHash } from "node:crypto";
import type { CliMtStep } from "./zk-cli-tools.js";

/** ZooKeeper's digest id: base64(SHA-1("user:password")). */
export function digestOf(userPassword: string): string {
  const user = userPassword.slice(0, userPassword.indexOf(":"));
  return `${user}:${createHash("sha1").update(userPassword).digest("base64")}`;
}

/** One fresh root per test-file run, the same for both servers so the transcripts compare verbatim. */
export function freshRoot(prefix: string): string {
  return `/${prefix}-${process.pid}-${Date.now().toString(36)}`;
}

export function zkCliScript(root: string): string[] {
  const R = root;
  const alice = digestOf("alice:secret");
  return [
    // create: plain, ephemeral, sequential, ephemeral sequential, container; all with data
    `create ${R}`,
    `create ${R}/a hello`,
    `create -e ${R}/eph ephemeral-data`,
    `create -s ${R}/seq- s1`,
    `create -s ${R}/seq- s2`,
    `create -e -s ${R}/eseq- es`,
    `create -c ${R}/box`,
    `create ${R}/box/item in-box`,
    // reads
    `get ${R}/a`,
    `get -s ${R}/a`,
    `get ${R}`,
    `stat ${R}/a`,
    `stat ${R}/eph`,
    `stat ${R}/box`,
    // writes with and without versions
    `set ${R}/a world`,
    `set -s ${R}/a world2`,
    `set -v 7 ${R}/a nope`,
    `set -v 2 ${R}/a v3`,
    `get -s ${R}/a`,
    // children
    `ls ${R}`,
    `ls -s ${R}`,
    `ls -R ${R}`,
    // errors
    `create ${R}/missing/child x`,
    `create ${R}/a again`,
    `get ${R}/nothing`,
    `stat ${R}/nothing`,
    `delete ${R}/nothing`,
    `ls ${R}/nothing`,
    // delete, NotEmpty, deleteall
    `create ${R}/p`,
    `create ${R}/p/c1 one`,
    `create ${R}/p/c2 two`,
    `delete ${R}/p`,
    `delete ${R}/p/c1`,
    `ls -s ${R}/p`,
    `deleteall ${R}/p`,
    `stat ${R}/p`,
    // sync, session views
    `sync ${R}`,
    `getEphemerals ${R}`,
    `getEphemerals`,
    `getAllChildrenNumber ${R}`,
    `whoami`,
    // ACLs and auth
    `getAcl ${R}/a`,
    `create ${R}/secret top-secret`,
    `setAcl ${R}/secret digest:${alice}:cdrwa,world:anyone:r`,
    `getAcl ${R}/secret`,
    `get ${R}/secret`,
    `set ${R}/secret overwritten`,
    `create ${R}/locked locked-data`,
    `setAcl ${R}/locked digest:${alice}:cdrwa`,
    `get ${R}/locked`,
    `getAcl ${R}/locked`,
    `ls ${R}/locked`,
    `stat ${R}/locked`,
    `addauth digest alice:wrong`,
    `get ${R}/locked`,
    `addauth digest alice:secret`,
    `whoami`,
    `get ${R}/locked`,
    `getAcl ${R}/locked`,
    `getAcl ${R}/secret`,
    `set -s ${R}/locked unlocked`,
    // one-time watches
    `stat -w ${R}/later`,
    `create ${R}/later now`,
    `get -w ${R}/a`,
    `set ${R}/a v4`,
    `set ${R}/a v5`,
    `ls -w ${R}/box`,
    `create ${R}/box/item2`,
    `create ${R}/box/item3`,
    // persistent recursive watch
    `addWatch -m PERSISTENT_RECURSIVE ${R}/tree`,
    `create ${R}/tree t`,
    `create ${R}/tree/x tx`,
    `set ${R}/tree/x tx2`,
    `create ${R}/tree/x/y`,
    `delete ${R}/tree/x/y`,
    `get ${R}/tree/x`,
    `getAllChildrenNumber ${R}`,
    // the client's own version (no server involved: identical by construction, kept as a smoke line)
    `version`,
    `close`,
  ];
}

export function cliMtScript(root: string): CliMtStep[] {
  const R = root;
  return [
    // cli_mt creates every node with the data "new" and OPEN_ACL_UNSAFE
    `create ${R}`,
    `create ${R}`,
    `create ${R}/missing/x`,
    `create +e ${R}/eph`,
    `create +s ${R}/seq-`,
    `create +s ${R}/seq-`,
    `create +es ${R}/eseq-`,
    `create +c ${R}/box`,
    `create ${R}/box/item`,
    `create2 ${R}/c2`,
    `create2 +e ${R}/c2e`,
    `create2 ${R}/c2`,
    // get/ls/ls2/exists leave a watch behind (cli_mt always asks for one)
    `get ${R}`,
    `set ${R} hello`,
    `get ${R}`,
    `aget ${R}/eph`,
    `ls ${R}`,
    `ls2 ${R}`,
    `create ${R}/child`,
    `exists ${R}/child`,
    `exists ${R}/nothing`,
    `create ${R}/nothing`,
    `wexists ${R}/child`,
    `set ${R}/child changed`,
    `delete ${R}/child`,
    `delete ${R}`,
    `delete ${R}/gone`,
    `set ${R}/gone x`,
    `get ${R}/gone`,
    `ls ${R}/gone`,
    `ls2 ${R}/gone`,
    `sync ${R}`,
    `sync ${R}/gone`,
    `addauth digest alice:secret`,
    `get ${R}/nothing`,
    `ls2 ${R}/box`,
    `config`,
  ];
}
