"""An upgrade from the previous release, performed as docs/admins/upgrade.md says: 0.1.0's own hub state
(tests/data/upgrade/0.1.0, made by 0.1.0's hub: make_state.py there), put back as a backup is, then `jupyterhub
upgrade-db` and this version's hub on it (a real hub and proxy, the mock Slurm with 0.1.0's jobs).  And what the
hub refuses (portal/statestamp.py): a state a newer portal used, or one of a version that was never released."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from portal import statestamp
from portal.version import version
from tests.support.http import FakeJupyter, wait_until
from tests.support.hub import HubProcess
from tests.support.mockslurm import MockSlurm, config_data

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / "tests" / "data" / "upgrade" / "0.1.0"


def restored(tmp_path: Path, web: FakeJupyter | None = None) -> tuple[HubProcess, MockSlurm, dict]:
    """0.1.0's state in a new hub's folder, as a restore puts it back: the database, the cookie secret, the jobs.
    With `web`, alice's running session answers there (the database's port for it is web's: her server still
    runs on its node, where 0.1.0's hub left it)."""
    mock = MockSlurm(tmp_path / "mockslurm")
    jobs = json.loads((RELEASE / "jobs.json").read_text())
    (mock.state / "jobs.json").write_text(json.dumps({"next_id": 200, "jobs": jobs}))
    hub = HubProcess(tmp_path, config_data(mock))
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    sql = (RELEASE / "jupyterhub.sql").read_text()
    if web:
        sql += f"UPDATE servers SET port = {web.port} WHERE base_url = '/user/alice/';\n"
    subprocess.run(["sqlite3", str(state / "jupyterhub.sqlite")], input=sql, text=True, check=True, timeout=60)
    shutil.copy2(RELEASE / "jupyterhub_cookie_secret", state / "jupyterhub_cookie_secret")
    (state / "jupyterhub_cookie_secret").chmod(0o600)  # as a restore puts it back; a checkout's copy is 0644
    return hub, mock, json.loads((RELEASE / "facts.json").read_text())


