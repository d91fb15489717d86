"""TensorBoard through the hub's proxy on port 8000, behind alice's login, with no listener of its own."""

from __future__ import annotations

import shutil
import subprocess
import urllib.error
import urllib.request

import pytest

from tests.support.cluster import url_for
from tests.support.hosts import node_of, on_node

WRITE_EVENTS = """
from tensorboardX import SummaryWriter
w = SummaryWriter('/home/alice/tb-test/run1')
for step, value in enumerate([0.9, 0.6, 0.3]):
    w.add_scalar('accuracy', value, step)
w.close()
"""


def alice_processes() -> list[str]:
    out = subprocess.run(["pgrep", "-u", "alice", "-a", "."], capture_output=True, text=True, timeout=30).stdout
    return out.splitlines()


@pytest.fixture(scope="module")
def tb_session(cluster_api):
    cluster_api.clean()
    shutil.rmtree("/home/alice/tb-test", ignore_errors=True)  # event files of an earlier run would add steps
    subprocess.run(
        ["sudo", "-u", "alice", "/opt/dsportal/venv/bin/python", "-c", WRITE_EVENTS], check=True, timeout=120
    )
    cluster_api.start("alice", {"gpus": 1, "hours": 1})
    cluster_api.wait_ready("alice")
    status, instance = cluster_api.request(
        "POST", "/user/alice/dsportal/tensorboard/api/instances", {"logdir": "tb-test"}
    )
    assert status == 201, instance
    yield cluster_api, instance
    cluster_api.clean()


def test_scalars_come_through_the_proxy(tb_session):
    cluster, instance = tb_session
    assert instance["logdir"] == "/home/alice/tb-test"
    base = instance["url"].rstrip("/")
    runs = cluster.wait(lambda: cluster.request("GET", f"{base}/data/runs")[1] or None, 60, "runs loaded")
    assert runs == ["run1"]
    status, data = cluster.request("GET", f"{base}/data/plugin/scalars/scalars?run=run1&tag=accuracy")
    assert status == 200
    assert [(step, round(value, 3)) for _, step, value in data] == [(0, 0.9), (1, 0.6), (2, 0.3)]
    status, page = cluster.request("GET", instance["url"])
    assert status == 200 and "<title>TensorBoard</title>" in page
    # the same folder again reuses the running instance
    status, again = cluster.request("POST", "/user/alice/dsportal/tensorboard/api/instances", {"logdir": "tb-test/"})
    assert (status, again["id"]) == (200, instance["id"])
    status, listed = cluster.request("GET", "/user/alice/dsportal/tensorboard/api/instances")
    assert [i["id"] for i in listed] == [instance["id"]]


def test_only_alice_gets_in(tb_session):
    cluster, instance = tb_session
    url = url_for(f"{instance['url']}data/runs")

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    with pytest.raises(urllib.error.HTTPError) as anonymous:
        urllib.request.build_opener(NoRedirect).open(url, timeout=30)
    assert anonymous.value.code in (302, 403)
    if anonymous.value.code == 302:
        assert "/hub/" in anonymous.value.headers["Location"]  # sent to log in
    cluster.ensure_user("bob")
    status, token = cluster.request(
        "POST", "/hub/api/users/bob/tokens", {"note": "tensorboard test", "expires_in": 600}
    )
    assert status == 201
    request = urllib.request.Request(url, headers={"Authorization": f"token {token['token']}"})
    with pytest.raises(urllib.error.HTTPError) as as_bob:
        urllib.request.build_opener(NoRedirect).open(request, timeout=30)
    assert as_bob.value.code == 403


def test_no_tensorboard_listener_exists(tb_session):
    cluster, instance = tb_session
    session = [line.split()[0] for line in alice_processes() if "dsportal-singleuser" in line]
    assert len(session) == 2, session  # the port keeper and the Jupyter server, sharing one socket per family
    node = node_of(cluster.job_of("alice"))  # the host the session runs on lists its own listeners
    listening = subprocess.run(on_node(node, ["ss", "-H", "-ltnp"]), capture_output=True, text=True, timeout=30).stdout
    sockets = [line for line in listening.splitlines() if any(f"pid={pid}," in line for pid in session)]
    ports = {line.split()[3].rsplit(":", 1)[1] for line in sockets}
    assert len(ports) == 1 and len(sockets) == 2, sockets  # JupyterLab's own port only, on IPv4 and IPv6
    assert not [p for p in alice_processes() if "tensorboard" in p.lower()]


def test_list_page_and_stop(tb_session):
    cluster, instance = tb_session
    status, page = cluster.request("GET", "/user/alice/dsportal/tensorboard/")
    assert status == 200 and "/home/alice/tb-test" in page and f'data-id="{instance["id"]}"' in page
    status, _ = cluster.request("DELETE", f"/user/alice/dsportal/tensorboard/api/instances/{instance['id']}")
    assert status == 204
    assert cluster.request("GET", f"{instance['url']}data/runs")[0] == 404
    status, again = cluster.request("POST", "/user/alice/dsportal/tensorboard/api/instances", {"logdir": "tb-test"})
    assert status == 201


def test_huge_folders_and_more_than_the_cap_are_refused(tb_session):
    cluster, _ = tb_session
    api = "/user/alice/dsportal/tensorboard/api/instances"
    for logdir in ("/", "/home", ".", "isilon"):
        status, answer = cluster.request("POST", api, {"logdir": logdir})
        assert status == 400 and "too big a folder for TensorBoard" in answer["message"], (logdir, answer)
    for run in ("run-a", "run-b", "run-c"):
        subprocess.run(["sudo", "-u", "alice", "mkdir", "-p", f"/home/alice/tb-test/{run}"], check=True, timeout=30)
    for running in cluster.request("GET", api)[1]:
        assert cluster.request("DELETE", f"{api}/{running['id']}")[0] == 204
    opened = [cluster.request("POST", api, {"logdir": f"tb-test/{run}"})[0] for run in ("run-a", "run-b", "run-c")]
    assert opened == [201, 201, 201]  # the session's cap is 3 (tensorboard.max_instances' default)
    status, answer = cluster.request("POST", api, {"logdir": "tb-test"})
    assert status == 409 and "3 TensorBoards are open, the most a session may run; stop one" in answer["message"]


def test_stopping_the_session_ends_everything(tb_session):
    cluster, instance = tb_session
    cluster.stop("alice")
    cluster.wait(lambda: not alice_processes(), 30, "alice's processes gone")
