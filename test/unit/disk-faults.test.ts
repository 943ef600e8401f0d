/**
 * The test-only disk fault switch: CORRAL_TEST_DISK_FAULT's syntax (a table of valid and invalid
 * values), which write of which kind each rule fails, and the boundary helper that turns a rule
 * into a rejected write shaped like LevelDB's I/O error.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError } from "../../src/server/config-error.js";
import { DISK_FAULT_ENV, DiskFaultPlan, diskFaultPlanFromEnv, parseDiskFaultSpec, type DiskFaultRule } from "../../src/server/disk-faults.js";
import { type DiskWriteKind, InjectedWriteFault, injectedFaultFor, writeWithFaults } from "../../src/store/disk/faults.js";

const VALID: [string, DiskFaultRule[]][] = [
  ["append:3", [{ target: "append", nth: 3, timing: "beforeWrite" }]],
  ["epoch", [{ target: "epoch", nth: 1, timing: "beforeWrite" }]],
  ["epoch:after", [{ target: "epoch", nth: 1, timing: "afterWrite" }]],
  ["append:5:after", [{ target: "append", nth: 5, timing: "afterWrite" }]],
  ["append:2:before", [{ target: "append", nth: 2, timing: "beforeWrite" }]],
  [
    "truncate, purge:2 ,snapshot:1:after",
    [
      { target: "truncate", nth: 1, timing: "beforeWrite" },
      { target: "purge", nth: 2, timing: "beforeWrite" },
      { target: "snapshot", nth: 1, timing: "afterWrite" },
    ],
  ],
];

for (const [spec, rules] of VALID) {
  test(`"${spec}" parses`, () => {
    assert.deepEqual(parseDiskFaultSpec(spec), rules);
  });
}

const INVALID = [
  "disk",
  "append:0",
  "append:-1",
  "append:x",
  "append:1:later",
  "append:1:after:2",
  "append:",
  ":3",
  "append,,epoch",
  "APPEND:1",
  "append:1.5",
  "append:99999999",
];

for (const spec of INVALID) {
  test(`"${spec}" is refused with a ConfigError naming the variable`, () => {
    assert.throws(
      () => parseDiskFaultSpec(spec),
      (error: unknown) => error instanceof ConfigError && error.field === DISK_FAULT_ENV,
    );
  });
}

test("too many rules are refused", () => {
  assert.throws(() => parseDiskFaultSpec(Array.from({ length: 17 }, () => "append").join(",")), ConfigError);
});

test("a plan fails exactly the n-th write of its kind, once, and counts each kind on its own", () => {
  const plan = DiskFaultPlan.parse("append:3,epoch:2:after");
  const asked = (kind: DiskWriteKind) => plan.failWrite(kind);
  assert.equal(asked("append"), false);
  assert.equal(asked("stable"), false, "epoch writes are the log's stable writes");
  assert.equal(asked("truncate"), false, "other kinds do not count toward append");
  assert.equal(asked("append"), false);
  assert.equal(asked("append"), "beforeWrite", "the third append");
  assert.equal(asked("append"), false, "a rule fires once");
  assert.equal(asked("stable"), "afterWrite", "the second epoch write");
  for (let i = 0; i < 10; i++) for (const kind of ["append", "stable", "truncate", "purge", "snapshot"] as const) assert.equal(asked(kind), false);
});

test("two rules on one kind each fire at their own count", () => {
  const plan = DiskFaultPlan.parse("append:1,append:3");
  assert.deepEqual(
    [1, 2, 3, 4].map(() => plan.failWrite("append")),
    ["beforeWrite", false, "beforeWrite", false],
  );
});

test("the variable unset or blank arms nothing; set, it arms its plan", () => {
  assert.equal(diskFaultPlanFromEnv({}), undefined);
  assert.equal(diskFaultPlanFromEnv({ [DISK_FAULT_ENV]: "" }), undefined);
  assert.equal(diskFaultPlanFromEnv({ [DISK_FAULT_ENV]: "  " }), undefined);
  const plan = diskFaultPlanFromEnv({ [DISK_FAULT_ENV]: " epoch " });
  assert.ok(plan);
  assert.equal(plan.spec, "epoch");
  assert.equal(plan.failWrite("stable"), "beforeWrite");
  assert.throws(() => diskFaultPlanFromEnv({ [DISK_FAULT_ENV]: "nonsense" }), ConfigError);
});

test("injectedFaultFor normalises the hook's answer (true means beforeWrite)", () => {
  assert.equal(injectedFaultFor(undefined, "append"), undefined);
  assert.equal(injectedFaultFor({}, "append"), undefined);
  assert.equal(injectedFaultFor({ failWrite: () => false }, "append"), undefined);
  assert.equal(injectedFaultFor({ failWrite: () => true }, "append"), "beforeWrite");
  assert.equal(injectedFaultFor({ failWrite: () => "afterWrite" }, "append"), "afterWrite");
});

test("writeWithFaults: no fault runs the write; beforeWrite rejects without it; afterWrite runs it, then rejects", async () => {
  let runs = 0;
  const run = () => {
    runs += 1;
    return Promise.resolve();
  };
  await writeWithFaults(undefined, "append", run);
  assert.equal(runs, 1);
  await assert.rejects(writeWithFaults({ failWrite: () => true }, "append", run), InjectedWriteFault);
  assert.equal(runs, 1, "beforeWrite: the write never ran");
  await assert.rejects(writeWithFaults({ failWrite: () => "afterWrite" }, "stable", run), InjectedWriteFault);
  assert.equal(runs, 2, "afterWrite: the write ran");
  // A real error of the write itself passes through untouched.
  const real = new Error("IO error: disk on fire");
  await assert.rejects(
    writeWithFaults({}, "append", () => Promise.reject(real)),
    (error: unknown) => error === real,
  );
});

test("an injected fault looks like the real error at its boundary", () => {
  const log = new InjectedWriteFault("append", "beforeWrite");
  assert.equal(log.code, "LEVEL_IO_ERROR", "classic-level's code for an I/O error");
  assert.match(log.message, /^IO error: /, "LevelDB's Status::IOError text");
  assert.ok(log instanceof Error && log.injected);
  const file = new InjectedWriteFault("snapshot", "afterWrite");
  assert.equal(file.code, "EIO");
  assert.match(file.message, /^EIO: i\/o error, fsync/, "Node's fs error text");
});