def upgrade_db(hub: HubProcess) -> subprocess.CompletedProcess:
    env = {**os.environ, "DSPORTAL_CONFIG": str(hub.portal_yaml), "JUPYTERHUB_CRYPT_KEY": hub.crypt_key}
    return subprocess.run(
        [sys.executable, "-m", "jupyterhub", "upgrade-db", "-f", str(hub.config)],
        cwd=hub.root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


# what 0.1.0 kept of a user in the record of the user's unnamed session (its SessionRecord.to_state), since 0.2.0
# the user's own record's (spawner/hub/session/userrecord.py)
ALICES_OWN = {
    "history": [{"job_id": "90", "summary": "1 GPU", "options": {}, "submitted": "2026-11-28T09:00",
                 "ended": "2026-11-28T17:00", "why": "Stopped through the portal."}],
    "usage_log": [{"job_id": "90", "ended": "2026-11-28T17:00", "partition": "sxm2", "gpus": 1, "gpu_hours": 8.0}],
    "runs": [{"job_id": "91", "path": "train.ipynb", "kind": "notebook", "summary": "1 GPU", "state": "COMPLETED",
              "submitted": "2026-11-28T10:00", "ended": "2026-11-28T10:05", "why": "It completed."}],
    "notify_mail": True,
}  # fmt: skip


def database(hub: HubProcess, sql: str) -> str:
    done = subprocess.run(
        ["sqlite3", str(hub.root / "state" / "jupyterhub.sqlite"), sql],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return done.stdout.strip()


def test_a_hub_of_the_previous_release_upgrades_keeping_tokens_and_running_sessions(tmp_path, a_web_server):
    hub, mock, facts = restored(tmp_path, a_web_server)
    patch = json.dumps(ALICES_OWN).replace("'", "''")
    database(hub, f"UPDATE spawners SET state = json_patch(state, '{patch}') WHERE name = '' AND user_id = "
                  "(SELECT id FROM users WHERE name = 'alice');")  # fmt: skip
    a_web_server.token = facts["alice_server_token"]
    assert facts["version"] == statestamp.RELEASES[-1] == "0.1.0"
    done = upgrade_db(hub)  # JupyterHub's own step, as the docs give it: nothing to change between these two
    assert done.returncode == 0, done.stdout + done.stderr
    hub.start()
    try:
        me = hub.api("GET", "/user", token=facts["alice_token"])
        assert me[0] == 200 and me[1]["name"] == "alice", me  # her token
        server = hub.api("GET", "/users/alice")[1]["servers"].get("", {})
        assert server.get("ready"), server  # her running session, found again through 0.1.0's record
        assert mock.jobs()[facts["alice_job"]]["state"] == "RUNNING"
        # bob's session was still queued when 0.1.0's hub stopped: cancelled, as the upgrade page says
        wait_until(lambda: mock.jobs()[facts["bob_job"]]["state"] == "CANCELLED", what="bob's queued job cancelled")
        assert not hub.api("GET", "/users/bob")[1]["servers"]
        assert statestamp.read_stamp(tmp_path / "state") == version()
        # what was alice's, not her session's, is her own record's now, and her pages show it as before
        alice = facts["alice_token"]
        assert hub.api("GET", "/dsportal/notify", token=alice)[1]["mail"] is True
        assert [e["job_id"] for e in hub.api("GET", "/dsportal/session", token=alice)[1]["history"]] == ["90"]
        kept = json.loads(database(hub, "SELECT r.state FROM dsportal_user_records r JOIN users u ON u.id = r.user_id "
                                         "WHERE u.name = 'alice'"))  # fmt: skip
        assert {k: kept[k] for k in ALICES_OWN} == ALICES_OWN
        session = json.loads(database(hub, "SELECT s.state FROM spawners s JOIN users u ON u.id = s.user_id "
                                            "WHERE u.name = 'alice' AND s.name = ''"))  # fmt: skip
        assert not set(ALICES_OWN) & set(session) and session["job_id"] == facts["alice_job"]  # her session's own
    finally:
        hub.stop()
    assert "Traceback" not in hub.log.read_text()


def test_the_previous_releases_example_admin_file_is_valid_here():
    checked = subprocess.run(
        [sys.executable, "-m", "portal.admin.cli", "check-config", str(RELEASE / "portal.example.yaml")],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert checked.returncode == 0 and checked.stdout.startswith("OK"), checked.stdout + checked.stderr


@pytest.mark.parametrize(
    "stamped, said",
    [
        ("9.9.9", "the state was last used by DS Portal 9.9.9, newer than this"),
        ("0.0.3", "the state was last used by DS Portal 0.0.3, which is no release this"),
        ("banana", "the state's stamp says 'banana', which is no version"),
    ],
)
def test_a_state_of_a_newer_or_unknown_version_is_refused_in_words(tmp_path, stamped, said):
    hub, _, _ = restored(tmp_path)
    (tmp_path / "state" / statestamp.STAMP).write_text(stamped + "\n")  # as a newer portal, or a hand, wrote it
    with pytest.raises(RuntimeError, match="exited"):
        # the refusal comes once JupyterHub has imported and reads its config: on a busy machine (the CI's first
        # phase, four test workers beside the cluster's) that took more than 30 s
        hub.start(timeout=180)
    assert f"DS Portal will not start: {said}" in hub.log.read_text()
    env = {**os.environ, "DSPORTAL_CONFIG": str(hub.portal_yaml)}
    checked = subprocess.run(
        [sys.executable, "-m", "portal.admin.cli", "check-config"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=60,
    )  # fmt: skip
    assert checked.returncode == 1 and said in checked.stdout, checked.stdout + checked.stderr
    assert statestamp.read_stamp(tmp_path / "state") == stamped  # nothing changed
