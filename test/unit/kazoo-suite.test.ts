/**
 * How the kazoo gate (test/helpers/kazoo-suite.ts) reads pytest's JUnit XML and judges it: every
 * failure and error fails the run, and so does any skip that is neither the plugin's named list
 * nor one of the environment skips kazoo decides itself.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import {
  collapseRepeatedLines,
  countOutcomes,
  failedCaseDetails,
  kazooPython,
  parseJunit,
  PLUGIN_DIR,
  pytestWithPlugin,
  skipOrigin,
  verdict,
} from "../helpers/kazoo-suite.js";
import { makeTempDir } from "../helpers/temp-dir.js";

const XML = `<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="1" skipped="3" tests="7">
<testcase classname="kazoo.tests.test_barrier.KazooBarrierTests" name="test_barrier_exists" file="kazoo/tests/test_barrier.py" line="10" time="0.012" />
<testcase classname="kazoo.tests.test_client.TestClient" name="test_create" file="kazoo/tests/test_client.py" line="500" time="0.2"><failure message="AssertionError: assert b&apos;&apos; == b&quot;x&quot; &amp; more">Traceback
AssertionError</failure></testcase>
<testcase classname="kazoo.tests.test_lock.KazooLockTests" name="test_lock" file="kazoo/tests/test_lock.py" line="40" time="1.5"><error message="failed on teardown with &quot;Exception: boom&quot;">teardown</error></testcase>
<testcase classname="kazoo.tests.test_client.TestReconfig" name="test_bad_input" file="kazoo/tests/test_client.py" line="1430" time="0.000"><skipped type="pytest.skip" message="corral-skip: reconfig: not served">/usr/lib/python3/dist-packages/kazoo/tests/test_client.py:1430: corral-skip: reconfig: not served</skipped></testcase>
<testcase classname="kazoo.tests.test_build.TestBuildEnvironment" name="test_zookeeper_version" file="kazoo/tests/test_build.py" line="9" time="0.1"><skipped type="pytest.skip" message="Only run build config tests on Travis.">test_build.py:12: Only run build config tests on Travis.</skipped></testcase>
<testcase classname="kazoo.tests.test_queue.KazooLockingQueueTests" name="test_queue_validation" file="kazoo/tests/test_queue.py" line="60" time="0.1"><skipped type="pytest.skip" message="Must use Zookeeper 3.4 or above">test_queue.py:71: Must use Zookeeper 3.4 or above</skipped></testcase>
<testcase classname="test_paths.PathTestCase" name="test_join" time="0.001"></testcase>
</testsuite></testsuites>`;

test("JUnit test cases become kazoo node ids with one outcome each; a teardown error is an error", () => {
  const cases = parseJunit(XML);
  assert.deepEqual(
    cases.map((c) => [c.id, c.outcome]),
    [
      ["kazoo/tests/test_barrier.py::KazooBarrierTests::test_barrier_exists", "passed"],
      ["kazoo/tests/test_client.py::TestClient::test_create", "failed"],
      ["kazoo/tests/test_lock.py::KazooLockTests::test_lock", "error"],
      ["kazoo/tests/test_client.py::TestReconfig::test_bad_input", "skipped"],
      ["kazoo/tests/test_build.py::TestBuildEnvironment::test_zookeeper_version", "skipped"],
      ["kazoo/tests/test_queue.py::KazooLockingQueueTests::test_queue_validation", "skipped"],
      ["test_paths.py::PathTestCase::test_join", "passed"],
    ],
  );
  assert.equal(cases[1]!.message, `AssertionError: assert b'' == b"x" & more`);
  assert.equal(cases[1]!.seconds, 0.2);
  assert.deepEqual(countOutcomes(cases), { passed: 2, failed: 1, error: 1, skipped: 3 });
});

test("a skip is the plugin's (its prefix), kazoo's own for its environment, or unexpected (a version gate is not accepted)", () => {
  assert.equal(skipOrigin("corral-skip: reconfig: not served"), "plugin");
  assert.equal(skipOrigin("Only run build config tests on Travis."), "kazoo");
  assert.equal(skipOrigin("Test Kerberos environ not setup."), "kazoo");
  assert.equal(skipOrigin("Must use Zookeeper 3.5 or above"), "unexpected");
  assert.equal(skipOrigin("gevent not available."), "unexpected");
});

test("the verdict names every failure, error and unexpected skip; a clean report passes only with pytest's exit code 0", () => {
  assert.deepEqual(
    verdict({ cases: parseJunit(XML), exitCode: 1 }).map((line) => line.split(":")[0]),
    ["failed", "error", "skipped, neither on the plugin's list nor one of kazoo's own"],
  );
  const clean = parseJunit(XML).filter((c) => c.outcome === "passed" || skipOrigin(c.message) !== "unexpected");
  const passing = clean.filter((c) => c.outcome !== "failed" && c.outcome !== "error");
  assert.deepEqual(verdict({ cases: passing, exitCode: 0 }), []);
  assert.match(verdict({ cases: passing, exitCode: 2 })[0]!, /exited with code 2/);
  assert.match(verdict({ cases: passing, exitCode: null })[0]!, /exited with code null/);
  assert.match(verdict({ cases: passing, exitCode: 1 })[0]!, /no failure/);
  assert.match(verdict({ cases: [], exitCode: 0 })[0]!, /no test case/);
  assert.match(verdict({ cases: passing, exitCode: null, timedOut: true })[0]!, /did not finish in time/);
});

test("a failed case's report carries its traceback and captured log, with repeated lines written once and counted", () => {
  const xml = `<testsuite><testcase classname="kazoo.tests.test_sasl.TestLegacySASLDigestAuthentication" name="test_invalid_sasl_auth" time="15.2"><failure message="KazooTimeoutError: Connection time-out">Traceback
kazoo.handlers.threading.KazooTimeoutError: Connection time-out</failure><system-err>--- Captured log ---
23:01:02.003 kazoo.client WARNING Connection dropped: socket connection broken
23:01:02.004 kazoo.client WARNING Connection dropped: socket connection broken
23:01:03.500 kazoo.client WARNING Connection dropped: socket connection broken
23:01:05.100 kazoo.client WARNING Connection time-out: &lt;timeout&gt;</system-err></testcase>
<testcase classname="kazoo.tests.test_paths.PathTestCase" name="test_join" time="0.001"></testcase></testsuite>`;
  const cases = parseJunit(xml);
  assert.equal(cases[1]!.detail, undefined, "a passed case has none");
  const details = failedCaseDetails({ cases });
  assert.match(details, /^--- failed: kazoo\/tests\/test_sasl.py::TestLegacySASLDigestAuthentication::test_invalid_sasl_auth \(15.2 s\) ---/);
  assert.match(details, /KazooTimeoutError: Connection time-out/);
  assert.match(
    details,
    /23:01:02.003 kazoo.client WARNING Connection dropped: socket connection broken {3}\(× 3\)\n23:01:05.100 kazoo.client WARNING Connection time-out: <timeout>/,
  );
  assert.equal(collapseRepeatedLines("a\na\nb\na"), "a   (× 2)\nb\na");
});

test("the plugin runs a test on its client-race list once more when it fails as the race does, and says so; other failures stand", async () => {
  const dir = await makeTempDir("corral-kazoo-race-");
  try {
    const tests = join(dir.path, "kazoo", "tests");
    await mkdir(tests, { recursive: true });
    await writeFile(
      join(tests, "conftest.py"),
      [
        "import corral_kazoo_plugin as plugin",
        'for name in ("test_loses_the_race_once", "test_fails_otherwise"):',
        '    plugin.CLIENT_RACES["kazoo/tests/test_races.py::" + name] = plugin._START_RACE',
      ].join("\n"),
    );
    await writeFile(
      join(tests, "test_races.py"),
      [
        "import os",
        "from kazoo.handlers.threading import KazooTimeoutError",
        'MARK = os.path.join(os.path.dirname(__file__), "lost-once")',
        "def test_loses_the_race_once():",
        "    if not os.path.exists(MARK):",
        '        open(MARK, "w").close()',
        '        raise KazooTimeoutError("Connection time-out")',
        "def test_fails_otherwise():",
        '    assert False, "not the race"',
        "def test_not_on_the_list():",
        '    raise KazooTimeoutError("Connection time-out")',
      ].join("\n"),
    );
    const junit = join(dir.path, "junit.xml");
    const python = kazooPython();
    const args = [...pytestWithPlugin(dir.path, junit), tests];
    const env = { ...process.env, PYTHONPATH: PLUGIN_DIR, PYTHONDONTWRITEBYTECODE: "1", CORRAL_KAZOO_HOSTS: "127.0.0.1:1" };
    await new Promise<void>((resolve, reject) => {
      execFile(python, args, { cwd: dir.path, env }, (error, stdout) => {
        // pytest's exit code 1: some tests failed, as two of these do.
        if (error === null || error.code === 1) resolve();
        else reject(new Error(`pytest did not run the tests (${error.message}): ${stdout}`));
      });
    });
    const cases = parseJunit(await readFile(junit, "utf8"));
    assert.deepEqual(
      cases.map((c) => [c.id.split("::")[1], c.outcome, c.rerun !== undefined]),
      [
        ["test_loses_the_race_once", "passed", true],
        ["test_fails_otherwise", "failed", false],
        ["test_not_on_the_list", "failed", false],
      ],
    );
    assert.match(cases[0]!.rerun!, /^kazoo's client race: KazooClient.start\(\) waits for CONNECTED/);
  } finally {
    await dir.remove();
  }
});
