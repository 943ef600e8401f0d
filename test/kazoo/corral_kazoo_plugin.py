"""pytest plugin: run kazoo's own test suite against an external ZooKeeper-protocol server.

kazoo's harness (kazoo.testing.harness.get_global_cluster) always launches a ZooKeeper of its
own. Loaded with ``-p corral_kazoo_plugin`` (this directory on PYTHONPATH), this plugin replaces
that cluster with the servers named by CORRAL_KAZOO_HOSTS, a connect string without chroot
("127.0.0.1:2281" or "127.0.0.1:2281,127.0.0.1:2282,127.0.0.1:2283"), so that
KazooTestHarness.servers is exactly that string. The servers are someone else's to start and stop.

kazoo's tests stop and restart servers of the ensemble (ManagedZooKeeper.stop / run): here those
ask the runner to do it to its corral processes (CORRAL_KAZOO_CONTROL).

SKIPS is the one list of kazoo tests not run against corral, each with its reason: only tests
that need what corral does not serve (reconfig), or more servers than a standalone target
has. Their skip reasons start with SKIP_PREFIX so that the runner
(test/kazoo/kazoo.test.ts) can tell them from the skips kazoo decides itself.
"""
import os
import socket
import sys
import time
import urllib.request

import pytest

HOSTS_ENV = "CORRAL_KAZOO_HOSTS"
CONTROL_ENV = "CORRAL_KAZOO_CONTROL"
SKIP_PREFIX = "corral-skip: "


class OnlyStandalone(str):
    """A skip reason that applies only when CORRAL_KAZOO_HOSTS names a single server."""


_NEEDS_A_SECOND_SERVER = OnlyStandalone(
    "stops the client's server and expects it connected to another of the ensemble within 5 s: "
    "a standalone target has no other server (run against the three-voter cluster)"
)
_RECONFIG = OnlyStandalone(
    "reconfig: a standalone server cannot be reconfigured (ZooKeeper's answers UNIMPLEMENTED too); "
    "run against the three-voter cluster"
)

class ClientRace(str):
    """Why a kazoo test can fail on the client's side alone: its failure says `signature` at once."""

    def __new__(cls, reason, signature, seconds_max):
        race = str.__new__(cls, reason)
        race.signature = signature
        race.seconds_max = seconds_max
        return race


_START_RACE = ClientRace(
    "KazooClient.start() waits for CONNECTED, which kazoo sets before its SASL exchange: when the "
    "server's AUTHFAILED is read before start() looks again, start() finds the client no longer "
    "connected and raises KazooTimeoutError('Connection time-out') at once instead of letting the "
    "AuthFailedError the test expects surface (17 of 300 such starts against one loaded corral)",
    signature="KazooTimeoutError: Connection time-out",
    # A real time-out takes start()'s 15 s; the race fails in well under a second.
    seconds_max=5.0,
)

# kazoo tests that race in kazoo's own client on a loaded machine, whatever the server: a failure
# that matches the race's signature is run once more, and the JUnit XML says so (a property named
# corral-rerun), so that a race is visible and anything else still fails.
CLIENT_RACES = {
    "kazoo/tests/test_sasl.py::TestLegacySASLDigestAuthentication::test_invalid_sasl_auth": _START_RACE,
    "kazoo/tests/test_sasl.py::TestSASLDigestAuthentication::test_invalid_sasl_auth": _START_RACE,
}

# Node ids as "kazoo/tests/<file>::<class>::<test>", whatever pytest's rootdir.
SKIPS = {
    # Reconfig (ZooKeeper's dynamic reconfiguration).
    "kazoo/tests/test_client.py::TestReconfig::test_no_super_auth": _RECONFIG,
    "kazoo/tests/test_client.py::TestReconfig::test_add_remove_observer": _RECONFIG,
    "kazoo/tests/test_client.py::TestReconfig::test_bad_input": _RECONFIG,
    # Read-only mode: stops two of three servers and expects the third to serve reads read-only.
    "kazoo/tests/test_connection.py::TestReadOnlyMode::test_read_only": OnlyStandalone(
        "stops servers 1 and 2 of the ensemble and expects server 0 to serve read-only: a standalone "
        "target has no other server (run against the three-voter cluster)"
    ),
    # Fail-over to another server of the ensemble, once per handler that runs TestClient.
    "kazoo/tests/test_client.py::TestClient::test_update_host_list": _NEEDS_A_SECOND_SERVER,
    "kazoo/tests/test_gevent_handler.py::TestGeventClient::test_update_host_list": _NEEDS_A_SECOND_SERVER,
    "kazoo/tests/test_eventlet_handler.py::TestEventletClient::test_update_host_list": _NEEDS_A_SECOND_SERVER,
}


