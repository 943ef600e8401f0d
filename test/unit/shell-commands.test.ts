/** `corral shell`'s pure modules: argument splitting, command parsing, zkCli's output formats, error wording. */
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ShellError,
  ShellUsageError,
  childPath,
  completeCommandName,
  helpText,
  membersFromFile,
  parseCommand,
  parseJavaProperties,
  parseShellArgs,
  pathCompletionTarget,
  splitArgs,
  type ShellCommand,
} from "../../src/cli/shell-commands.js";
import {
  describeConnectFailure,
  describeError,
  formatAcl,
  formatChildren,
  formatClientConfig,
  formatData,
  formatJavaDate,
  formatJavaList,
  formatPrompt,
  formatQuotaLocation,
  formatQuotaReport,
  formatWhoAmI,
  quotaWarnings,
  formatStat,
  formatStateEvent,
  formatWatchedEvent,
} from "../../src/cli/shell-format.js";
import { permString } from "../../src/common/znode.js";
import { hex64 } from "../../src/common/hex.js";
import { Perms, ZkError, type Stat } from "../../src/index.js";
import { ConfigError } from "../../src/server/config-error.js";

test("splitArgs splits on blanks and groups quoted text", () => {
  const rows: [string, string[]][] = [
    ["", []],
    ["   ", []],
    ["ls /", ["ls", "/"]],
    ["  ls\t-s   /a  ", ["ls", "-s", "/a"]],
    ['create /x "hello world"', ["create", "/x", "hello world"]],
    ["create /x 'hello world'", ["create", "/x", "hello world"]],
    ['set /x ""', ["set", "/x", ""]],
    ["set /x ''", ["set", "/x", ""]],
    ['set /x "say \\"hi\\""', ["set", "/x", 'say "hi"']],
    ['set /x "back\\\\slash"', ["set", "/x", "back\\slash"]],
    ['set /x "a\\nb"', ["set", "/x", "a\\nb"]],
    ["set /x 'no \\\" escapes'", ["set", "/x", 'no \\" escapes']],
    ["set /x '{\"json\": 1}'", ["set", "/x", '{"json": 1}']],
    ['set /x a"b c"d', ["set", "/x", "ab cd"]],
    ["set /x back\\slash", ["set", "/x", "back\\slash"]],
    ["# a comment", []],
    ["   # an indented comment", []],
    ["get /x # not a comment mid-line", ["get", "/x", "#", "not", "a", "comment", "mid-line"]],
    ["ls /\r", ["ls", "/"]],
  ];
  for (const [line, args] of rows) assert.deepEqual(splitArgs(line), args, line);
});

test("splitArgs rejects an unterminated quote", () => {
  for (const line of ['create /x "hello', "create /x 'hello", 'set /x "ends with \\"']) {
    assert.throws(
      () => splitArgs(line),
      (err: unknown) => err instanceof ShellUsageError && /unterminated/.test(err.message),
      line,
    );
  }
});

