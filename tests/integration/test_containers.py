"""A real container kernel (Charliecloud, the dev cluster's Debian image) and what other users' sessions see of it."""

from __future__ import annotations

import pytest

from tests.support.jupyter import run_code

# the dev cluster to itself (tests/support/lanes.py): bob's session must land on alice's node: the side lane's GPUs
# could send it to the other
pytestmark = pytest.mark.alone

MARKER = "dsportal-container-marker"
IN_THE_CONTAINER = f"""
import os, subprocess, sys
open('/tmp/alice-private.txt', 'w').write('only in this container')
worker = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '{MARKER}'], start_new_session=True)
print(worker.pid, os.path.exists('/dsportal-image'))
"""
LOOK_FOR = """
import os
def found(marker):
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            if marker in open(f'/proc/{pid}/cmdline', 'rb').read().decode(errors='replace'):
                yield pid
        except OSError:
            pass
print(os.path.exists('/tmp/alice-private.txt'), list(found('MARKER')), os.getuid())
""".replace("MARKER", MARKER)


def test_another_users_session_on_the_node_sees_nothing_of_a_container_kernel(cluster):
    for user in ("alice", "bob"):
        cluster.start(user, {"gpus": 1, "hours": 1})
    for user in ("alice", "bob"):
        cluster.wait_ready(user)
    alice_job, bob_job = cluster.job_of("alice"), cluster.job_of("bob")
    assert cluster.jobs("alice")[alice_job]["node"] == cluster.jobs("bob")[bob_job]["node"]  # one node
    # the session writes its kernelspecs in the background while JupyterLab starts
    cluster.wait(
        lambda: "debian-py" in cluster.request("GET", "/user/alice/api/kernelspecs")[1]["kernelspecs"],
        30,
        "the container kernel offered",
    )
    status, out = run_code(cluster, "alice", "debian-py", IN_THE_CONTAINER)
    assert status == "ok", out
    pid, in_image = out.split()
    try:
        assert in_image == "True"
        # alice herself (her session's own Python, outside the container) sees the worker: the check can see
        status, mine = run_code(cluster, "alice", "python3", LOOK_FOR)
        assert status == "ok" and mine.split()[0] == "False" and pid in mine, mine  # /tmp is the container's own
        # bob, on the same node, sees neither the file nor the process
        status, bobs = run_code(cluster, "bob", "python3", LOOK_FOR)
        assert status == "ok" and bobs.split()[:2] == ["False", "[]"], bobs
    finally:
        # a process that left its kernel's session outlives the job under proctrack/linuxproc (the dev
        # cluster's; a real cluster's cgroups end it with the job): end it here
        run_code(cluster, "alice", "python3", f"import os, signal; os.kill({int(pid)}, signal.SIGKILL)")
