"""Shared fixtures.

mock_slurm     a MockSlurm: fake sbatch/squeue/scancel (+ sudo stand-in) in a temp bin folder
a_home         a temp folder that stands for a user's home directory
portal_yaml    the text of a valid admin config that uses the mock Slurm
a_config_file  that text written to a temp portal.yaml
a_spawner      a SlurmGPUSpawner for user alice, wired to the mock Slurm and a_home
a_web_server   something answering HTTP on a loopback port (stands for JupyterLab)
a_hub_and_its_slurm  a real JupyterHub + proxy on loopback with its own mock Slurm (per module)
a_slapd        Debian's slapd with the demo directory on a loopback port (per session)
a_hung_server  a socket that accepts and never answers; a_refusing_uri: nothing listens
a_fake_runtime a stand-in apptainer first on PATH (tests/fake_runtime.py)
"""

from __future__ import annotations

import json
import os
import pwd
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))
import mockslurm  # noqa: E402


class MockSlurm:
    def __init__(self, root: Path):
        self.bin = root / "bin"
        self.state = root / "state"
        self.bin.mkdir(parents=True)
        self.state.mkdir(parents=True)
        for cmd in ("sbatch", "squeue", "scancel", "sudo"):
            path = self.bin / cmd
            path.write_text(
                f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(TESTS)!r})\nimport mockslurm\n"
                f"sys.exit(mockslurm.main({cmd!r}, {str(self.state)!r}, sys.argv[1:]))\n"
            )
            path.chmod(0o755)

    def path(self, cmd: str) -> str:
        return str(self.bin / cmd)

    def jobs(self) -> dict:
        with mockslurm._table(self.state) as table:  # the same lock the fake commands take
            return json.loads(json.dumps(table["jobs"]))

    def set_job(self, job_id: str, **fields) -> None:
        with mockslurm._table(self.state) as table:
            table["jobs"][job_id].update(fields)

    def purge(self, job_id: str) -> None:
        with mockslurm._table(self.state) as table:
            del table["jobs"][job_id]

    def fail(self, cmd: str, mode: str, stderr: str | None = None) -> None:
        path = self.state / "fail.json"
        modes = json.loads(path.read_text()) if path.exists() else {}
        modes[cmd] = {"mode": mode, "stderr": stderr}
        path.write_text(json.dumps(modes))

    def heal(self) -> None:
        (self.state / "fail.json").unlink(missing_ok=True)

    def calls(self, cmd: str | None = None) -> list[dict]:
        path = self.state / "calls.jsonl"
        entries = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
        return [e for e in entries if cmd is None or e["cmd"] == cmd]


@pytest.fixture
def mock_slurm(tmp_path) -> MockSlurm:
    return MockSlurm(tmp_path / "mockslurm")


@pytest.fixture
def a_web_server():
    """Something answering HTTP on a free loopback port, standing in for JupyterLab; yields the port."""
    import http.server
    import threading

    from tests.hubprocess import free_port

    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield port
    server.shutdown()


@pytest.fixture
def a_home(tmp_path) -> Path:
    home = tmp_path / "home" / "alice"
    home.mkdir(parents=True)
    return home


def config_data(mock: MockSlurm) -> dict:
    return {
        "hub": {"admin_users": ["carol"]},
        "ldap": {"bind_dn_template": "uid={username},ou=people,dc=example,dc=org"},
        "slurm": {
            "partitions": [
                {"name": "sxm2", "max_gpus": 4, "default": True, "display_name": "V100 SXM2"},
                {"name": "pcie", "max_gpus": 2},
            ],
            "max_hours": 12,
            "account": "ds",
            "extra_sbatch": ["--constraint=v100"],
            "sbatch": mock.path("sbatch"),
            "squeue": mock.path("squeue"),
            "scancel": mock.path("scancel"),
            "sudo": mock.path("sudo"),
            "command_timeout": 3,
        },
        "environment": {"prefix": "/opt/dsportal/venv", "storage": {"isilon": "/mnt/isilon"}},
    }


@pytest.fixture
def portal_yaml(mock_slurm) -> str:
    return yaml.safe_dump(config_data(mock_slurm), sort_keys=False)


@pytest.fixture
def a_config_file(tmp_path, portal_yaml) -> Path:
    path = tmp_path / "portal.yaml"
    path.write_text(portal_yaml)
    return path


