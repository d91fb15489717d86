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
import sys
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.support.apps import API, FOLDER, MLFLOW_RUN, STREAMLIT_APP, as_alice, prepare_folder, write_as_alice
from tests.support.cluster import url_for
from tests.support.hosts import listening, node_of, on_node
from tests.support.http import json_request
from tests.support.jupyter import closed_after


def listening_ports(user: str, node: str) -> set[int]:
    """The TCP ports processes of `user` listen on, as any account on `node` reads them (/proc/net/tcp*)."""
    import pwd

    return {port for _, port in listening(node, pwd.getpwnam(user).pw_uid)}


def app_sockets(node: str) -> list[str]:
    """The Unix sockets alice's apps listen on (ss, as root on `node`: a host lists its own)."""
    out = subprocess.run(on_node(node, ["ss", "-H", "-xl"]), capture_output=True, text=True, timeout=30).stdout
    return sorted({m.group(0) for m in re.finditer(r"/\S*/runtime/apps/[0-9a-f]{12}\.sock", out)})


@pytest.fixture(scope="module")
def apps_session(cluster_api):
    cluster = cluster_api
    cluster.clean()
    prepare_folder()
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
    node = node_of(cluster.job_of("alice"))
    ports = listening_ports("alice", node)
    assert len(ports) == 1, ports  # the session's own port, nothing of its four apps
    sockets = app_sockets(node)
    assert len(sockets) == 4, sockets
    for path in sockets:  # bob, on the node, at the sockets themselves
        tried = subprocess.run(
            on_node(node, ["/usr/bin/python3", "-c", CONNECT, path], user="bob"),
            capture_output=True,
            text=True,
            timeout=30,
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


def test_an_app_never_sees_a_visitors_login_nor_sets_the_sessions_cookies(apps_session):
    """alice's app is alice's code: when bob, her guest, opens it, his token must not reach it (it would act as
    bob on the hub), nor may it plant cookies of the session in his browser."""
    cluster, apps = apps_session
    alice, bob = cluster.user_token("alice"), cluster.user_token("bob")
    status, share = json_request(
        "POST", url_for("/hub/api/dsportal/shares"), {"server": "", "user": "bob", "hours": 1}, token=alice
    )
    assert status == 200, share
    answers = []
    try:
        # as a header, in the query (JupyterHub takes ?token= too), and once as an event stream (which
        # jupyter-server-proxy would pass on as it comes, past the rules on the app's headers)
        for accept in ("*/*", "text/event-stream"):
            request = urllib.request.Request(
                url_for(apps["dash"]["url"] + f"echo?token={bob}&_xsrf=x&keep=1"),
                headers={
                    "Authorization": f"token {bob}",
                    "X-XSRFToken": "x",
                    "Accept": accept,
                    "Cookie": "jupyterhub-user-alice=bobs-oauth; jupyterhub-session-id=s; _xsrf=x; theme=dark",
                },
            )
            with urllib.request.urlopen(request, timeout=30) as answer:
                answers.append((json.loads(answer.read()), answer.headers))
    finally:
        json_request("DELETE", url_for("/hub/api/dsportal/shares?server=&user=bob"), token=alice)
    for seen, headers in answers:
        sent = {k.lower(): v for k, v in seen["headers"].items()}
        assert "authorization" not in sent and "x-xsrftoken" not in sent and bob not in json.dumps(seen), seen
        assert (seen["cookies"], seen["query"]) == ({"theme": "dark"}, "keep=1"), seen
        assert [c.split("=")[0] for c in headers.get_all("Set-Cookie")] == ["dash_own"], headers
        policy = ", ".join(headers.get_all("Content-Security-Policy"))
        # on the session's origin an app answers a client with a token, never as a page of that origin
        assert "frame-ancestors 'self'" in policy and "sandbox" in policy, policy


def test_using_an_app_is_use_of_the_session(apps_session):
    """What the browser sends an app counts as use (the idle culler reads it); the session reports it at
    /api/status, whose own polling does not count."""
    cluster, apps = apps_session

    def last_activity() -> str:
        return cluster.request("GET", "/user/alice/api/status")[1]["last_activity"]

    before = last_activity()
    assert last_activity() == before  # asking is no use
    assert cluster.request("GET", apps["streamlit"]["url"] + "_stcore/health")[0] == 200
    assert last_activity() > before


def test_the_sessions_usage_counts_its_apps(apps_session):
    """The session's tally (spawner/jupyter/usage/sampler.py) reads its server's process tree: the apps are in it."""
    cluster, apps = apps_session
    server = [p for p in psutil.process_iter(["name", "username", "cmdline"]) if is_session_server(p)]
    assert len(server) == 1, server
    children = server[0].children(recursive=True)
    for needle in ("code-server", "mlflow", "streamlitapp", "dashapp"):
        assert any(needle in " ".join(c.cmdline()) for c in children), (needle, [c.cmdline() for c in children])
    apps_mib = sum(c.memory_info().rss for c in children) // 2**20
    summary = cluster.wait(
        lambda: (
            (s := cluster.request("GET", "/user/alice/dsportal/session/usage")[1]).get("memory_peak_mib", 0) >= apps_mib
            and s
        ),
        60,
        f"the session's usage counts the apps' {apps_mib} MiB",
    )
    print(
        f"apps and kernels below the server: {apps_mib} MiB; the session's peak so far {summary['memory_peak_mib']} MiB"
    )


def test_vscode_and_the_apps_find_the_users_python_first(apps_session):
    """VS Code's terminal and an app's subprocesses run `python` as the Python 3 kernel does: the user's layer
    (their %pip packages) on the portal's environment."""
    layer = f"/home/alice/.local/share/dsportal/python{sys.version_info[0]}.{sys.version_info[1]}/bin"
    for needle in ("code-server", "spawner.job.apps.streamlitapp"):
        found = [
            p
            for p in psutil.process_iter(["username", "cmdline"])
            if p.info["username"] == "alice" and needle in " ".join(p.info["cmdline"] or [])
        ]
        assert found, needle
        assert found[0].environ()["PATH"].split(":")[0] == layer, (needle, found[0].environ()["PATH"])


def is_session_server(process) -> bool:
    """alice's Jupyter server: the dsportal-singleuser that the session's port keeper (another) forked."""
    cmdline = " ".join(process.info["cmdline"] or [])
    parent = process.parent()
    return (
        process.info["username"] == "alice"
        and "dsportal-singleuser" in cmdline
        and parent is not None
        and "dsportal-singleuser" in " ".join(parent.cmdline())
    )


BOBS_SERVER = """
import http.server, sys
class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<script>bob's script on alice's origin</script>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Service-Worker-Allowed", "/")
        self.end_headers()
        self.wfile.write(body)
server = http.server.HTTPServer(("127.0.0.1", 0), Page)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def test_another_user_cannot_put_a_page_on_alices_origin_through_her_apps(apps_session, tmp_path):
    """bob serves a page on a loopback port of the node, and writes an .html file: neither may come back from
    alice's origin (its script would drive her session), whatever page sent her browser there."""
    cluster, apps = apps_session
    node = node_of(cluster.job_of("alice"))  # bob's terminal on her node: his server, his file in its /tmp
    bob_page = subprocess.Popen(
        on_node(node, ["/usr/bin/python3", "-c", BOBS_SERVER], user="bob"), stdout=subprocess.PIPE, text=True
    )
    try:
        port = int(bob_page.stdout.readline())
        vscode = apps["vscode"]["url"]
        for route in (f"proxy/{port}/", f"absproxy/{port}/"):  # code-server's port proxy is off
            status, page = cluster.request("GET", vscode + route)
            assert "bob's script" not in str(page), (route, status)
        subprocess.run(
            on_node(node, ["tee", "/tmp/bob-page.html"], user="bob"),
            input="<script>bob</script>",
            text=True,
            stdout=subprocess.DEVNULL,
            check=True,
            timeout=30,
        )
        as_page = {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
        status, _ = request_with(vscode + "vscode-remote-resource?path=/tmp/bob-page.html", as_page)
        assert status == 403
        # bob's page (his own origin, same site) sends alice's browser to her app: a page with a link, nothing
        # of the app; a request its script makes there: refused
        from_bob = {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
        status, page = request_with(apps["streamlit"]["url"], from_bob)
        assert status == 200 and "Open your app?" in page and "Streamlit" not in page, page[:300]
        status, _ = request_with(
            apps["mlflow"]["url"] + "ajax-api/2.0/mlflow/experiments/search?max_results=1",
            {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors"},
        )
        assert status == 403
    finally:
        bob_page.terminate()
        bob_page.wait(timeout=30)
        subprocess.run(on_node(node, ["rm", "-f", "/tmp/bob-page.html"]), timeout=30)


PLANTED = """
import os, sys
open("/mnt/isilon/team-planted-ran", "a").write(f"{os.getuid()} {sys.argv}\\n")
"""


def test_modules_planted_in_a_shared_folder_never_run_as_alice(apps_session):
    """A team folder others can write to, holding alice's runs and her app: bob plants mlflow.py, uvicorn.py and
    gunicorn.py and streamlit.py there.  Python, uvicorn and gunicorn started there would import them before the
    installed ones (they did, as alice).  On the shared storage, where a team keeps such a folder: a node's /tmp is
    that node's alone (before separate hosts, this test's folder in /tmp was the same on every node only by chance)."""
    cluster, _ = apps_session
    team, mark = "/mnt/isilon/team-folder", "/mnt/isilon/team-planted-ran"
    subprocess.run(["rm", "-rf", team, mark], check=True, timeout=30)
    subprocess.run(["install", "-d", "-m", "1777", team], check=True, timeout=30)
    for name in ("mlflow.py", "uvicorn.py", "gunicorn.py", "streamlit.py"):
        subprocess.run(
            ["sudo", "-u", "bob", "tee", f"{team}/{name}"],
            input=PLANTED,
            text=True,
            stdout=subprocess.DEVNULL,
            check=True,
            timeout=30,
        )
    as_alice("/opt/dsportal/venv/bin/python", "-c", MLFLOW_RUN.replace(f"{FOLDER}/runs", team))
    write_as_alice(f"{team}/team_app.py", STREAMLIT_APP)
    opened = []
    try:
        for kind, target in (("mlflow", team), ("auto", f"{team}/team_app.py")):
            status, app = cluster.request("POST", API, {"kind": kind, "target": target}, timeout=120)
            assert status == 201, (kind, app)
            opened.append(app)
        assert cluster.request("GET", opened[0]["url"])[0] == 200
        assert cluster.request("GET", opened[1]["url"] + "_stcore/health") == (200, "ok")
        assert not Path(mark).exists(), Path(mark).read_text()
    finally:
        for app in opened:
            cluster.request("DELETE", f"{API}/{app['id']}")
        subprocess.run(["rm", "-rf", team, mark], timeout=30)


def request_with(path: str, headers: dict) -> tuple[int, str]:
    """GET `path` with the admin's token and these headers (as a browser would send them): (status, text)."""
    import urllib.error

    from tests.support.cluster import TOKEN_FILE

    request = urllib.request.Request(
        url_for(path), headers={"Authorization": f"token {TOKEN_FILE.read_text().strip()}", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


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
    assert len(app_sockets(node_of(cluster.job_of("alice")))) == 3
    gunicorns = subprocess.run(["pgrep", "-u", "alice", "gunicorn"], capture_output=True, text=True, timeout=30)
    assert gunicorns.stdout == ""  # its whole process group is gone
    status, page = cluster.request("GET", "/user/alice/dsportal/apps/")
    assert status == 200 and "hello.py" in page and "board.py" not in page
    status, again = cluster.request("POST", API, {"kind": "auto", "target": "apps-test/board.py"}, timeout=120)
    assert status == 201 and again["id"] != dash["id"], again  # a new address at each start, none to guess
    apps["dash"] = again
    assert cluster.request("GET", again["url"] + "_dash-layout")[0] == 200
    assert cluster.request("GET", dash["url"] + "_dash-layout")[0] == 404