test("parseCommand reads zkCli's options, bundled or apart, before or after the path", () => {
  const rows: [string, ShellCommand][] = [
    ["ls /", { name: "ls", path: "/", stat: false, watch: false, recursive: false }],
    ["ls -s -w /a", { name: "ls", path: "/a", stat: true, watch: true, recursive: false }],
    ["ls -swR /a", { name: "ls", path: "/a", stat: true, watch: true, recursive: true }],
    ["ls /a -R", { name: "ls", path: "/a", stat: false, watch: false, recursive: true }],
    ["get /a", { name: "get", path: "/a", stat: false, watch: false }],
    ["get -s -w /a", { name: "get", path: "/a", stat: true, watch: true }],
    ["stat -w /a", { name: "stat", path: "/a", watch: true }],
    ["create /a", { name: "create", path: "/a", data: "", mode: "persistent", ttlMs: undefined }],
    ['create /a "x y"', { name: "create", path: "/a", data: "x y", mode: "persistent", ttlMs: undefined }],
    ["create -e /a", { name: "create", path: "/a", data: "", mode: "ephemeral", ttlMs: undefined }],
    ["create -s /a- d", { name: "create", path: "/a-", data: "d", mode: "persistent-sequential", ttlMs: undefined }],
    ["create -e -s /a-", { name: "create", path: "/a-", data: "", mode: "ephemeral-sequential", ttlMs: undefined }],
    ["create -es /a-", { name: "create", path: "/a-", data: "", mode: "ephemeral-sequential", ttlMs: undefined }],
    ["create -c /a", { name: "create", path: "/a", data: "", mode: "container", ttlMs: undefined }],
    [
      "create /a d sasl:bob:cdrwa,world:anyone:r",
      {
        name: "create",
        path: "/a",
        data: "d",
        mode: "persistent",
        ttlMs: undefined,
        acl: [
          { perms: 31, id: { scheme: "sasl", id: "bob" } },
          { perms: 1, id: { scheme: "world", id: "anyone" } },
        ],
      },
    ],
    ["create -t 5000 /a", { name: "create", path: "/a", data: "", mode: "persistent-with-ttl", ttlMs: 5000 }],
    ["create -s -t5000 /a", { name: "create", path: "/a", data: "", mode: "persistent-sequential-with-ttl", ttlMs: 5000 }],
    ["create /a -- -data", { name: "create", path: "/a", data: "-data", mode: "persistent", ttlMs: undefined }],
    ["set /a v", { name: "set", path: "/a", data: "v", stat: false, version: -1 }],
    ["set -s -v 3 /a v", { name: "set", path: "/a", data: "v", stat: true, version: 3 }],
    ["set -v3 /a v", { name: "set", path: "/a", data: "v", stat: false, version: 3 }],
    ["set -v -1 /a v", { name: "set", path: "/a", data: "v", stat: false, version: -1 }],
    ["set /a -5", { name: "set", path: "/a", data: "-5", stat: false, version: -1 }],
    ["set /a -", { name: "set", path: "/a", data: "-", stat: false, version: -1 }],
    ["delete /a", { name: "delete", path: "/a", version: -1 }],
    ["delete -v 0 /a", { name: "delete", path: "/a", version: 0 }],
    ["deleteall /a", { name: "deleteall", path: "/a" }],
    ["sync /a", { name: "sync", path: "/a" }],
    ["getAcl /a", { name: "getAcl", path: "/a", stat: false }],
    ["getacl -s /a", { name: "getAcl", path: "/a", stat: true }],
    ["close", { name: "close" }],
    ["connect", { name: "connect", connectString: undefined }],
    ["connect 10.0.0.1:2181,10.0.0.2:2181/app", { name: "connect", connectString: "10.0.0.1:2181,10.0.0.2:2181/app" }],
    ["printwatches", { name: "printwatches", enabled: undefined }],
    ["printwatches on", { name: "printwatches", enabled: true }],
    ["printwatches OFF", { name: "printwatches", enabled: false }],
    ["history", { name: "history" }],
    ["help", { name: "help" }],
    ["quit", { name: "quit" }],
    ["exit", { name: "quit" }],
    ["LS /", { name: "ls", path: "/", stat: false, watch: false, recursive: false }],
    ["getEphemerals", { name: "getEphemerals", path: "/" }],
    ["getEphemerals /app/lock-", { name: "getEphemerals", path: "/app/lock-" }],
    ["getAllChildrenNumber /a", { name: "getAllChildrenNumber", path: "/a" }],
    ["addauth digest bob:secret", { name: "addauth", scheme: "digest", auth: "bob:secret" }],
    ["addauth ip", { name: "addauth", scheme: "ip", auth: "" }],
    ["whoami", { name: "whoami" }],
    ["addWatch /a", { name: "addWatch", path: "/a", mode: "persistent-recursive" }],
    ["addWatch -m persistent /a", { name: "addWatch", path: "/a", mode: "persistent" }],
    ["addwatch -m PERSISTENT_RECURSIVE /a", { name: "addWatch", path: "/a", mode: "persistent-recursive" }],
    ["removewatches /a", { name: "removewatches", path: "/a", watcherType: "any", local: false }],
    ["removewatches /a -c", { name: "removewatches", path: "/a", watcherType: "children", local: false }],
    ["removewatches /a -d -l", { name: "removewatches", path: "/a", watcherType: "data", local: true }],
    ["removewatches /a -a", { name: "removewatches", path: "/a", watcherType: "any", local: false }],
    ["removewatches /a -dc", { name: "removewatches", path: "/a", watcherType: "children", local: false }],
    ["setquota -n 10 /a", { name: "setquota", path: "/a", limit: "count", value: 10 }],
    ["setquota -b 0 /a", { name: "setquota", path: "/a", limit: "bytes", value: 0 }],
    ["setquota /a -N 3", { name: "setquota", path: "/a", limit: "countHardLimit", value: 3 }],
    ["setquota -B1024 /a", { name: "setquota", path: "/a", limit: "byteHardLimit", value: 1024 }],
    ["listquota /a", { name: "listquota", path: "/a" }],
    ["delquota /a", { name: "delquota", path: "/a", limit: undefined }],
    ["delquota -n /a", { name: "delquota", path: "/a", limit: "count" }],
    ["delquota -B /a", { name: "delquota", path: "/a", limit: "byteHardLimit" }],
  ];
  for (const [line, command] of rows) assert.deepEqual(parseCommand(splitArgs(line)), command, line);
});

test("setAcl reads zkCli's ACL text: scheme:id:perms entries, the id running to the last colon", () => {
  const command = parseCommand(splitArgs("setAcl -s -v 2 -R /a digest:bob:Kk9HZ2mZ+Ow=:cdrwa,world:anyone:r,ip:10.0.0.1:"));
  assert.deepEqual(command, {
    name: "setAcl",
    path: "/a",
    stat: true,
    version: 2,
    recursive: true,
    acl: [
      { id: { scheme: "digest", id: "bob:Kk9HZ2mZ+Ow=" }, perms: Perms.ALL },
      { id: { scheme: "world", id: "anyone" }, perms: Perms.READ },
      { id: { scheme: "ip", id: "10.0.0.1" }, perms: 0 },
    ],
  });
  assert.deepEqual(parseCommand(["setacl", "/a", "world:anyone:wa"]), {
    name: "setAcl",
    path: "/a",
    stat: false,
    version: -1,
    recursive: false,
    acl: [{ id: { scheme: "world", id: "anyone" }, perms: Perms.WRITE | Perms.ADMIN }],
  });
});

