"""Stand-in JupyterLabs for the scale rig: one process serves every session of the mock Slurm.

It plays the compute nodes.  It watches the mock's job table; each pending
portal job (outside the held partition) is given a port of its own, set
RUNNING on 127.0.0.1, and reports that port through the hub's real port
callback with the session's own token (from the job's environment, as
sbatch received it), exactly as `dsportal-singleuser` does.  On that port it
answers the hub's readiness check with the proof only that token can give,
and any other GET with 200.  A job that leaves RUNNING closes its port.

    python -m tests.support.standin MOCK_STATE_DIR [--hold PARTITION]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from urllib.parse import urlparse

from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets
from tornado.web import Application, RequestHandler

from spawner.contract import PORT_CALLBACK, READY_PATH, readiness_proof
from tests.support.mockslurm import _table

AsyncHTTPClient.configure(None, max_clients=100)


class SessionHandler(RequestHandler):
    def initialize(self, token: str) -> None:
        self.token = token

    def get(self, path: str) -> None:
        if path.endswith("/" + READY_PATH):
            self.write({"proof": readiness_proof(self.token, self.get_argument("nonce", ""))})
        else:
            self.write({})


class Fleet:
    def __init__(self, state: Path, hold: str):
        self.state = state
        self.hold = hold
        self.servers: dict[str, HTTPServer] = {}  # job id -> its server
        self.env_by_submission: dict[str, dict] = {}  # a sbatch call's id -> the environment it passed
        self.calls_read = 0  # bytes of calls.jsonl already read

    def _read_submissions(self) -> None:
        path = self.state / "calls.jsonl"
        if not path.exists():
            return
        with open(path, "rb") as f:
            f.seek(self.calls_read)
            chunk = f.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.calls_read += len(complete)
        for line in complete.splitlines():
            entry = json.loads(line)
            if entry["cmd"] == "sbatch" and "JUPYTERHUB_API_TOKEN" in entry.get("env", {}):
                self.env_by_submission[entry.get("submission", "")] = entry["env"]

    async def tick(self) -> None:
        self._read_submissions()
        with _table(self.state) as table:
            jobs = table["jobs"]
            to_start = [
                (job_id, job)
                for job_id, job in jobs.items()
                if job["state"] == "PENDING"
                and job["options"].get("partition") != self.hold
                and job.get("submission") in self.env_by_submission
                and job_id not in self.servers
            ]
            ended = [job_id for job_id in self.servers if jobs.get(job_id, {}).get("state") != "RUNNING"]
            started = []
            for job_id, job in to_start:
                env = self.env_by_submission[job["submission"]]  # each job its own: a user may run several
                sockets = bind_sockets(0, "127.0.0.1")
                server = HTTPServer(Application([(r"(.*)", SessionHandler, {"token": env["JUPYTERHUB_API_TOKEN"]})]))
                server.add_sockets(sockets)
                self.servers[job_id] = server
                job.update(state="RUNNING", node="127.0.0.1", reason="None")
                started.append((env, sockets[0].getsockname()[1]))
        for job_id in ended:
            self.servers.pop(job_id).stop()
        await asyncio.gather(*(self.report(env, port) for env, port in started))

    async def report(self, env: dict, port: int) -> None:
        url = env["JUPYTERHUB_API_URL"].rstrip("/") + PORT_CALLBACK
        request = HTTPRequest(
            url,
            method="POST",
            body=json.dumps({"port": port}),
            request_timeout=60,
            headers={"Authorization": f"token {env['JUPYTERHUB_API_TOKEN']}", "Content-Type": "application/json"},
        )
        try:
            await AsyncHTTPClient().fetch(request)
        except Exception as e:  # noqa: BLE001 - the rig reports the session as failed; the fleet goes on
            print(f"standin: port report for {urlparse(url).netloc} failed: {e}", file=sys.stderr, flush=True)

    async def run(self) -> None:
        while True:
            await self.tick()
            await asyncio.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("state")
    parser.add_argument("--hold", default="", help="jobs of this partition stay pending")
    args = parser.parse_args()
    asyncio.run(Fleet(Path(args.state), args.hold).run())


if __name__ == "__main__":
    main()
