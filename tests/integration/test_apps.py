"""Apps in alice's session on the real dev cluster: real code-server, MLflow, Streamlit and Dash, each on a Unix
socket of the session's private folder, through the hub's proxy on port 8000 behind alice's login.

The attacks, as bob on the same node: find a TCP port of alice's apps (the uid column of /proc/net/tcp); connect
to their sockets; go through the proxy with his own login, with none, and through jupyter-server-proxy's own
route to a loopback port; keep a guest's connection to an app open after alice revokes the share.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time

import pytest
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from tests.support.cluster import url_for
from tests.support.http import json_request

FOLDER = "/home/alice/apps-test"
STREAMLIT_APP = """import streamlit as st

st.title("Hello from alice's Streamlit app")
name = st.text_input("Your name")
st.write("Nice to meet you,", name or "stranger")
"""
DASH_APP = """from dash import Dash, html

app = Dash(__name__)
app.layout = html.Div("alice's Dash app", id="greeting")

if __name__ == "__main__":
    app.run()
"""
MLFLOW_RUN = f"""
import mlflow
mlflow.set_tracking_uri("sqlite:///{FOLDER}/runs/mlflow.db")
mlflow.set_experiment("alice-experiment")
with mlflow.start_run():
    mlflow.log_param("learning_rate", 0.01)
    mlflow.log_metric("accuracy", 0.97)
"""
API = "/user/alice/dsportal/apps/api/instances"


def as_alice(*argv: str, stdin: str | None = None) -> None:
    subprocess.run(
        ["sudo", "-u", "alice", *argv], input=stdin, text=True, check=True, timeout=180, stdout=subprocess.DEVNULL
    )


def write_as_alice(path: str, text: str) -> None:
    as_alice("tee", path, stdin=text)


def listening_ports(user: str) -> set[int]:
    """The TCP ports processes of `user` listen on, as any account on the node reads them (/proc/net/tcp*)."""
    import pwd

    uid = str(pwd.getpwnam(user).pw_uid)
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.read().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[7] == uid:
                    ports.add(int(fields[1].split(":")[1], 16))
    return ports


def app_sockets() -> list[str]:
    """The Unix sockets alice's apps listen on (ss, as root)."""
    out = subprocess.run(["ss", "-H", "-xl"], capture_output=True, text=True, timeout=30).stdout
    return sorted({m.group(0) for m in re.finditer(r"/\S*/runtime/apps/[0-9a-f]{12}\.sock", out)})


@pytest.fixture(scope="module")
def apps_session(cluster_api):
    cluster = cluster_api
    cluster.clean()
    subprocess.run(["rm", "-rf", FOLDER], check=True, timeout=30)
    as_alice("mkdir", "-p", f"{FOLDER}/runs")
    write_as_alice(f"{FOLDER}/hello.py", STREAMLIT_APP)
    write_as_alice(f"{FOLDER}/board.py", DASH_APP)
    as_alice("/opt/dsportal/venv/bin/python", "-c", MLFLOW_RUN)
    assert cluster.start("alice", {"gpus": 0, "hours": 1}) in (201, 202)
    cluster.wait_ready("alice")
    opened = {}
    for kind, target in (("vscode", "apps-test"), ("mlflow", "apps-test/runs"), ("auto", "apps-test/hello.py")):
        status, app = cluster.request("POST", API, {"kind": kind, "target": target}, timeout=120)
        assert status == 201, (kind, app)
        opened[app["kind"]] = app
    status, app = cluster.request("POST", API, {"kind": "auto", "target": "apps-test/board.py"}, timeout=120)
    assert status == 201, app
    opened[app["kind"]] = app
    yield cluster, opened
    cluster.clean()


def test_each_app_answers_through_the_proxy(apps_session):
    cluster, apps = apps_session
    assert sorted(apps) == ["dash", "mlflow", "streamlit", "vscode"]
    status, kinds = cluster.request("GET", "/user/alice/dsportal/apps/api/kinds")
    assert [k["name"] for k in kinds] == ["vscode", "mlflow", "streamlit", "dash"]

    status, page = cluster.request("GET", apps["vscode"]["url"] + f"?folder={FOLDER}")
    assert status == 200 and "vscode-workbench-web-configuration" in page, page[:500]

    status, page = cluster.request("GET", apps["mlflow"]["url"])
    assert status == 200 and "MLflow" in page, page[:300]
    status, found = cluster.request(
        "POST", apps["mlflow"]["url"] + "ajax-api/2.0/mlflow/experiments/search", {"max_results": 10}
    )
    assert status == 200 and "alice-experiment" in [e["name"] for e in found["experiments"]], found

    status, health = cluster.request("GET", apps["streamlit"]["url"] + "_stcore/health")
    assert (status, health) == (200, "ok")
    status, page = cluster.request("GET", apps["streamlit"]["url"])
    assert status == 200 and "<title>Streamlit</title>" in page, page[:300]

    status, layout = cluster.request("GET", apps["dash"]["url"] + "_dash-layout")
    assert status == 200 and layout["props"]["children"] == "alice's Dash app", layout
    status, page = cluster.request("GET", apps["dash"]["url"])
    config = re.search(r'<script id="_dash-config" type="application/json">(.*?)</script>', page, re.S)
    assert status == 200 and config, page[:800]
    assert json.loads(config.group(1))["requests_pathname_prefix"] == apps["dash"]["url"]  # its pages' URLs

    # the same file again: the running app; nothing else was started
    status, again = cluster.request("POST", API, {"kind": "streamlit", "target": "apps-test/hello.py"})
    assert (status, again["id"]) == (200, apps["streamlit"]["id"])
    assert len(cluster.request("GET", API)[1]) == 4