test("bad arguments print the reason and that command's usage", () => {
  const rows: [string, string][] = [
    ["get", "missing path\nusage: get [-s] [-w] path"],
    ["ls", "missing path\nusage: ls [-s] [-w] [-R] path"],
    ["get -x /a", "Unrecognized option: -x\nusage: get [-s] [-w] path"],
    ["stat -s /a", "Unrecognized option: -s\nusage: stat [-w] path"],
    ["set /a", "missing arguments\nusage: set [-s] [-v version] path data"],
    ["set /a x y", "too many arguments (quote data that contains blanks)\nusage: set [-s] [-v version] path data"],
    ["create /a hello big world", "too many arguments (quote data that contains blanks)\nusage: create [-e] [-s] [-c] [-t ttl] path [data] [acl]"],
    ["create /a hello world", "world does not have the form scheme:id:perm\nusage: create [-e] [-s] [-c] [-t ttl] path [data] [acl]"],
    ["delete /a /b", "too many arguments\nusage: delete [-v version] path"],
    ["delete -v", "Missing argument for option: v\nusage: delete [-v version] path"],
    ["delete -v x /a", 'version must be an integer from -1 to 2147483647, not "x"\nusage: delete [-v version] path'],
    ["delete -v -2 /a", 'version must be an integer from -1 to 2147483647, not "-2"\nusage: delete [-v version] path'],
    ["set -v 2147483648 /a v", 'version must be an integer from -1 to 2147483647, not "2147483648"\nusage: set [-s] [-v version] path data'],
    ["create -e -t 10 /a", "TTLs cannot be used with Ephemeral znodes\nusage: create [-e] [-s] [-c] [-t ttl] path [data] [acl]"],
    ["create -c -t 10 /a", "TTLs cannot be used with Container znodes\nusage: create [-e] [-s] [-c] [-t ttl] path [data] [acl]"],
    [
      "create -c -s /a",
      "-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential.\nusage: create [-e] [-s] [-c] [-t ttl] path [data] [acl]",
    ],
    ["create -t 0 /a", 'ttl must be a positive number of ms, not "0"\nusage: create [-e] [-s] [-c] [-t ttl] path [data] [acl]'],
    ["deleteall /", "deleteall cannot delete the root\nusage: deleteall path"],
    ["printwatches maybe", 'expected on or off, not "maybe"\nusage: printwatches on|off'],
    ["close now", "too many arguments\nusage: close"],
    ["setAcl /a", "missing arguments\nusage: setAcl [-s] [-v version] [-R] path acl"],
    ["setAcl /a world:anyone", "world:anyone does not have the form scheme:id:perm\nusage: setAcl [-s] [-v version] [-R] path acl"],
    ["setAcl /a world:anyone:rx", "Unknown perm type: x\nusage: setAcl [-s] [-v version] [-R] path acl"],
    ["setAcl /a world:anyone:r,", " does not have the form scheme:id:perm\nusage: setAcl [-s] [-v version] [-R] path acl"],
    ["setAcl -v x /a world:anyone:r", 'version must be an integer from -1 to 2147483647, not "x"\nusage: setAcl [-s] [-v version] [-R] path acl'],
    ["getAllChildrenNumber", "missing path\nusage: getAllChildrenNumber path"],
    ["getEphemerals /a /b", "too many arguments\nusage: getEphemerals [path]"],
    ["addauth", "missing arguments\nusage: addauth scheme auth"],
    ["whoami me", "too many arguments\nusage: whoami"],
    [
      "addWatch -m once /a",
      'mode must be PERSISTENT or PERSISTENT_RECURSIVE, not "once"\nusage: addWatch [-m mode] path # optional mode is one of [PERSISTENT, PERSISTENT_RECURSIVE] - default is PERSISTENT_RECURSIVE',
    ],
    ["removewatches", "missing path\nusage: removewatches path [-c|-d|-a] [-l]"],
    ["removewatches -x /a", "Unrecognized option: -x\nusage: removewatches path [-c|-d|-a] [-l]"],
    ["setquota /a", "Missing required option: one of -n, -b, -N, -B\nusage: setquota -n|-b|-N|-B val path"],
    [
      "setquota -n 1 -b 2 /a",
      "The option 'b' was specified but an option from this group has already been selected: 'n'\nusage: setquota -n|-b|-N|-B val path",
    ],
    ["setquota -n 0 /a", "the num quota must be greater than zero\nusage: setquota -n|-b|-N|-B val path"],
    ["setquota -N -3 /a", "the num quota must be greater than zero\nusage: setquota -n|-b|-N|-B val path"],
    ["setquota -b -1 /a", "the bytes quota must be greater than or equal to zero\nusage: setquota -n|-b|-N|-B val path"],
    ["setquota -n ten /a", 'the num quota must be an integer, not "ten"\nusage: setquota -n|-b|-N|-B val path'],
    ["setquota -n 2147483648 /a", 'the num quota must be an integer, not "2147483648"\nusage: setquota -n|-b|-N|-B val path'],
    ["setquota -n 5 /zookeeper/quota/a", "cannot set a quota under the path: /zookeeper/quota"],
    ["listquota", "missing path\nusage: listquota path"],
    ["delquota -n -b /a", "The option 'b' was specified but an option from this group has already been selected: 'n'\nusage: delquota [-n|-b|-N|-B] path"],
  ];
  for (const [line, message] of rows) {
    assert.throws(
      () => parseCommand(splitArgs(line)),
      (err: unknown) => err instanceof ShellUsageError && err.message === message,
      line,
    );
  }
});

test("an unknown command prints every command's usage", () => {
  assert.throws(
    () => parseCommand(["frob", "/a"]),
    (err: unknown) =>
      err instanceof ShellUsageError &&
      err.message.startsWith("Unknown command: frob\ncorral shell ") &&
      err.message.includes("\n\tget [-s] [-w] path\n") &&
      err.message.includes("\n\tcreate [-e] [-s] [-c] [-t ttl] path [data] [acl]\n"),
  );
});

const RECONFIG_USAGE =
  "usage: reconfig [-s] [-v version] [[-file path] | [-members serverID=host:port1:port2;port3[,...]*]] | " +
  "[-add serverId=host:port1:port2;port3[,...]]* [-remove serverId[,...]*]";

test("config reads zkCli's -c, -w and -s, bundled or apart", () => {
  const rows: [string, ShellCommand][] = [
    ["config", { name: "config", clientAddresses: false, stat: false, watch: false }],
    ["config -c", { name: "config", clientAddresses: true, stat: false, watch: false }],
    ["config -w", { name: "config", clientAddresses: false, stat: false, watch: true }],
    ["config -s", { name: "config", clientAddresses: false, stat: true, watch: false }],
    ["config -c -w -s", { name: "config", clientAddresses: true, stat: true, watch: true }],
    ["config -csw", { name: "config", clientAddresses: true, stat: true, watch: true }],
    ["CONFIG -ws", { name: "config", clientAddresses: false, stat: true, watch: true }],
  ];
  for (const [line, command] of rows) assert.deepEqual(parseCommand(splitArgs(line)), command, line);
});

