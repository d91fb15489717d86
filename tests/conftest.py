"""Fixtures of every test folder; helpers live in tests/support (tests import those, never this file).

The folders say what a test needs:
  unit/         pure code, nothing started
  component/    real processes the test starts itself: slapd, a hub with the mock Slurm, kernels, notebooks
  integration/  the real dev cluster (deploy/devcluster up): marker `integration`
  browser/      the dev cluster in real Chromium: markers `integration` and `browser`
  perf/         benchmarks, run by `deploy/devcluster bench` (print numbers, assert no speed)
  soak/         the soak, run by `deploy/devcluster soak` (a short one: integration/test_soak.py)

Fixtures:
mock_slurm     a MockSlurm: fake sbatch/squeue/scancel (+ sudo stand-in) in a temp bin folder
a_home         a temp folder that stands for a user's home directory
portal_yaml    the text of a valid admin config that uses the mock Slurm
a_config_file  that text written to a temp portal.yaml
a_spawner      a SlurmGPUSpawner for user alice, wired to the mock Slurm and a_home
a_spawner_quick_to_give_up  the same, its Slurm commands hung after 2 s (the portal's 20 s elsewhere)
a_web_server   a FakeJupyter: answers HTTP and the readiness proof on a loopback port (stands for JupyterLab)
a_hub_and_its_slurm  a real JupyterHub + proxy on loopback with its own mock Slurm (per module)
a_slapd        Debian's slapd with the demo directory on a loopback port (per session)
a_hung_server  a socket that accepts and never answers; a_refusing_uri: nothing listens
a_fake_runtime a stand-in apptainer first on PATH (tests/support/fakeruntime.py)
cluster_api    the dev cluster's hub API with the admin token (per session); cluster: the same, cleaned per test
               (a failure's report shows the hub's log meanwhile)
chromium       Debian's Chromium via Playwright, trusting the dev portal's certificate (per session)
browser        that Chromium for one test: any console error or failed request no test provoked fails it
(autouse)      the hub process's Slurm command gate is open after every test: a test that shut it would leave
               every later in-process Slurm command of the run waiting forever
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from tests.support import a11y, hublog, notebooks
from tests.support import browser as browser_support
from tests.support.cluster import HUB, TOKEN_FILE, Cluster
from tests.support.fakeruntime import FakeRuntime
from tests.support.http import FakeJupyter, free_port
from tests.support.mockslurm import MockSlurm, config_data, spawner_for
from tests.support.slapd import Slapd

TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items):
    for item in items:
        kind = Path(str(item.fspath)).relative_to(TESTS).parts[0]
        if kind in ("integration", "browser"):
            item.add_marker(pytest.mark.integration)
        if kind == "browser":
            item.add_marker(pytest.mark.browser)


@pytest.fixture
def mock_slurm(tmp_path) -> MockSlurm:
    return MockSlurm(tmp_path / "mockslurm")


@pytest.fixture
def a_web_server():
    """A stand-in for a session's JupyterLab on a loopback port: .port, and .token (alice's, until a test sets
    another) with which it answers the hub's readiness check."""
    server = FakeJupyter("alice-server-token")
    yield server
    server.stop()


@pytest.fixture
def a_home(tmp_path) -> Path:
    home = tmp_path / "home" / "alice"
    home.mkdir(parents=True)
    return home


@pytest.fixture
def portal_yaml(mock_slurm) -> str:
    return yaml.safe_dump(config_data(mock_slurm), sort_keys=False)


@pytest.fixture
def a_config_file(tmp_path, portal_yaml) -> Path:
    path = tmp_path / "portal.yaml"
    path.write_text(portal_yaml)
    return path


@pytest.fixture
def a_spawner(a_config_file, a_home):
    return spawner_for("alice", a_config_file, a_home, startup_poll_interval=0.05, stop_timeout=5)


@pytest.fixture
def a_spawner_quick_to_give_up(mock_slurm, tmp_path, a_home):
    """a_spawner whose Slurm commands count as hung after 2 s: the tests of a Slurm that does not answer."""
    path = tmp_path / "portal-quick.yaml"
    path.write_text(yaml.safe_dump(config_data(mock_slurm, command_timeout=2), sort_keys=False))
    return spawner_for("alice", path, a_home, startup_poll_interval=0.05, stop_timeout=5)


