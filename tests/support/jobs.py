"""A demo user's runs through the hub's REST API, and files in their home, for the runs tests and benchmark.

`JobsClient.for_user("alice")` holds a token of alice's (made with the admin
token), writes notebooks and scripts into her home as her, submits through
`/hub/api/dsportal/runs` and waits on what the API (the jobs panel's rows)
or Slurm itself says.
"""

from __future__ import annotations

import json
import pwd
import subprocess
from pathlib import Path

from tests.support.cluster import TOKEN_FILE, Cluster
from tests.support.http import wait_until


def notebook_text(cells: list[str], parameters: str | None = None, kernel: str = "python3") -> str:
    """An nbformat 4 notebook: an optional parameters cell (tagged), then one code cell per source."""
    sources = ([(["parameters"], parameters)] if parameters is not None else []) + [([], c) for c in cells]
    return json.dumps(
        {
            "nbformat": 4,
            "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": kernel, "display_name": kernel, "language": "python"}},
            "cells": [
                {
                    "cell_type": "code",
                    "id": f"c{i}",
                    "metadata": {"tags": tags},
                    "execution_count": None,
                    "outputs": [],
                    "source": source,
                }
                for i, (tags, source) in enumerate(sources)
            ],
        }
    )


class JobsClient:
    def __init__(self, name: str, token: str, admin: Cluster):
        self.name = name
        self.token = token
        self.admin = admin
        self.home = Path(pwd.getpwnam(name).pw_dir)

    @classmethod
    def for_user(cls, name: str) -> JobsClient:
        admin = Cluster(TOKEN_FILE.read_text().strip())
        admin.ensure_user(name)
        status, body = admin.request("POST", f"/hub/api/users/{name}/tokens", {"note": "runs test", "expires_in": 3600})
        assert status == 201, body
        return cls(name, body["token"], admin)

    def request(self, method: str, path: str, body=None, timeout: float = 60):
        return Cluster(self.token).request(method, f"/hub/api/dsportal/{path}", body, timeout=timeout)

    def write(self, path: str, text: str) -> Path:
        """A file in the user's home, made by the user (their umask, their ownership)."""
        target = self.home / path
        subprocess.run(
            ["runuser", "-u", self.name, "--", "mkdir", "-p", "--", str(target.parent)], check=True, timeout=30
        )
        subprocess.run(
            ["runuser", "-u", self.name, "--", "tee", "--", str(target)],
            input=text,
            text=True,
            stdout=subprocess.DEVNULL,
            check=True,
            timeout=30,
        )
        return target

    def put_notebook(self, path: str, cells: list[str], parameters: str | None = None) -> Path:
        return self.write(path, notebook_text(cells, parameters))

    def submit(self, body: dict) -> dict:
        status, answer = self.request("POST", "runs", body)
        assert status == 201, (status, answer)
        return answer["job"]

    def rows(self) -> dict[str, dict]:
        status, answer = self.request("GET", "runs")
        assert status == 200, answer
        return {row["job_id"]: row for row in answer["jobs"]}

    def wait_row(self, job_id: str, predicate, timeout: float, what: str) -> dict:
        return wait_until(
            lambda: (row := self.rows().get(job_id)) is not None and predicate(row) and row, timeout, what, every=0.5
        )

    def wait_ended(self, job_id: str, timeout: float = 120) -> dict:
        """The job's row once the hub has said why it ended."""
        return self.wait_row(job_id, lambda r: not r["active"] and r["why"], timeout, f"job {job_id} ended")

    def wait_state(self, job_id: str, states: set[str], timeout: float) -> str:
        """Slurm's own view of the job (squeue, then sacct), until it is in one of `states`."""

        def state() -> str | None:
            out = subprocess.run(
                ["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True, timeout=30
            ).stdout.strip()
            if not out:
                out = subprocess.run(
                    ["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State"], capture_output=True, text=True, timeout=30
                ).stdout.strip()
            found = out.split()[0] if out else ""
            return found if found in states else None

        return wait_until(state, timeout, f"job {job_id} in {sorted(states)}", every=0.05)

    def log(self, job_id: str) -> str:
        path = self.home / f".dsportal-job-{job_id}.log"
        return path.read_text() if path.exists() else ""

    def wait_log(self, job_id: str, text: str, timeout: float) -> str:
        return wait_until(
            lambda: text in self.log(job_id) and self.log(job_id), timeout, f"{text!r} in job {job_id}'s log"
        )