test("reconfig reads -add and -remove as comma-separated lists, alone, together or repeated, in lower case", () => {
  const observer = "server.100=127.0.0.1:2890:3890:observer;127.0.0.1:2184";
  const rows: [string, ShellCommand][] = [
    [`reconfig -add ${observer}`, { name: "reconfig", membership: { mode: "incremental", joining: [observer], leaving: [] }, stat: false, fromConfig: -1n }],
    ["reconfig -remove 100", { name: "reconfig", membership: { mode: "incremental", joining: [], leaving: [100] }, stat: false, fromConfig: -1n }],
    ["reconfig -remove 3,4,5", { name: "reconfig", membership: { mode: "incremental", joining: [], leaving: [3, 4, 5] }, stat: false, fromConfig: -1n }],
    [
      "reconfig -add server.4=H4:1:2;3,server.5=h5:1:2:OBSERVER;4 -remove 1",
      {
        name: "reconfig",
        membership: { mode: "incremental", joining: ["server.4=h4:1:2;3", "server.5=h5:1:2:observer;4"], leaving: [1] },
        stat: false,
        fromConfig: -1n,
      },
    ],
    [
      "reconfig -remove 1 -add server.4=h:1:2;3 -add server.5=h:1:2;4 -remove 2,",
      {
        name: "reconfig",
        membership: { mode: "incremental", joining: ["server.4=h:1:2;3", "server.5=h:1:2;4"], leaving: [1, 2] },
        stat: false,
        fromConfig: -1n,
      },
    ],
    ["reconfig -remove ' 1 , 2 '", { name: "reconfig", membership: { mode: "incremental", joining: [], leaving: [1, 2] }, stat: false, fromConfig: -1n }],
  ];
  for (const [line, command] of rows) assert.deepEqual(parseCommand(splitArgs(line)), command, line);
});

test("reconfig reads -members as the whole new membership and -file as a file to read", () => {
  const rows: [string, ShellCommand][] = [
    [
      "reconfig -members server.1=h:1:2;3,server.2=h:4:5;6,server.3=h:7:8;9",
      {
        name: "reconfig",
        membership: { mode: "members", members: ["server.1=h:1:2;3", "server.2=h:4:5;6", "server.3=h:7:8;9"] },
        stat: false,
        fromConfig: -1n,
      },
    ],
    [
      "reconfig -members server.1=h:1:2;3 -members server.2=H:4:5;6",
      { name: "reconfig", membership: { mode: "members", members: ["server.1=h:1:2;3", "server.2=h:4:5;6"] }, stat: false, fromConfig: -1n },
    ],
    ["reconfig -file /etc/zoo.cfg.dynamic", { name: "reconfig", membership: { mode: "file", file: "/etc/zoo.cfg.dynamic" }, stat: false, fromConfig: -1n }],
    ["reconfig -file Members.CFG -s", { name: "reconfig", membership: { mode: "file", file: "Members.CFG" }, stat: true, fromConfig: -1n }],
  ];
  for (const [line, command] of rows) assert.deepEqual(parseCommand(splitArgs(line)), command, line);
});

test("reconfig's -v is the configuration version in hex, as config prints it, and -s asks for the Stat", () => {
  const rows: [string, bigint, boolean][] = [
    ["reconfig -remove 4", -1n, false],
    ["reconfig -v 100000000 -remove 4", 0x100000000n, false],
    ["reconfig -remove 4 -v 1A2b", 0x1a2bn, false],
    ["reconfig -v -1 -remove 4", -1n, false],
    ["reconfig -v +10 -remove 4", 0x10n, false],
    ["reconfig -v7fffffffffffffff -remove 4", (1n << 63n) - 1n, false],
    ["reconfig -v -8000000000000000 -remove 4", -(1n << 63n), false],
    ["reconfig -s -remove 4", -1n, true],
    ["reconfig -sv 200000003 -remove 4", 0x200000003n, true],
    ["reconfig -remove 4 -s -v 0", 0n, true],
  ];
  for (const [line, fromConfig, stat] of rows) {
    assert.deepEqual(
      parseCommand(splitArgs(line)),
      { name: "reconfig", membership: { mode: "incremental", joining: [], leaving: [4] }, stat, fromConfig },
      line,
    );
  }
});

