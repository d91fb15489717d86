"""Debian's PostgreSQL in a temp folder, for the hub's database in the scale rig and its smoke test.

initdb and the server run as the `postgres` account (PostgreSQL refuses
root); the server listens on a unix socket only (no TCP), in a folder only
root and that account reach, with trust authentication on that socket.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from tests.support.http import wait_until

ACCOUNT = "postgres"
DATABASE = "jupyterhub"
ROLE = "dsportal"


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise RuntimeError("PostgreSQL is not installed; `deploy/devcluster up` installs Debian's postgresql")
    return found[-1]


class Postgres:
    """A server in a folder of its own under /tmp (the postgres account cannot enter a test's 0700 tmp_path)."""

    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix="dsportal-postgres-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "run"
        self.log = self.root / "postgres.log"
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """SQLAlchemy's URL for the hub (psycopg2, through the socket)."""
        return f"postgresql+psycopg2://{ROLE}@/{DATABASE}?host={self.socket_dir}"

    def _as_account(self, argv: list[str], timeout: float = 120) -> None:
        done = subprocess.run(["runuser", "-u", ACCOUNT, "--", *argv], capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed: {done.stderr.strip() or done.stdout.strip()}")

    def start(self, timeout: float = 60) -> None:
        self.root.chmod(0o755)
        for folder in (self.data, self.socket_dir):
            folder.mkdir(mode=0o700, exist_ok=True)
            shutil.chown(folder, ACCOUNT, ACCOUNT)
        self._as_account(
            [
                _bin("initdb"),
                "-D",
                str(self.data),
                "-U",
                ROLE,
                "--auth-local=trust",
                "--auth-host=reject",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ]
        )
        self.log.touch()
        shutil.chown(self.log, ACCOUNT, ACCOUNT)
        self.proc = subprocess.Popen(
            [
                "runuser",
                "-u",
                ACCOUNT,
                "--",
                _bin("postgres"),
                "-D",
                str(self.data),
                "-k",
                str(self.socket_dir),
                "-c",
                "listen_addresses=",
                "-c",
                "max_connections=200",
                "-c",
                "fsync=on",
            ],
            stdout=open(self.log, "ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

        def answers() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"PostgreSQL exited:\n{self.log.read_text()[-2000:]}")
            return (
                subprocess.run(
                    [_bin("pg_isready"), "-h", str(self.socket_dir), "-U", ROLE], capture_output=True, timeout=10
                ).returncode
                == 0
            )

        try:
            wait_until(answers, timeout, "PostgreSQL answering", every=0.2)
        except AssertionError:
            raise RuntimeError(f"PostgreSQL did not answer in {timeout} s:\n{self.log.read_text()[-2000:]}") from None
        subprocess.run(
            [_bin("createdb"), "-h", str(self.socket_dir), "-U", ROLE, DATABASE],
            check=True,
            capture_output=True,
            timeout=60,
        )

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)  # fast shutdown: ends what clients are left
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        shutil.rmtree(self.root, ignore_errors=True)