class ExternalServer(object):
    """One server of the external ensemble, shaped like kazoo.testing.common.ManagedZooKeeper.

    stop() and run() ask the runner (CORRAL_KAZOO_CONTROL, an http://127.0.0.1:port URL) to stop
    the server process or start it again; both return once that is done, run() once the server
    serves in its quorum again (srvr; at most 30 s). Without CORRAL_KAZOO_CONTROL the servers
    cannot be stopped and a test that tries fails.
    """

    def __init__(self, index, address):
        self.index = index
        self.address = address
        self.host, _, port = address.rpartition(":")
        self.client_port = int(port)
        self.running = True

    def _control(self, action):
        url = os.environ.get(CONTROL_ENV)
        if not url:
            raise RuntimeError(
                "%s is an external server and %s is not set: kazoo's tests cannot %s it"
                % (self.address, CONTROL_ENV, action))
        request = urllib.request.Request("%s/servers/%d/%s" % (url, self.index, action), data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=120) as response:
            state = response.read().decode().strip()
        self.running = state == "running"

    def run(self):
        if not self.running:
            self._control("run")
            # A restarted member has the tree of its last snapshot until it has synced with the
            # leader (ZooKeeper's replays its log): a test that stops the others at once must find
            # it synced (TestReadOnlyMode), as ZooKeeper's harness gives its servers a moment.
            # Rejoining can take a few seconds at tickTime 2000: the others' election links back
            # off while it is down.
            self.wait_serving()

    def stop(self):
        if self.running:
            self._control("stop")

    def wait_serving(self, limit_s=30.0):
        """Until srvr shows the server in a quorum again (not read-only), or `limit_s` passes."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((self.host, self.client_port), timeout=2) as sock:
                    sock.sendall(b"srvr")
                    answer = b""
                    while True:
                        chunk = sock.recv(4096)
                        if not chunk:
                            break
                        answer += chunk
                # Read-only is not joined: a restarted server that has not reached its quorum yet
                # turns read-only after 2 s, serving the tree of its last snapshot.
                if b"Mode: " in answer and b"Mode: read-only" not in answer:
                    return
            except OSError:
                pass
            time.sleep(0.05)

    def _not_ours(self, *args, **kwargs):
        raise RuntimeError("%s is an external server: kazoo's tests cannot reset or destroy its data" % self.address)

    reset = destroy = _not_ours


class ExternalCluster(object):
    """The external ensemble, shaped like kazoo.testing.common.ZookeeperCluster."""

    def __init__(self, hosts):
        self._servers = [ExternalServer(i, h) for i, h in enumerate(h.strip() for h in hosts.split(",") if h.strip())]
        if not self._servers:
            raise pytest.UsageError("%s names no server" % HOSTS_ENV)

    def __getitem__(self, k):
        return self._servers[k]

    def __iter__(self):
        return iter(self._servers)

    def __len__(self):
        return len(self._servers)

    def start(self):
        # In reverse order, as kazoo's ZookeeperCluster.start (its 2 s "moment to start" is each
        # run()'s wait here).
        for server in reversed(self._servers):
            server.run()

    def stop(self):
        for server in self._servers:
            server.stop()

    def reset(self):
        self._servers[0].reset()

    def terminate(self):
        pass


_cluster = None
_original = None


def _external_cluster():
    return _cluster


def _patch_everywhere():
    """Replace get_global_cluster in kazoo.testing.harness and in every module that imported it by name."""
    for name, module in list(sys.modules.items()):
        if module is None:
            continue
        if getattr(module, "get_global_cluster", None) is _original:
            setattr(module, "get_global_cluster", _external_cluster)


def pytest_configure(config):
    global _cluster, _original
    hosts = os.environ.get(HOSTS_ENV, "")
    if "/" in hosts:
        raise pytest.UsageError("%s must be a connect string without chroot, got %r" % (HOSTS_ENV, hosts))
    _cluster = ExternalCluster(hosts)
    import kazoo.testing.harness as harness

    if _original is None:
        _original = harness.get_global_cluster
    _patch_everywhere()


def _kazoo_node_id(item):
    """The item's node id as kazoo/tests/<file>::..., independent of pytest's rootdir."""
    path = str(item.path)
    marker = os.sep + "kazoo" + os.sep + "tests" + os.sep
    at = path.rfind(marker)
    if at < 0:
        return item.nodeid
    relative = "kazoo/tests/" + path[at + len(marker):].replace(os.sep, "/")
    rest = item.nodeid.split("::", 1)
    return relative + ("::" + rest[1] if len(rest) > 1 else "")


def pytest_collection_modifyitems(session, config, items):
    # Test modules are imported by now: patch any that imported get_global_cluster by name.
    _patch_everywhere()
    seen = set()
    for item in items:
        node_id = _kazoo_node_id(item)
        reason = SKIPS.get(node_id)
        if reason is not None:
            seen.add(node_id)
            if isinstance(reason, OnlyStandalone) and len(_cluster) > 1:
                continue
            item.add_marker(pytest.mark.skip(reason=SKIP_PREFIX + reason))
    # A name that no longer matches a test is a stale list, not a silent pass (checked when the
    # whole suite runs: the runner sets CORRAL_KAZOO_WHOLE_SUITE).
    if os.environ.get("CORRAL_KAZOO_WHOLE_SUITE") == "1":
        stale = sorted(set(SKIPS) - seen)
        if stale:
            raise pytest.UsageError("corral_kazoo_plugin.SKIPS names tests that were not collected: %s" % ", ".join(stale))


def pytest_runtest_setup(item):
    _patch_everywhere()


def _lost_the_race(reports, race):
    """Whether the test's call failed as `race` fails, and only that way."""
    calls = [r for r in reports if r.when == "call"]
    others_failed = any(r.failed for r in reports if r.when != "call")
    if others_failed or len(calls) != 1 or not calls[0].failed:
        return False
    return race.signature in str(calls[0].longrepr) and calls[0].duration < race.seconds_max


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    race = CLIENT_RACES.get(_kazoo_node_id(item))
    if race is None:
        return None
    from _pytest.runner import runtestprotocol

    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    if _lost_the_race(reports, race):
        item.user_properties.append(("corral-rerun", "kazoo's client race: " + race))
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