test("reconfig's usage errors print zkCli's reason and the usage", () => {
  const rows: [string, string][] = [
    ["reconfig", "Missing required option: one of -add, -remove, -members, -file"],
    ["reconfig -s -v 1", "Missing required option: one of -add, -remove, -members, -file"],
    ["reconfig -add", "Missing argument for option: add"],
    ["reconfig -remove", "Missing argument for option: remove"],
    ["reconfig -members", "Missing argument for option: members"],
    ["reconfig -file", "Missing argument for option: file"],
    ["reconfig -remove 1 -v", "Missing argument for option: v"],
    ["reconfig -x -remove 1", "Unrecognized option: -x"],
    ["reconfig -a 1", "Unrecognized option: -a"],
    ["reconfig -remove 1 extra", "too many arguments"],
    ["reconfig -v 0x100000000 -remove 1", '-v must be followed by a long (configuration version) in hex, not "0x100000000"'],
    ["reconfig -v ten -remove 1", '-v must be followed by a long (configuration version) in hex, not "ten"'],
    ["reconfig -v 8000000000000000 -remove 1", '-v must be followed by a long (configuration version) in hex, not "8000000000000000"'],
    ["reconfig -v 0x1 -members server.1=h:1:2;3 -add server.2=h:1:2;3", '-v must be followed by a long (configuration version) in hex, not "0x1"'],
    [
      "reconfig -members server.1=h:1:2;3 -add server.2=h:4:5;6",
      "Can't use -file or -members together with -add or -remove (mixing incremental and non-incremental modes is not allowed)",
    ],
    ["reconfig -remove 1 -file f", "Can't use -file or -members together with -add or -remove (mixing incremental and non-incremental modes is not allowed)"],
    ["reconfig -file f -members server.1=h:1:2;3", "Can't use -file and -members together (conflicting non-incremental modes)"],
    ["reconfig -file f -file g", "Can't use -file more than once"],
    ["reconfig -add ''", "-add needs serverId=host:port1:port2;port3[,...]"],
    ["reconfig -add , -remove 1", "-add needs serverId=host:port1:port2;port3[,...]"],
    ["reconfig -remove ,", "-remove needs serverId[,...]"],
    ["reconfig -members ''", "-members needs serverID=host:port1:port2;port3[,...]"],
    ["reconfig -remove server.1", '-remove takes server ids, not "server.1"'],
    ["reconfig -remove 1,-2", '-remove takes server ids, not "-2"'],
  ];
  for (const [line, reason] of rows) {
    assert.throws(
      () => parseCommand(splitArgs(line)),
      (err: unknown) => err instanceof ShellUsageError && err.message === `${reason}\n${RECONFIG_USAGE}`,
      line,
    );
  }
  assert.throws(
    () => parseCommand(splitArgs("config /zookeeper/config")),
    (err: unknown) => err instanceof ShellUsageError && err.message === "too many arguments\nusage: config [-c] [-w] [-s]",
  );
  assert.throws(
    () => parseCommand(splitArgs("config -v 1")),
    (err: unknown) => err instanceof ShellUsageError && err.message === "Unrecognized option: -v\nusage: config [-c] [-w] [-s]",
  );
});

test("help lists config and reconfig with zkCli's synopsis, and tab completion knows them", () => {
  const lines = helpText().split("\n");
  assert.ok(lines.includes("\tconfig [-c] [-w] [-s]"), helpText());
  assert.ok(lines.includes(`\t${RECONFIG_USAGE.slice("usage: ".length)}`), helpText());
  assert.deepEqual(completeCommandName("co"), ["config", "connect"]);
  assert.deepEqual(completeCommandName("rec"), ["reconfig"]);
});

test("a reconfig -file is read as Java properties: server.N entries are the members, version is ignored", () => {
  const file = [
    "# written by ZooKeeper",
    "server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182",
    "  ! another comment",
    "",
    "server.1 = 127.0.0.1:2888:3888:participant;2181",
    "server.3:127.0.0.1:2890:3890:observer;127.0.0.1:2183",
    "version=100000000",
  ].join("\r\n");
  assert.deepEqual(membersFromFile(file), [
    "server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182",
    "server.1=127.0.0.1:2888:3888:participant;2181",
    "server.3=127.0.0.1:2890:3890:observer;127.0.0.1:2183",
  ]);
  // A later line for the same server wins, as in Java's Properties.
  assert.deepEqual(membersFromFile("server.1=a:1:2;3\nserver.2=b:1:2;3\nserver.1=c:1:2;3\n"), ["server.1=c:1:2;3", "server.2=b:1:2;3"]);
});

test("a reconfig -file with another key, a malformed member or no member is refused with the reason", () => {
  const rows: [string, string][] = [
    ["tickTime=2000\nserver.1=h:1:2;3", "Unrecognised parameter: tickTime"],
    ["server.1=h:1:2;3\ngroup.1=1", "Unrecognised parameter: group.1"],
    ["", "bad server specification: no server.<id> line"],
    ["version=1\n# nothing else", "bad server specification: no server.<id> line"],
    ["server.1=h:1", 'bad server specification: server.1: expected host:quorumPort:electionPort[:role], got "h:1"'],
    ["server.1=h:1:2:voter;3", 'bad server specification: server.1: unknown role "voter"'],
  ];
  for (const [text, message] of rows) {
    assert.throws(
      () => membersFromFile(text),
      (err: unknown) => err instanceof Error && err.message === message,
      JSON.stringify(text),
    );
  }
});

test("Java properties: separators, comments, continued lines and escapes as Properties.load reads them", () => {
  const text = [
    "a=1",
    "b : 2",
    "c 3",
    "d\t=\t4 with blanks ",
    "# e=comment",
    "!f=comment",
    "g=first \\",
    "   second",
    "h=ends in an escaped backslash\\\\",
    "i=x",
    "key\\ with\\=odd\\:chars=v\\tal\\u0041\\q",
    "empty",
    "j=later",
    "j=last",
  ].join("\n");
  assert.deepEqual(
    [...parseJavaProperties(text)],
    [
      ["a", "1"],
      ["b", "2"],
      ["c", "3"],
      ["d", "4 with blanks "],
      ["g", "first second"],
      ["h", "ends in an escaped backslash\\"],
      ["i", "x"],
      ["key with=odd:chars", "v\talAq"],
      ["empty", ""],
      ["j", "last"],
    ],
  );
});

test("config -c prints the version and each member's client address, as ConfigUtils.getClientConfigStr does", () => {
  const config = [
    "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181",
    "server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182",
    "server.3=127.0.0.1:2890:3890:participant;127.0.0.1:2183",
    "server.100=127.0.0.1:2891:3891:observer;127.0.0.1:2184",
    "version=200000003",
  ].join("\n");
  assert.equal(formatClientConfig(config), "200000003 127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183,127.0.0.1:2184");
  // A bare client port is on every address; a member without one adds nothing between its commas.
  assert.equal(formatClientConfig("server.1=h:1:2;2181\nserver.2=h:3:4\nserver.3=h:5:6;[::1]:2183\nversion=0"), "0 0.0.0.0:2181,,[::1]:2183");
  // A member line that does not parse is left out; no version line leaves the version empty.
  assert.equal(formatClientConfig("server.1=h:1:2;h:2181\nserver.2=h;h:2182"), " h:2181");
  assert.equal(formatClientConfig(""), " ");
});

