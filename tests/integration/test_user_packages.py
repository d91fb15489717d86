"""A user's own packages on the real dev cluster: `%pip install` in the Python 3 kernel goes to their layer
(spawner/job/kernels/userlayer.py), kept across sessions, while the session's server keeps the portal's packages.

The wheels are written by the test (tests/support/wheels.py) and installed with --no-index: no network."""

from __future__ import annotations

import pwd
import shutil
import subprocess
from pathlib import Path

from tests.support.cluster import Cluster
from tests.support.jupyter import run_code
from tests.support.wheels import write_wheel

USER = "dave"
PORTAL_PYTHON = "/opt/dsportal/venv/bin/python"


def layer_of(home: Path) -> Path:
    return home / ".local" / "share" / "dsportal"


def python3_argv(cluster: Cluster) -> list[str] | None:
    status, specs = cluster.request("GET", f"/user/{USER}/api/kernelspecs")
    assert status == 200, specs
    argv = specs["kernelspecs"]["python3"]["spec"]["argv"]
    return argv if ".local/share/dsportal/python3." in argv[0] else None


def portal_yaml_version() -> str:
    out = subprocess.run([PORTAL_PYTHON, "-c", "import yaml; print(yaml.__version__)"], capture_output=True, text=True)
    return out.stdout.strip()


def test_pip_install_in_a_notebook_goes_to_the_users_layer_and_stays(cluster):
    account = pwd.getpwnam(USER)
    home = Path(account.pw_dir)
    shutil.rmtree(layer_of(home), ignore_errors=True)
    wheels = home / "wheels"
    wheels.mkdir(exist_ok=True)
    hello = write_wheel(wheels, "dsportal-hello", "1.0", {"dsportal_hello.py": "WORDS = 'hello from dave'\n"})
    newer_yaml = write_wheel(wheels, "PyYAML", "99.0", {"yaml.py": "__version__ = '99.0'\n"})
    for path in (wheels, hello, newer_yaml):
        shutil.chown(path, account.pw_uid, account.pw_gid)
    before = portal_yaml_version()

    cluster.start(USER, {"gpus": 0, "hours": 1})
    cluster.wait_ready(USER)
    try:
        argv = cluster.wait(lambda: python3_argv(cluster), 60, "Python 3 running in dave's layer")
        assert argv[0] == str(layer_of(home) / "python3.11" / "bin" / "python"), argv
        status, out = run_code(
            cluster,
            USER,
            "python3",
            f"%pip install --no-index {hello} {newer_yaml}\nimport dsportal_hello\nprint(dsportal_hello.WORDS)",
        )
        assert status == "ok", out
        assert "Successfully installed" in out and out.strip().endswith("hello from dave"), out
        # a package the portal has too: the user's version, in a new kernel (the old one may hold the portal's)
        assert run_code(cluster, USER, "python3", "import yaml\nprint(yaml.__version__)")[1].strip() == "99.0"
        # the layer is dave's alone; the portal's environment and the session's server are as they were
        folder = layer_of(home)
        assert (folder.stat().st_uid, folder.stat().st_mode & 0o777) == (account.pw_uid, 0o700)
        assert portal_yaml_version() == before != "99.0"
        status, _ = cluster.request("GET", f"/user/{USER}/api/contents/wheels")
        assert status == 200  # the server answers as before
    finally:
        cluster.stop(USER)

    # the next session's kernel has them still
    cluster.start(USER, {"gpus": 0, "hours": 1})
    cluster.wait_ready(USER)
    try:
        cluster.wait(lambda: python3_argv(cluster), 60, "Python 3 running in dave's layer")
        status, out = run_code(cluster, USER, "python3", "import dsportal_hello\nprint(dsportal_hello.WORDS)")
        assert (status, out.strip()) == ("ok", "hello from dave"), out
        # undone as pip undoes it: the portal's own copy is back
        status, out = run_code(cluster, USER, "python3", "%pip uninstall -y PyYAML")
        assert status == "ok" and "Successfully uninstalled PyYAML-99.0" in out, out
        assert run_code(cluster, USER, "python3", "import yaml\nprint(yaml.__version__)")[1].strip() == before
    finally:
        cluster.stop(USER)
        shutil.rmtree(wheels, ignore_errors=True)
