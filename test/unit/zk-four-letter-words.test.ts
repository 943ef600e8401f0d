/**
 * ZooKeeper 3.8's four-letter words (src/server/zk-wire/four-letter-words.ts). Golden strings are
 * written by hand from apache/zookeeper release-3.8.6's server/command/*Command.java,
 * ServerStats.toString, ServerCnxn.dumpConnectionInfo, dumpConf, Environment.list and
 * FourLetterCommands.isEnabled.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  answerFourLetterWord,
  javaDoubleToString,
  KNOWN_FOUR_LETTER_WORDS,
  parseFourLetterWordWhitelist,
  recognizeFourLetterWord,
  renderFourLetterWord,
  zookeeperFullVersion,
  type FourLetterWordContext,
} from "../../src/server/zk-wire/four-letter-words.js";
import { encodeFrame } from "../../src/server/zk-wire/frames.js";

const VERSION = "3.8.0-corral-0.1.0, built on 2026-11-22 14:50 UTC";
const ALL = parseFourLetterWordWhitelist("*");

function bytes(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

function standalone(): FourLetterWordContext {
  return {
    version: VERSION,
    mode: "standalone",
    readOnly: false,
    serving: true,
    zxid: 0x1a2bn,
    nodeCount: 7,
    watches: { connections: 2, paths: 3, total: 4 },
    connections: [
      { remoteHost: "127.0.0.1", remotePort: 50001, interestOps: 0, outstandingRequests: 0, packetsReceived: 1, packetsSent: 0 },
      {
        remoteHost: "10.0.0.5",
        remotePort: 41234,
        interestOps: 1,
        outstandingRequests: 2,
        packetsReceived: 30,
        packetsSent: 29,
        session: {
          sessionId: 0x100000a5b0001n,
          lastOperation: "GETD",
          establishedMs: 1795877400000,
          sessionTimeoutMs: 30000,
          lastCxid: 28,
          lastZxid: 0x1a2an,
          lastResponseMs: 1795877460000,
          lastLatencyMs: 1,
          minLatencyMs: 0,
          avgLatencyMs: 2,
          maxLatencyMs: 9,
        },
      },
    ],
    latency: { minMs: 0, avgMs: 1.5, maxMs: 9 },
    packetsReceived: 31,
    packetsSent: 29,
    outstandingRequests: 2,
    ephemeralsCount: 1,
    approximateDataSizeBytes: 512,
    openFileDescriptorCount: 40,
    maxFileDescriptorCount: 1024,
    config: {
      clientPort: 2181,
      secureClientPort: -1,
      dataDir: "/var/lib/corral/data/version-2",
      dataDirSizeBytes: 4096,
      dataLogDir: "/var/lib/corral/log/version-2",
      dataLogSizeBytes: 8192,
      tickTimeMs: 2000,
      maxClientConnectionsPerHost: 60,
      minSessionTimeoutMs: 4000,
      maxSessionTimeoutMs: 40000,
      clientPortListenBacklog: -1,
      serverId: 0,
    },
    environment: {
      hostName: "corral-1",
      javaVersion: "<NA>",
      javaVendor: "<NA>",
      javaHome: "<NA>",
      javaClassPath: "<NA>",
      javaLibraryPath: "<NA>",
      javaIoTmpdir: "/tmp",
      javaCompiler: "<NA>",
      osName: "Linux",
      osArch: "amd64",
      osVersion: "6.1.0",
      userName: "corral",
      userHome: "/home/corral",
      userDir: "/srv/corral",
      memoryFreeMb: 100,
      memoryMaxMb: 2048,
      memoryTotalMb: 256,
    },
  };
}

function leader(): FourLetterWordContext {
  const base = standalone();
  return {
    ...base,
    mode: "leader",
    leader: {
      learners: 2,
      syncedFollowers: 2,
      syncedNonVotingFollowers: 0,
      syncedObservers: 0,
      pendingSyncs: 0,
      proposalSizeBytes: { last: 120, min: 36, max: 300 },
    },
    config: {
      ...base.config,
      serverId: 1,
      quorum: {
        initLimitTicks: 10,
        syncLimitTicks: 5,
        electionAlgorithm: 3,
        configVersion: 0x100000000n,
        members: [
          { serverId: 1, host: "10.0.0.1", quorumPort: 2888, electionPort: 3888, role: "participant" },
          { serverId: 2, host: "10.0.0.2", quorumPort: 2888, electionPort: 3888, role: "participant" },
          { serverId: 3, host: "10.0.0.3", quorumPort: 2888, electionPort: 3888, role: "observer", clientHost: "0.0.0.0", clientPort: 2181 },
        ],
      },
    },
  };
}

// ---- recognition ----------------------------------------------------------------------------

test("every known word is recognised from the first 4 bytes of a connection", () => {
  for (const word of KNOWN_FOUR_LETTER_WORDS) {
    if (word === "telnet close") continue;
    assert.equal(recognizeFourLetterWord(bytes(word)), word);
  }
  assert.equal(recognizeFourLetterWord(bytes("ruok\n")), "ruok");
  assert.equal(recognizeFourLetterWord(new Uint8Array([0xff, 0xf4, 0xff, 0xfd])), "telnet close");
});

test("a ConnectRequest frame, an unknown word, an upper-case word or fewer than 4 bytes are not a 4lw", () => {
  assert.equal(recognizeFourLetterWord(encodeFrame(new Uint8Array(44))), undefined);
  assert.equal(recognizeFourLetterWord(bytes("abcd")), undefined);
  assert.equal(recognizeFourLetterWord(bytes("RUOK")), undefined);
  assert.equal(recognizeFourLetterWord(bytes("ruo")), undefined);
  assert.equal(recognizeFourLetterWord(new Uint8Array(0)), undefined);
});

test("recognition reads a view at an offset into a larger buffer", () => {
  const buffer = bytes("xxsrvr");
  assert.equal(recognizeFourLetterWord(buffer.subarray(2)), "srvr");
});

// ---- whitelist ------------------------------------------------------------------------------

test("the whitelist unset enables srvr only, as ZooKeeper 3.8's default", () => {
  assert.deepEqual([...parseFourLetterWordWhitelist(undefined)], ["srvr"]);
});

test("the whitelist enables isro too when read-only mode is enabled", () => {
  assert.deepEqual([...parseFourLetterWordWhitelist(undefined, { readOnlyModeEnabled: true })].sort(), ["isro", "srvr"]);
});

test("the whitelist takes comma-separated words, trims them, skips empties and always adds srvr", () => {
  assert.deepEqual([...parseFourLetterWordWhitelist(" ruok , mntr,,stat ")].sort(), ["mntr", "ruok", "srvr", "stat"]);
  assert.deepEqual([...parseFourLetterWordWhitelist("")], ["srvr"]);
});

test("the whitelist * enables every known word", () => {
  for (const word of KNOWN_FOUR_LETTER_WORDS) assert.ok(ALL.has(word), word);
  assert.ok(parseFourLetterWordWhitelist("ruok, *").has("cons"));
});

test("the whitelist is case-sensitive", () => {
  assert.equal(parseFourLetterWordWhitelist("RUOK").has("ruok"), false);
});

test("a known word outside the whitelist gets ZooKeeper's refusal text", () => {
  const answer = answerFourLetterWord("ruok", parseFourLetterWordWhitelist(undefined), standalone());
  assert.deepEqual(answer, { word: "ruok", executed: false, text: "ruok is not executed because it is not in the whitelist.\n" });
});

test("a known word corral does not implement is refused even under *", () => {
  const answer = answerFourLetterWord("dump", ALL, standalone());
  assert.equal(answer.executed, false);
  assert.equal(answer.text, "dump is not executed because it is not in the whitelist.\n");
});

// ---- each word ------------------------------------------------------------------------------

test("ruok answers imok without a newline", () => {
  assert.deepEqual(answerFourLetterWord("ruok", ALL, standalone()), { word: "ruok", executed: true, text: "imok" });
});

test("srvr prints version, stats, node count", () => {
  assert.equal(
    renderFourLetterWord("srvr", standalone()),
    `Zookeeper version: ${VERSION}\n` +
      "Latency min/avg/max: 0/1.5/9\n" +
      "Received: 31\n" +
      "Sent: 29\n" +
      "Connections: 2\n" +
      "Outstanding: 2\n" +
      "Zxid: 0x1a2b\n" +
      "Mode: standalone\n" +
      "Node count: 7\n",
  );
});

test("srvr on a leader adds proposal sizes", () => {
  assert.equal(
    renderFourLetterWord("srvr", leader()),
    `Zookeeper version: ${VERSION}\n` +
      "Latency min/avg/max: 0/1.5/9\n" +
      "Received: 31\n" +
      "Sent: 29\n" +
      "Connections: 2\n" +
      "Outstanding: 2\n" +
      "Zxid: 0x1a2b\n" +
      "Mode: leader\n" +
      "Node count: 7\n" +
      "Proposal sizes last/min/max: 120/36/300\n",
  );
});

test("srvr on a read-only server says so and reports mode read-only", () => {
  const text = renderFourLetterWord("srvr", { ...standalone(), readOnly: true });
  assert.ok(text.startsWith(`Zookeeper version: ${VERSION}\nREAD-ONLY mode; serving only read-only clients\nLatency`));
  assert.match(text, /\nMode: read-only\n/);
});

test("stat lists clients briefly between the version and the stats", () => {
  assert.equal(
    renderFourLetterWord("stat", standalone()),
    `Zookeeper version: ${VERSION}\n` +
      "Clients:\n" +
      " /127.0.0.1:50001[0](queued=0,recved=1,sent=0)\n" +
      " /10.0.0.5:41234[1](queued=2,recved=30,sent=29)\n" +
      "\n" +
      "Latency min/avg/max: 0/1.5/9\n" +
      "Received: 31\n" +
      "Sent: 29\n" +
      "Connections: 2\n" +
      "Outstanding: 2\n" +
      "Zxid: 0x1a2b\n" +
      "Mode: standalone\n" +
      "Node count: 7\n",
  );
});

test("cons prints full connection details and a blank line", () => {
  assert.equal(
    renderFourLetterWord("cons", standalone()),
    " /127.0.0.1:50001[0](queued=0,recved=1,sent=0)\n" +
      " /10.0.0.5:41234[1](queued=2,recved=30,sent=29,sid=0x100000a5b0001,lop=GETD,est=1795877400000,to=30000," +
      "lcxid=0x1c,lzxid=0x1a2a,lresp=1795877460000,llat=1,minlat=0,avglat=2,maxlat=9)\n" +
      "\n",
  );
});

test("cons leaves lcxid out before the first request and prints lzxid -1 as Java does", () => {
  const context = standalone();
  const connection = context.connections[1]!;
  const session = { ...connection.session!, lastCxid: -1, lastZxid: -1n };
  const text = renderFourLetterWord("cons", { ...context, connections: [{ ...connection, remoteHost: "::1", session }] });
  assert.equal(
    text,
    " /[::1]:41234[1](queued=2,recved=30,sent=29,sid=0x100000a5b0001,lop=GETD,est=1795877400000,to=30000," +
      "lzxid=0xffffffffffffffff,lresp=1795877460000,llat=1,minlat=0,avglat=2,maxlat=9)\n\n",
  );
});

test("mntr prints ZooKeeper's zk_ keys, tab-separated", () => {
  assert.equal(
    renderFourLetterWord("mntr", standalone()),
    `zk_version\t${VERSION}\n` +
      "zk_server_state\tstandalone\n" +
      "zk_avg_latency\t1.5\n" +
      "zk_max_latency\t9\n" +
      "zk_min_latency\t0\n" +
      "zk_packets_received\t31\n" +
      "zk_packets_sent\t29\n" +
      "zk_num_alive_connections\t2\n" +
      "zk_outstanding_requests\t2\n" +
      "zk_znode_count\t7\n" +
      "zk_watch_count\t4\n" +
      "zk_ephemerals_count\t1\n" +
      "zk_approximate_data_size\t512\n" +
      "zk_open_file_descriptor_count\t40\n" +
      "zk_max_file_descriptor_count\t1024\n",
  );
});

test("mntr on a leader adds learner, sync and proposal gauges", () => {
  const text = renderFourLetterWord("mntr", leader());
  assert.ok(text.includes("zk_server_state\tleader\n"));
  assert.ok(
    text.endsWith(
      "zk_learners\t2\n" +
        "zk_synced_followers\t2\n" +
        "zk_synced_non_voting_followers\t0\n" +
        "zk_synced_observers\t0\n" +
        "zk_pending_syncs\t0\n" +
        "zk_last_proposal_size\t120\n" +
        "zk_max_proposal_size\t300\n" +
        "zk_min_proposal_size\t36\n",
    ),
  );
});

test("mntr keys are all zk_ keys ZooKeeper 3.8 emits", () => {
  const known = new Set([
    "version",
    "server_state",
    "avg_latency",
    "max_latency",
    "min_latency",
    "packets_received",
    "packets_sent",
    "num_alive_connections",
    "outstanding_requests",
    "znode_count",
    "watch_count",
    "ephemerals_count",
    "approximate_data_size",
    "open_file_descriptor_count",
    "max_file_descriptor_count",
    "learners",
    "synced_followers",
    "synced_non_voting_followers",
    "synced_observers",
    "pending_syncs",
    "last_proposal_size",
    "max_proposal_size",
    "min_proposal_size",
  ]);
  for (const line of renderFourLetterWord("mntr", leader()).trimEnd().split("\n")) {
    const [key, value, ...rest] = line.split("\t");
    assert.equal(rest.length, 0, line);
    assert.ok(value !== undefined && key !== undefined && key.startsWith("zk_") && known.has(key.slice(3)), line);
  }
});

test("mntr prints unknown file descriptor counts as -1, like ZooKeeper off Unix", () => {
  const { openFileDescriptorCount: _open, maxFileDescriptorCount: _max, ...rest } = standalone();
  const text = renderFourLetterWord("mntr", rest);
  assert.ok(text.includes("zk_open_file_descriptor_count\t-1\nzk_max_file_descriptor_count\t-1\n"));
});

test("conf on a standalone server prints ZooKeeperServer.dumpConf", () => {
  assert.equal(
    renderFourLetterWord("conf", standalone()),
    "clientPort=2181\n" +
      "secureClientPort=-1\n" +
      "dataDir=/var/lib/corral/data/version-2\n" +
      "dataDirSize=4096\n" +
      "dataLogDir=/var/lib/corral/log/version-2\n" +
      "dataLogSize=8192\n" +
      "tickTime=2000\n" +
      "maxClientCnxns=60\n" +
      "minSessionTimeout=4000\n" +
      "maxSessionTimeout=40000\n" +
      "clientPortListenBacklog=-1\n" +
      "serverId=0\n",
  );
});

test("conf in a quorum adds limits, ports, peer type and membership, ending without a newline", () => {
  assert.equal(
    renderFourLetterWord("conf", leader()),
    "clientPort=2181\n" +
      "secureClientPort=-1\n" +
      "dataDir=/var/lib/corral/data/version-2\n" +
      "dataDirSize=4096\n" +
      "dataLogDir=/var/lib/corral/log/version-2\n" +
      "dataLogSize=8192\n" +
      "tickTime=2000\n" +
      "maxClientCnxns=60\n" +
      "minSessionTimeout=4000\n" +
      "maxSessionTimeout=40000\n" +
      "clientPortListenBacklog=-1\n" +
      "serverId=1\n" +
      "initLimit=10\n" +
      "syncLimit=5\n" +
      "electionAlg=3\n" +
      "electionPort=3888\n" +
      "quorumPort=2888\n" +
      "peerType=0\n" +
      "membership: \n" +
      "server.1=10.0.0.1:2888:3888:participant\n" +
      "server.2=10.0.0.2:2888:3888:participant\n" +
      "server.3=10.0.0.3:2888:3888:observer;0.0.0.0:2181\n" +
      "version=100000000",
  );
});

test("envi prints Environment.list in ZooKeeper's order, even when not serving", () => {
  const expected =
    "Environment:\n" +
    `zookeeper.version=${VERSION}\n` +
    "host.name=corral-1\n" +
    "java.version=<NA>\n" +
    "java.vendor=<NA>\n" +
    "java.home=<NA>\n" +
    "java.class.path=<NA>\n" +
    "java.library.path=<NA>\n" +
    "java.io.tmpdir=/tmp\n" +
    "java.compiler=<NA>\n" +
    "os.name=Linux\n" +
    "os.arch=amd64\n" +
    "os.version=6.1.0\n" +
    "user.name=corral\n" +
    "user.home=/home/corral\n" +
    "user.dir=/srv/corral\n" +
    "os.memory.free=100MB\n" +
    "os.memory.max=2048MB\n" +
    "os.memory.total=256MB\n";
  assert.equal(renderFourLetterWord("envi", standalone()), expected);
  assert.equal(renderFourLetterWord("envi", { ...standalone(), serving: false }), expected);
});

test("wchs prints the watch summary and a newline", () => {
  assert.equal(renderFourLetterWord("wchs", standalone()), "2 connections watching 3 paths\nTotal watches:4\n");
});

test("isro answers rw, ro, or null when not serving, without a newline", () => {
  assert.equal(renderFourLetterWord("isro", standalone()), "rw");
  assert.equal(renderFourLetterWord("isro", { ...standalone(), readOnly: true }), "ro");
  assert.equal(renderFourLetterWord("isro", { ...standalone(), serving: false }), "null");
});

test("srvr, stat, mntr, conf, cons and wchs answer ZooKeeper's not-serving text when not serving", () => {
  const context = { ...standalone(), serving: false };
  for (const word of ["srvr", "stat", "mntr", "conf", "cons", "wchs"] as const) {
    assert.equal(renderFourLetterWord(word, context), "This ZooKeeper instance is not currently serving requests\n", word);
  }
});

test("ruok answers imok even when not serving", () => {
  assert.equal(renderFourLetterWord("ruok", { ...standalone(), serving: false }), "imok");
});

// ---- version and number formats ------------------------------------------------------------

test("the version string has ZooKeeper's full-version shape with a 3.8 version first", () => {
  const version = zookeeperFullVersion("0.1.0", new Date(Date.UTC(2026, 10, 22, 14, 5)));
  assert.equal(version, "3.8.0-corral-0.1.0, built on 2026-11-22 14:05 UTC");
  assert.match(version, /^3\.8\.\d+-[^,]+, built on \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
});

test("averages print as Java doubles", () => {
  assert.equal(javaDoubleToString(0), "0.0");
  assert.equal(javaDoubleToString(2), "2.0");
  assert.equal(javaDoubleToString(1.2345), "1.2345");
  assert.equal(javaDoubleToString(12345678), "1.2345678E7");
  assert.equal(javaDoubleToString(0.0001), "1.0E-4");
});

test("version sniffers reading envi find 3.8.0 (^zookeeper.version=(\\d+\\.\\d+\\.\\d+) and split on '-' before ',')", () => {
  const context = { ...standalone(), version: zookeeperFullVersion("0.1.0", new Date(Date.UTC(2026, 0, 2, 3, 4))) };
  const line = renderFourLetterWord("envi", context)
    .split("\n")
    .find((l) => l.startsWith("zookeeper.version="));
  assert.equal(/^zookeeper\.version=(\d+\.\d+\.\d+)/.exec(line ?? "")?.[1], "3.8.0");
  assert.equal(/zookeeper\.version=(.*),/.exec(line ?? "")?.[1]?.split("-")[0], "3.8.0");
  assert.match(renderFourLetterWord("srvr", context), /^Zookeeper version: 3\.8\.0-/);
});