def test_no_app_listens_on_tcp_and_bob_reaches_none(apps_session):
    cluster, apps = apps_session
    ports = listening_ports("alice")
    assert len(ports) == 1, ports  # the session's own port, nothing of its four apps
    sockets = app_sockets()
    assert len(sockets) == 4, sockets
    for path in sockets:  # bob, on the node, at the sockets themselves
        tried = subprocess.run(
            ["sudo", "-u", "bob", "/usr/bin/python3", "-c", CONNECT, path], capture_output=True, text=True, timeout=30
        )
        assert tried.stdout.strip() == "refused: PermissionError", (path, tried.stdout, tried.stderr)
    bob = cluster.user_token("bob")
    for app in apps.values():  # ... through the proxy, as himself and as nobody
        assert json_request("GET", url_for(app["url"]), token=bob)[0] == 403
        assert no_redirect_status(url_for(app["url"])) in (302, 403)
    # jupyter-server-proxy's own route to any loopback port of the node is off
    port = next(iter(ports))
    assert cluster.request("GET", f"/user/alice/proxy/{port}/api/status")[0] == 404


CONNECT = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
    print("connected")
except OSError as e:
    print("refused:", type(e).__name__)
"""


def no_redirect_status(url: str) -> int:
    import urllib.error
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    try:
        return urllib.request.build_opener(NoRedirect).open(url, timeout=30).status
    except urllib.error.HTTPError as e:
        return e.code


async def closed_after(path: str, token: str, action, timeout: float = 20) -> int | None:
    """Open a websocket at `path` with `token`, run `action` (blocking), then wait for the server to close it:
    its close code (None: still open after `timeout` s)."""
    request = HTTPRequest(url_for(path).replace("https", "wss", 1), headers={"Authorization": f"token {token}"})
    ws = await websocket_connect(request)
    await asyncio.get_running_loop().run_in_executor(None, action)
    deadline = time.monotonic() + timeout
    try:
        while (left := deadline - time.monotonic()) > 0:
            if await asyncio.wait_for(ws.read_message(), left) is None:
                return ws.close_code
    except TimeoutError:
        pass
    ws.close()
    return None


def test_a_guest_opens_the_apps_while_shared_and_loses_them_at_revoke(apps_session):
    cluster, apps = apps_session
    alice, bob = cluster.user_token("alice"), cluster.user_token("bob")
    streamlit = apps["streamlit"]["url"]
    assert json_request("GET", url_for(streamlit + "_stcore/health"), token=bob)[0] == 403
    status, share = json_request(
        "POST", url_for("/hub/api/dsportal/shares"), {"server": "", "user": "bob", "hours": 1}, token=alice
    )
    assert status == 200, share
    try:
        assert json_request("GET", url_for(streamlit + "_stcore/health"), token=bob) == (200, "ok")
        assert json_request("GET", url_for(apps["mlflow"]["url"]), token=bob)[0] == 200

        def revoke() -> None:
            assert json_request("DELETE", url_for("/hub/api/dsportal/shares?server=&user=bob"), token=alice)[0] == 200

        # bob keeps Streamlit's live connection open while alice revokes: it is cut off
        code = asyncio.run(closed_after(streamlit + "_stcore/stream", bob, revoke))
        assert code == 4403, f"bob's connection to the app ended with {code}"
        assert json_request("GET", url_for(streamlit + "_stcore/health"), token=bob)[0] == 403
    finally:
        json_request("DELETE", url_for("/hub/api/dsportal/shares?server=&user=bob"), token=alice)


def test_bad_requests_say_what_to_do(apps_session):
    cluster, apps = apps_session
    cases = [
        ({"kind": "mlflow", "target": "apps-test"}, 400, "holds no MLflow runs (mlflow.db)"),
        ({"kind": "auto", "target": "apps-test/nothing.py"}, 400, "is not a file"),
        ({"kind": "vscode", "target": "apps-test/hello.py"}, 400, "is not a folder"),
        ({"kind": "gradio", "target": "x"}, 400, "kind must be one of"),
        ({"kind": "vscode"}, 400, 'Send {"kind"'),
    ]
    for body, code, words in cases:
        status, answer = cluster.request("POST", API, body)
        assert status == code and words in answer["message"], (body, status, answer)


def test_an_app_stops_and_its_socket_goes_until_it_is_opened_again(apps_session):
    cluster, apps = apps_session
    dash = apps["dash"]
    assert cluster.request("DELETE", f"{API}/{dash['id']}")[0] == 204
    assert cluster.request("GET", dash["url"] + "_dash-layout")[0] == 404
    assert len(app_sockets()) == 3
    gunicorns = subprocess.run(["pgrep", "-u", "alice", "gunicorn"], capture_output=True, text=True, timeout=30)
    assert gunicorns.stdout == ""  # its whole process group is gone
    status, page = cluster.request("GET", "/user/alice/dsportal/apps/")
    assert status == 200 and "hello.py" in page and "board.py" not in page
    status, again = cluster.request("POST", API, {"kind": "auto", "target": "apps-test/board.py"}, timeout=120)
    assert (status, again["id"]) == (201, dash["id"])
    assert cluster.request("GET", dash["url"] + "_dash-layout")[0] == 200
