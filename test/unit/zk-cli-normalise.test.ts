/** The differential test's normalisers: what they replace, what they must leave alone. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { normaliseCliMt, normaliseZkCli } from "../helpers/zk-cli-tools.js";

test("zkCli: zxids and sessions become ordinals, times placeholders; data, versions, errors and events stay", () => {
  const stat = (czxid: string, mzxid: string, owner: string, version: number) => [
    `cZxid = ${czxid}`,
    "ctime = Sun Nov 22 15:44:42 UTC 2026",
    `mZxid = ${mzxid}`,
    "mtime = Sun Nov 22 15:44:43 UTC 2026",
    `pZxid = ${czxid}`,
    "cversion = 0",
    `dataVersion = ${version}`,
    "aclVersion = 0",
    `ephemeralOwner = ${owner}`,
    "dataLength = 5",
    "numChildren = 0",
  ];
  const transcript = normaliseZkCli({
    stdout: "",
    stderr: "",
    exitCode: 0,
    segments: [
      {
        command: "(connect)",
        out: ["Connecting to 127.0.0.1:2181", "Welcome to ZooKeeper!", "JLine support is disabled"],
        err: [],
        events: ["WatchedEvent state:SyncConnected type:None path:null"],
      },
      { command: "get -s /a", out: ["hello", ...stat("0x1a", "0x1a", "0x0", 0)], err: [], events: [] },
      {
        command: "set -s /a world",
        out: stat("0x1a", "0x2f", "0x1000a2b3c0001", 1),
        err: [],
        events: ["WatchedEvent state:SyncConnected type:NodeDataChanged path:/a"],
      },
      { command: "set -v 9 /a x", out: [], err: ["version No is not valid : /a"], events: [] },
      { command: "getEphemerals /", out: ["[/b, /a]"], err: [], events: [] },
      { command: "close", out: [], err: [], events: ["WatchedEvent state:Closed type:None path:null"] },
    ],
  });
  assert.deepEqual(transcript, [
    "$ (connect)",
    "event: WatchedEvent state:SyncConnected type:None path:null",
    "$ get -s /a",
    "out: hello",
    "out: cZxid = <zxid#1>",
    "out: ctime = <time>",
    "out: mZxid = <zxid#1>",
    "out: mtime = <time>",
    "out: pZxid = <zxid#1>",
    "out: cversion = 0",
    "out: dataVersion = 0",
    "out: aclVersion = 0",
    "out: ephemeralOwner = 0x0",
    "out: dataLength = 5",
    "out: numChildren = 0",
    "$ set -s /a world",
    "out: cZxid = <zxid#1>",
    "out: ctime = <time>",
    "out: mZxid = <zxid#2>",
    "out: mtime = <time>",
    "out: pZxid = <zxid#1>",
    "out: cversion = 0",
    "out: dataVersion = 1",
    "out: aclVersion = 0",
    "out: ephemeralOwner = <session#1>",
    "out: dataLength = 5",
    "out: numChildren = 0",
    "event: WatchedEvent state:SyncConnected type:NodeDataChanged path:/a",
    "$ set -v 9 /a x",
    "err: version No is not valid : /a",
    "$ getEphemerals /",
    "out: [/a, /b]",
    "$ close",
  ]);
});

test("cli_mt: timings, times, zxids and session ids are replaced, ls children sorted, log lines dropped", () => {
  const transcript = normaliseCliMt({
    stderr: "",
    stdout: "",
    exitCode: 0,
    segments: [
      { command: "(connect)", lines: ["Watcher SESSION_EVENT state = CONNECTED_STATE", "Got a new session id: 0x10002ad1e230007"] },
      {
        command: "ls2 /r",
        lines: [
          "time = 3 msec",
          "/r: rc = 0",
          "\tzz",
          "\tb10",
          "\ta",
          "time = 4 msec",
          "\tctime = Sun Nov 22 15:49:17 2026",
          "\tczxid=2d",
          "\tmtime=Sun Nov 22 15:49:24 2026",
          "\tmzxid=3d",
          "\tversion=2\taversion=0",
          "\tephemeralOwner = 10002ad1e230007",
        ],
      },
      {
        command: "addauth x y",
        lines: ["2026-11-22 15:49:31,194:19191(0x7f5d597486c0):ZOO_ERROR@auth_completion_func@2071: failed", "Watcher SESSION_EVENT state = AUTH_FAILED_STATE"],
      },
    ],
  });
  assert.deepEqual(transcript, [
    "$ (connect)",
    "Watcher SESSION_EVENT state = CONNECTED_STATE",
    "Got a new session id: <session#1>",
    "$ ls2 /r",
    "time = <ms> msec",
    "/r: rc = 0",
    "\ta",
    "\tb10",
    "\tzz",
    "time = <ms> msec",
    "\tctime = <time>",
    "\tczxid=<zxid#1>",
    "\tmtime=<time>",
    "\tmzxid=<zxid#2>",
    "\tversion=2\taversion=0",
    "\tephemeralOwner = <session#1>",
    "$ addauth x y",
    "Watcher SESSION_EVENT state = AUTH_FAILED_STATE",
  ]);
});