test("reconfig's refusals print in zkCli's words", () => {
  const rows: [ZkError, string][] = [
    [new ZkError("NOAUTH", undefined, "/zookeeper/config"), "Insufficient permission : /zookeeper/config"],
    [new ZkError("BADVERSION", undefined, "/zookeeper/config"), "version No is not valid : /zookeeper/config"],
    [new ZkError("BADARGUMENTS", undefined, "/zookeeper/config"), "Argument error : /zookeeper/config"],
    [new ZkError("RECONFIGINPROGRESS"), "Another reconfiguration is in progress -- concurrent reconfigs not supported (yet)"],
    [new ZkError("RECONFIGINPROGRESS", undefined, "/zookeeper/config"), "Another reconfiguration is in progress -- concurrent reconfigs not supported (yet)"],
    [
      new ZkError("NEWCONFIGNOQUORUM", undefined, "/zookeeper/config"),
      "No quorum of new config is connected and up-to-date with the leader of last committed config - try invoking reconfiguration after new servers are connected and synced",
    ],
    [new ZkError("RECONFIGDISABLED", undefined, "/zookeeper/config"), "KeeperErrorCode = Reconfig is disabled"],
  ];
  for (const [err, text] of rows) assert.equal(describeError(err), text, err.code);
});

test("zxids and session ids print as Java's Long.toHexString", () => {
  const rows: [bigint, string][] = [
    [0n, "0x0"],
    [255n, "0xff"],
    [(5n << 32n) | 7n, "0x500000007"],
    [0x1a20244816f0004n, "0x1a20244816f0004"],
    [-1n, "0xffffffffffffffff"],
  ];
  for (const [value, text] of rows) assert.equal(hex64(value), text);
});

test("times print as Java's Date.toString", () => {
  assert.equal(formatJavaDate(0, "UTC"), "Thu Jan 01 00:00:00 UTC 1970");
  assert.equal(formatJavaDate(Date.UTC(2024, 1, 29, 23, 5, 9), "UTC"), "Thu Feb 29 23:05:09 UTC 2024");
  assert.equal(formatJavaDate(Date.UTC(2025, 11, 7, 0, 0, 0), "UTC"), "Sun Dec 07 00:00:00 UTC 2025");
});

test("a Stat prints in zkCli's field order and wording", () => {
  const stat: Stat = {
    czxid: 0x100000002n,
    mzxid: 0x100000005n,
    pzxid: 0x100000003n,
    ctime: Date.UTC(2024, 0, 2, 3, 4, 5),
    mtime: Date.UTC(2024, 0, 2, 3, 4, 6),
    version: 2,
    cversion: 1,
    aversion: 0,
    ephemeralOwner: 0x1a20244816f0004n,
    dataLength: 11,
    numChildren: 1,
  };
  assert.equal(
    formatStat(stat, "UTC"),
    [
      "cZxid = 0x100000002",
      "ctime = Tue Jan 02 03:04:05 UTC 2024",
      "mZxid = 0x100000005",
      "mtime = Tue Jan 02 03:04:06 UTC 2024",
      "pZxid = 0x100000003",
      "cversion = 1",
      "dataVersion = 2",
      "aclVersion = 0",
      "ephemeralOwner = 0x1a20244816f0004",
      "dataLength = 11",
      "numChildren = 1",
    ].join("\n"),
  );
});

test("children print sorted as a Java list", () => {
  assert.equal(formatChildren([]), "[]");
  assert.equal(formatChildren(["b", "a", "seq-0000000010", "seq-0000000002"]), "[a, b, seq-0000000002, seq-0000000010]");
  assert.equal(childPath("/", "a"), "/a");
  assert.equal(childPath("/a", "b"), "/a/b");
});

test("ACLs print as zkCli's getAcl does", () => {
  assert.equal(permString(Perms.ALL), "cdrwa");
  assert.equal(permString(Perms.READ | Perms.WRITE), "rw");
  assert.equal(permString(0), "");
  assert.equal(
    formatAcl([
      { perms: Perms.ALL, id: { scheme: "world", id: "anyone" } },
      { perms: Perms.READ, id: { scheme: "ip", id: "10.0.0.1" } },
    ]),
    "'world,'anyone\n: cdrwa\n'ip,'10.0.0.1\n: r",
  );
});

test("watch events and session changes print as zkCli's watcher does", () => {
  assert.equal(formatWatchedEvent({ type: "NodeDataChanged", path: "/x" }), "\nWATCHER::\n\nWatchedEvent state:SyncConnected type:NodeDataChanged path:/x");
  assert.equal(
    formatWatchedEvent({ type: "NodeChildrenChanged", path: "/" }).split("\n").at(-1),
    "WatchedEvent state:SyncConnected type:NodeChildrenChanged path:/",
  );
  const rows: [Parameters<typeof formatStateEvent>[0], string][] = [
    ["connected", "SyncConnected"],
    ["reconnected", "SyncConnected"],
    ["disconnected", "Disconnected"],
    ["expired", "Expired"],
    ["closed", "Closed"],
  ];
  for (const [state, keeperState] of rows) {
    assert.equal(formatStateEvent(state), `\nWATCHER::\n\nWatchedEvent state:${keeperState} type:None path:null`);
  }
});

