"""What `deploy/devcluster up` installed is exactly what the locks say: `pip freeze` of the portal's environment
is deploy/requirements.lock (the portal itself aside), and the proxy is deploy/proxy/package-lock.json's.

(CI runs `reset` before `up`, so there the environment is a fresh one.)
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from deploy.dev import locks
from deploy.dev.common import PREFIX, VENV


def test_pip_freeze_of_the_portal_environment_is_the_lock(cluster_api):
    installed = locks.installed_versions(VENV)
    locked = locks.locked_versions(locks.LOCK.read_text())
    # name -> (installed, locked) for each package that differs; run `deploy/devcluster up` after a lock change
    assert locks.differences(installed, locked) == {}
    assert len(installed) > 100


def test_the_proxy_on_path_is_the_locked_one(cluster_api):
    lock = locks.proxy_lock()
    chp = shutil.which("configurable-http-proxy")
    assert chp is not None and Path(chp).resolve().is_relative_to(PREFIX / "proxy"), chp
    version = subprocess.run([chp, "--version"], capture_output=True, text=True, timeout=60, check=True).stdout
    assert version.strip() == locks.proxy_locked_version(lock)
    installed = {
        where: json.loads((PREFIX / "proxy" / where / "package.json").read_text())["version"]
        for where in lock["packages"]
        if where
    }
    assert installed == {where: p["version"] for where, p in lock["packages"].items() if where}