@pytest.fixture(scope="module")
def a_hub_and_its_slurm(tmp_path_factory):
    """A real JupyterHub + proxy on loopback, with the portal config and its own mock Slurm.

    Module-scoped: a hub takes seconds to start; tests that share it look at
    what changed, not at totals.
    """
    from tests.support.hub import hub_with_mock_slurm

    with hub_with_mock_slurm(tmp_path_factory.mktemp("hub")) as hub_and_slurm:
        yield hub_and_slurm


@pytest.fixture(scope="session")
def a_slapd(tmp_path_factory):
    """Debian's slapd on a loopback port with the demo directory (people, groups, a service account)."""
    slapd = Slapd(tmp_path_factory.mktemp("slapd"))
    slapd.start()
    yield slapd
    slapd.stop()


@pytest.fixture
def a_hung_server():
    """A loopback socket that accepts connections and never answers; yields .uri and .accepted (a list)."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held, stop = [], threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield SimpleNamespace(uri=f"ldap://127.0.0.1:{server.getsockname()[1]}", accepted=held)
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


@pytest.fixture
def a_refusing_uri():
    """A loopback URI where nothing listens (connection refused)."""
    return f"ldap://127.0.0.1:{free_port()}"


@pytest.fixture
def a_fake_runtime(tmp_path, monkeypatch) -> FakeRuntime:
    """A stand-in `apptainer` first on PATH."""
    runtime = FakeRuntime(tmp_path / "runtime")
    monkeypatch.setenv("PATH", f"{runtime.bin}:{os.environ['PATH']}")
    return runtime


# --- the dev cluster ---------------------------------------------------------------------
@pytest.fixture(scope="session")
def cluster_api() -> Cluster:
    assert TOKEN_FILE.exists(), "the dev cluster is not set up: run `deploy/devcluster up` (as root) first"
    cluster = Cluster(TOKEN_FILE.read_text().strip())
    try:
        status, _ = cluster.request("GET", "/hub/api/")
    except OSError as e:
        pytest.fail(f"the portal does not answer on {HUB} ({e}); run `deploy/devcluster up` first")
    assert status == 200
    return cluster


@pytest.fixture
def cluster(cluster_api, request) -> Cluster:
    cluster_api.clean()
    request.node.hub_log_from = hublog.mark()  # a failure's report shows what the hub logged meanwhile
    yield cluster_api
    cluster_api.clean()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test of the dev cluster reports what the hub logged while it ran (its warnings, errors, sessions
    stopped and routes changed): what a CI log keeps of a failure that one run in twenty shows."""
    report = yield
    offset = getattr(item, "hub_log_from", None)
    if report.failed and offset is not None and report.when in ("call", "teardown"):
        try:
            text = hublog.notable(hublog.since(offset))
        except OSError as e:
            text = f"(the hub log could not be read: {e})"
        report.sections.append(("the hub's log while the test ran (tests/support/hublog.py notable)", text))
    return report


@pytest.fixture(scope="session")
def chromium():
    """Debian's Chromium, headless, trusting the dev portal's certificate (Playwright drives it)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(**browser_support.launch_options())
        yield browser
        browser.close()


@pytest.fixture
def browser(chromium):
    """That Chromium for one test: a console error, page error or failed request (4xx/5xx) in any of its
    contexts fails the test, unless the test names it with browser.allow(url, *statuses, why=...)."""
    watched = browser_support.WatchedBrowser(chromium)
    yield watched
    watched.close()
    problems = watched.problems.found
    assert not problems, "the pages had problems no test provoked:\n" + "\n".join(problems)


def pytest_terminal_summary(terminalreporter):
    """How long the template notebooks took, and where the browser test's screenshots are."""
    if browser_support.SHOTS:
        index = browser_support.write_gallery()
        terminalreporter.write_line(f"screenshots ({len(browser_support.SHOTS)}), each with what it shows: {index}")
        report = a11y.write_report(browser_support.ARTIFACTS)
        terminalreporter.write_line(f"axe-core's moderate and minor findings ({len(a11y.FOUND)}): {report}")
    if notebooks.TIMINGS:
        total = sum(notebooks.TIMINGS.values())
        terminalreporter.write_line(
            "notebooks: "
            + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(notebooks.TIMINGS.items()))
            + f"; total {total:.1f} s"
        )


@pytest.fixture(autouse=True)
def _slurm_gate_left_open():
    """Fails the test that shut this process's Slurm command gate (spawner/hub/slurm/client.py STARTS)."""
    yield
    from spawner.hub.slurm.client import STARTS

    assert not STARTS.shut, "this test shut the process's Slurm command gate: give shutdown.install a CommandStarts()"
