"""Makes tests/data/upgrade/<VERSION>/: a release's hub state, as that release's own hub left it, for
tests/component/test_upgrade.py.  Run it with the release's checkout first on the path, from that checkout:

    git worktree add /tmp/v0.1.0 v0.1.0
    cd /tmp/v0.1.0 && PYTHONPATH=/tmp/v0.1.0 /opt/dsportal/venv/bin/python \
        <this checkout>/tests/data/upgrade/make_state.py <this checkout>/tests/data/upgrade/0.1.0

The release's hub (its code: the checkout on PYTHONPATH), with a mock Slurm, is given: a token of alice's, a
running session of hers (its job RUNNING, its server answering), a named session of bob's still queued; then it
stops as a hub stops for an upgrade (the sessions' jobs keep running).  Written: its database as SQL
(`sqlite3 .dump`), its cookie secret, the release's example admin file, the mock Slurm's job
table, and what the test looks for (facts.json)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from portal.version import version
from tests.support.http import FakeJupyter, wait_until
from tests.support.hub import hub_with_mock_slurm


def main(out: Path) -> None:
    root = Path(tempfile.mkdtemp())
    out.mkdir(parents=True, exist_ok=True)
    web = FakeJupyter("alice-server-token")
    try:
        with hub_with_mock_slurm(root) as (hub, mock):
            status, token = hub.api("POST", "/users/alice/tokens", {"note": "a script of alice's"})
            assert status == 201, token
            assert hub.api("POST", "/users/alice/server", {"gpus": 1, "hours": 8})[0] in (201, 202)
            wait_until(lambda: mock.jobs(), what="alice's job")
            [alice_job] = mock.jobs()
            env = [c for c in mock.calls("sbatch") if c["env"].get("USER") == "alice"][-1]["env"]
            mock.set_job(alice_job, state="RUNNING", node="127.0.0.1", end="2099-01-01T00:00:00")
            web.token = env["JUPYTERHUB_API_TOKEN"]
            report = {"port": web.port}
            answer = hub.request("POST", f"{hub.hub_api}/dsportal/port", report, token=web.token)
            assert answer[0] == 201, answer
            wait_until(lambda: hub.api("GET", "/users/alice")[1]["servers"].get("", {}).get("ready"), what="ready")
            assert hub.api("POST", "/users/bob/servers/train", {"gpus": 0, "hours": 2})[0] in (201, 202)
            wait_until(lambda: len(mock.jobs()) == 2, what="bob's job")
            facts = {
                "version": version(),
                "alice_token": token["token"],
                "alice_job": alice_job,
                "alice_server_token": web.token,  # what her server answers the hub's readiness check with
                "bob_job": next(j for j in mock.jobs() if j != alice_job),
            }
        state = root / "state"
        dump = subprocess.run(["sqlite3", str(state / "jupyterhub.sqlite"), ".dump"], capture_output=True, text=True)
        (out / "jupyterhub.sql").write_text(dump.stdout)
        shutil.copy2(state / "jupyterhub_cookie_secret", out / "jupyterhub_cookie_secret")
        shutil.copy2(Path("deploy/portal.example.yaml"), out / "portal.example.yaml")
        (out / "jobs.json").write_text(json.dumps(mock.jobs(), indent=1, sort_keys=True) + "\n")
        (out / "facts.json").write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")
    finally:
        web.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