test("the prompt shows the connect string, the connection state and the command count", () => {
  assert.equal(formatPrompt("127.0.0.1:2181", "connected", 0), "[corral: 127.0.0.1:2181(CONNECTED) 0] ");
  assert.equal(formatPrompt("h1:1,h2:2/app", "reconnected", 7), "[corral: h1:1,h2:2/app(CONNECTED) 7] ");
  assert.equal(formatPrompt("h:1", "disconnected", 3), "[corral: h:1(CONNECTING) 3] ");
  assert.equal(formatPrompt("h:1", "expired", 3), "[corral: h:1(CLOSED) 3] ");
  assert.equal(formatPrompt("h:1", undefined, 3), "[corral: h:1(CLOSED) 3] ");
});

test("getEphemerals, whoami and listquota print as zkCli does", () => {
  assert.equal(formatJavaList([]), "[]");
  assert.equal(formatJavaList(["/b", "/a/x"]), "[/b, /a/x]");
  assert.equal(formatWhoAmI([]), "Auth scheme: User");
  assert.equal(
    formatWhoAmI([
      { authScheme: "ip", user: "127.0.0.1" },
      { authScheme: "digest", user: "bob" },
    ]),
    "Auth scheme: User\nip: 127.0.0.1\ndigest: bob",
  );
  assert.equal(formatQuotaLocation("/app"), "absolute path is /zookeeper/quota/app/zookeeper_limits");
  const report = { limits: { count: 10, bytes: -1, countHardLimit: -1, byteHardLimit: 4096 }, usage: { count: 3, bytes: 12 } };
  assert.equal(formatQuotaReport("/app", report), "Output quota for /app count=10,bytes=-1=;byteHardLimit=4096\nOutput stat for /app count=3,bytes=12");
  assert.deepEqual(quotaWarnings(report), []);
  assert.deepEqual(quotaWarnings({ limits: { count: 2, bytes: -1, countHardLimit: -1, byteHardLimit: 5 }, usage: { count: 3, bytes: 12 } }), [
    "[Warning]: the count quota you create is less than the existing count:3",
    "[Warning]: the bytes quota you create is less than the existing bytes:12",
  ]);
});

test("data prints as UTF-8 text", () => {
  assert.equal(formatData(new TextEncoder().encode("héllo wörld")), "héllo wörld");
  assert.equal(formatData(new Uint8Array(0)), "");
});

test("errors print in zkCli's words, never as a stack", () => {
  const rows: [unknown, string][] = [
    [new ZkError("NONODE", undefined, "/x"), "Node does not exist: /x"],
    [new ZkError("NODEEXISTS", undefined, "/x"), "Node already exists: /x"],
    [new ZkError("BADVERSION", undefined, "/x"), "version No is not valid : /x"],
    [new ZkError("NOTEMPTY", undefined, "/x"), "Node not empty: /x"],
    [new ZkError("NOCHILDRENFOREPHEMERALS", undefined, "/e/c"), "Ephemerals cannot have children: /e/c"],
    [new ZkError("NOAUTH", undefined, "/x"), "Insufficient permission : /x"],
    [new ZkError("INVALIDACL", undefined, "/x"), "Acl is not valid : /x"],
    [new ZkError("BADARGUMENTS", undefined, "/x"), "Argument error : /x"],
    [new ZkError("BADARGUMENTS", 'invalid path "x": path must start with /', "x"), 'invalid path "x": path must start with /'],
    [new ZkError("UNIMPLEMENTED", undefined, "/ttl"), "UNIMPLEMENTED: /ttl"],
    [new ZkError("NOWATCHER", undefined, "/w"), "KeeperErrorCode = No such watcher for /w"],
    [new ZkError("QUOTAEXCEEDED", undefined, "/q/x"), "Quota has exceeded : /q/x"],
    [new ZkError("CONNECTIONLOSS", "CONNECTIONLOSS: not connected", "/x"), "CONNECTIONLOSS: /x"],
    [new ZkError("SESSIONEXPIRED", "SESSIONEXPIRED: session expired", "/x"), "SESSIONEXPIRED: /x"],
    [new ZkError("CONNECTIONLOSS", "CONNECTIONLOSS: could not connect within 10 ms"), "CONNECTIONLOSS: could not connect within 10 ms"],
    [new ZkError("SYSTEMERROR", "something odd"), "SYSTEMERROR: something odd"],
    [new ZkError("SYSTEMERROR"), "SYSTEMERROR"],
    [new ShellError("Not connected"), "Not connected"],
    [new ShellUsageError("missing path\nusage: get [-s] [-w] path"), "missing path\nusage: get [-s] [-w] path"],
    [new Error("boom"), "error: boom"],
    ["boom", "error: boom"],
  ];
  for (const [err, text] of rows) assert.equal(describeError(err), text);
});

test("a failed connect says where and why, and points at npm start", () => {
  const lost = describeConnectFailure("127.0.0.1:2181", 500, new ZkError("CONNECTIONLOSS", "CONNECTIONLOSS: could not connect within 500 ms"));
  assert.equal(
    lost,
    "Unable to connect to 127.0.0.1:2181: no server accepted a session within 500 ms.\n" +
      "Is a corral server running there? (npm start runs a three-voter cluster on 127.0.0.1:2181-2183)",
  );
  const bad = new ZkError("BADARGUMENTS", 'invalid connect string "a:b:c": IPv6 addresses need brackets: "a:b:c"');
  assert.equal(describeConnectFailure("a:b:c", 500, bad), bad.message);
});