def fake_passwd(name: str, home: Path) -> pwd.struct_passwd:
    return pwd.struct_passwd((name, "x", 5001, 5001, name, str(home), "/bin/bash"))


@pytest.fixture
def a_spawner(a_config_file, a_home):
    from jupyterhub.objects import Hub

    from spawner.slurmspawner import SlurmGPUSpawner

    user = SimpleNamespace(name="alice", url="/user/alice/", escaped_name="alice", base_url="/",
                           prefix="/user/alice/", spawners={}, settings={})
    spawner = SlurmGPUSpawner(
        user=user,
        hub=Hub(ip="10.0.0.1", port=8081, base_url="/hub/"),
        api_token="alice-server-token",
        config_file=str(a_config_file),
        startup_poll_interval=0.05,
        stop_timeout=5,
    )
    spawner.getpwnam = lambda name: fake_passwd(name, a_home)
    return spawner


@pytest.fixture(scope="module")
def a_hub_and_its_slurm(tmp_path_factory):
    """A real JupyterHub + proxy on loopback, with the portal config and its own mock Slurm.

    Module-scoped: a hub takes seconds to start; tests that share it look at
    what changed, not at totals.
    """
    from tests.hubprocess import HubProcess

    root = tmp_path_factory.mktemp("hub")
    mock = MockSlurm(root / "mockslurm")
    hub = HubProcess(root, config_data(mock))
    hub.start()
    yield hub, mock
    hub.stop()


# --- LDAP -------------------------------------------------------------------------
sys.path.insert(0, str(TESTS.parent / "deploy"))
import devdirectory  # noqa: E402


class Slapd:
    def __init__(self, folder: Path, port: int):
        self.folder = folder
        self.uri = f"ldap://127.0.0.1:{port}"
        self.service_password_file = folder / "service.pw"


@pytest.fixture(scope="session")
def a_slapd(tmp_path_factory):
    """Debian's slapd on a loopback port with the demo directory (people, groups, a service account)."""
    from tests.hubprocess import free_port

    folder = tmp_path_factory.mktemp("slapd")
    devdirectory.build(folder)
    slapd = Slapd(folder, free_port())
    devdirectory.start(folder, slapd.uri + "/")
    yield slapd
    devdirectory.stop(folder)


@pytest.fixture
def a_hung_server():
    """A loopback socket that accepts connections and never answers; yields its URI."""
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
    yield f"ldap://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


@pytest.fixture
def a_refusing_uri():
    """A loopback URI where nothing listens (connection refused)."""
    from tests.hubprocess import free_port

    return f"ldap://127.0.0.1:{free_port()}"


# --- container runtime stand-in ----------------------------------------------------
class FakeRuntime:
    def __init__(self, root: Path, name: str = "apptainer"):
        self.bin = root / "bin"
        self.bin.mkdir(parents=True, exist_ok=True)
        self.log = root / "runtime.jsonl"
        self.path = self.bin / name
        self.path.write_text(
            f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(TESTS)!r})\nimport fake_runtime\n"
            f"sys.exit(fake_runtime.main({name!r}, {str(self.log)!r}, sys.argv[1:]))\n"
        )
        self.path.chmod(0o755)

    def calls(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []


@pytest.fixture
def a_fake_runtime(tmp_path, monkeypatch) -> FakeRuntime:
    """A stand-in `apptainer` first on PATH."""
    runtime = FakeRuntime(tmp_path / "runtime")
    monkeypatch.setenv("PATH", f"{runtime.bin}:{os.environ['PATH']}")
    return runtime


def pytest_terminal_summary(terminalreporter):
    """How long the template notebooks took, and where the browser test's screenshots are."""
    journey = sys.modules.get("tests.integration.test_journey")
    if journey and journey.SHOTS:
        terminalreporter.write_line(f"screenshots ({len(journey.SHOTS)}): {journey.ARTIFACTS}")
    test_notebooks = sys.modules.get("tests.test_notebooks")
    if test_notebooks and test_notebooks.TIMINGS:
        total = sum(test_notebooks.TIMINGS.values())
        terminalreporter.write_line(
            "notebooks: " + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(test_notebooks.TIMINGS.items()))
            + f"; total {total:.1f} s")
