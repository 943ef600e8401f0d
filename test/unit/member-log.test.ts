import assert from "node:assert/strict";
import { test } from "node:test";
import { summarizeMemberLogLine } from "../../src/cli/member-log.js";

const line = (fields: Record<string, unknown>) => JSON.stringify({ level: 30, time: 1, pid: 7, hostname: "h", serverId: 2, ...fields });

test("role changes and serving are one readable line each", () => {
  assert.deepEqual(summarizeMemberLogLine(line({ msg: "role changed", role: "following", leader: 3 })), { text: "now following 3", severe: false });
  assert.deepEqual(summarizeMemberLogLine(line({ msg: "role changed", role: "looking", reason: "start" })), { text: "now looking (start)", severe: false });
  assert.deepEqual(summarizeMemberLogLine(line({ msg: "serving clients", role: "leading", epoch: 4, lastZxid: "0x400000000" })), {
    text: "serving clients as leading, epoch 4, last zxid 0x400000000",
    severe: false,
  });
});

test("warnings and errors reach the terminal with their fields, on stderr", () => {
  assert.deepEqual(summarizeMemberLogLine(line({ level: 40, msg: "zab stepped down", reason: "lost quorum", role: "leading" })), {
    text: "warning: zab stepped down (reason=lost quorum role=leading)",
    severe: true,
  });
  assert.deepEqual(summarizeMemberLogLine(line({ level: 60, msg: "a durable write failed", err: { message: "EIO", stack: "…" } })), {
    text: 'fatal: a durable write failed (err="EIO")',
    severe: true,
  });
});

test("other info lines stay in server.log; what is not a log line (a stack trace) is shown as it is", () => {
  assert.equal(summarizeMemberLogLine(line({ msg: "learner connected", address: "x" })), undefined);
  assert.equal(summarizeMemberLogLine(""), undefined);
  assert.deepEqual(summarizeMemberLogLine("    at Object.<anonymous> (file.js:1:1)"), { text: "    at Object.<anonymous> (file.js:1:1)", severe: false });
});