test("tab completion completes command names and child paths", () => {
  assert.deepEqual(completeCommandName("get"), ["get", "getAcl", "getEphemerals", "getAllChildrenNumber"]);
  assert.deepEqual(completeCommandName("set"), ["set", "setAcl", "setquota"]);
  assert.deepEqual(completeCommandName("de"), ["delete", "deleteall", "delquota"]);
  assert.deepEqual(completeCommandName("zz"), []);
  assert.deepEqual(pathCompletionTarget("/"), { parent: "/", prefix: "" });
  assert.deepEqual(pathCompletionTarget("/ap"), { parent: "/", prefix: "ap" });
  assert.deepEqual(pathCompletionTarget("/app/wo"), { parent: "/app", prefix: "wo" });
  assert.deepEqual(pathCompletionTarget("/app/"), { parent: "/app", prefix: "" });
  assert.equal(pathCompletionTarget("app"), undefined);
});

test("corral shell's own flags: --connect, --timeout-ms, the TLS ones, then one optional command", () => {
  const rows: [string[], ReturnType<typeof parseShellArgs>][] = [
    [[], { connectString: "127.0.0.1:2181", timeoutMs: 10_000, command: undefined, help: false, tls: undefined, sasl: {} }],
    [["--connect", "h1:1,h2:2/app"], { connectString: "h1:1,h2:2/app", timeoutMs: 10_000, command: undefined, help: false, tls: undefined, sasl: {} }],
    [["--connect=h:1", "--timeout-ms", "500"], { connectString: "h:1", timeoutMs: 500, command: undefined, help: false, tls: undefined, sasl: {} }],
    [["--timeout-ms=750", "--", "ls", "/"], { connectString: "127.0.0.1:2181", timeoutMs: 750, command: ["ls", "/"], help: false, tls: undefined, sasl: {} }],
    [["--connect", "h:1", "ls", "-s", "/"], { connectString: "h:1", timeoutMs: 10_000, command: ["ls", "-s", "/"], help: false, tls: undefined, sasl: {} }],
    [
      ["--", "create", "/x", "hello world"],
      { connectString: "127.0.0.1:2181", timeoutMs: 10_000, command: ["create", "/x", "hello world"], help: false, tls: undefined, sasl: {} },
    ],
    [["ls -s /"], { connectString: "127.0.0.1:2181", timeoutMs: 10_000, command: ["ls", "-s", "/"], help: false, tls: undefined, sasl: {} }],
    [["--", "--connect"], { connectString: "127.0.0.1:2181", timeoutMs: 10_000, command: ["--connect"], help: false, tls: undefined, sasl: {} }],
    [["--help"], { connectString: "127.0.0.1:2181", timeoutMs: 10_000, command: undefined, help: true, tls: undefined, sasl: {} }],
    [["--tls", "ls", "/"], { connectString: "127.0.0.1:2181", timeoutMs: 10_000, command: ["ls", "/"], help: false, tls: {}, sasl: {} }],
    [
      ["--tls-ca-file", "ca.pem", "--tls-cert-file=me.pem", "--tls-key-file", "me.key", "--tls-servername", "zk.example", "--tls"],
      {
        connectString: "127.0.0.1:2181",
        timeoutMs: 10_000,
        command: undefined,
        help: false,
        tls: { caFile: "ca.pem", certFile: "me.pem", keyFile: "me.key", servername: "zk.example" },
        sasl: {},
      },
    ],
  ];
  for (const [argv, parsed] of rows) assert.deepEqual(parseShellArgs(argv), parsed, argv.join(" "));
});

test("corral shell's SASL settings: flags, -D properties and CLIENT_JVMFLAGS under zkCli's property names, the command line winning", () => {
  const sasl = (argv: string[], jvmFlags = "") => parseShellArgs(argv, jvmFlags).sasl;
  assert.deepEqual(sasl(["--jaas-config", "c.jaas", "--sasl-client-section=Other", "--sasl-service-name", "zk", "--sasl-client", "true"]), {
    jaasConfigFile: "c.jaas",
    section: "Other",
    serviceName: "zk",
    enabled: "true",
  });
  assert.deepEqual(sasl(["-Djava.security.auth.login.config=c.jaas", "-Dzookeeper.sasl.clientconfig=Other", "-Dzookeeper.sasl.client=false", "ls", "/"]), {
    jaasConfigFile: "c.jaas",
    section: "Other",
    enabled: "false",
  });
  assert.deepEqual(sasl([], "-Xmx1g -Djava.security.auth.login.config=env.jaas -Dzookeeper.sasl.client.username=zk -Dother=1"), {
    jaasConfigFile: "env.jaas",
    serviceName: "zk",
  });
  assert.deepEqual(sasl(["--jaas-config", "flag.jaas"], "-Djava.security.auth.login.config=env.jaas"), { jaasConfigFile: "flag.jaas" });
  assert.throws(() => sasl(["-Dother.property=1"]), /-Dother.property=1: unknown property/);
  assert.throws(() => sasl(["-Djava.security.auth.login.config"]), /java.security.auth.login.config: missing value/);
  assert.throws(() => sasl(["--jaas-config"]), /jaas-config: missing value/);
});

test("bad flags to corral shell are ConfigErrors naming the flag", () => {
  const rows: [string[], RegExp][] = [
    [["--server", "h:1"], /server: unknown option/],
    [["-server", "h:1"], /-server: unknown option/],
    [["--connect"], /connect: missing value/],
    [["--connect", ""], /connect: expected host:port/],
    [["--timeout-ms", "0"], /timeout-ms: expected a positive integer/],
    [["--timeout-ms", "soon"], /timeout-ms: expected a positive integer/],
    [["--", 'create /x "unterminated'], /command: unterminated double quote/],
    [["--tls-ca-file", ""], /tls-ca-file: must not be empty/],
    [["--tls-cert-file"], /tls-cert-file: missing value/],
  ];
  for (const [argv, message] of rows) {
    assert.throws(
      () => parseShellArgs(argv),
      (err: unknown) => err instanceof ConfigError && message.test(err.message),
      argv.join(" "),
    );
  }
});
