"""The session's apps: the commands that serve them on Unix sockets, which a node offers, the proxy's rules for
cookies, and the life of an app process (started, answering, ended, stopped; never restarted)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import textwrap
from pathlib import Path

import pytest
from tornado.httputil import HTTPHeaders

from spawner.jupyter.apps.catalog import MLFLOW_ENV, VSCODE_SETTINGS, Launch, framework_of, launch, offered_kinds
from spawner.jupyter.apps.handlers import parse_open
from spawner.jupyter.apps.instances import AppError, Apps, TooManyError
from spawner.jupyter.apps.proxy import (
    cookies_for_app,
    fetch_verdict,
    query_for_app,
    secure_headers,
    sets_session_cookie,
)

SOCK = "/tmp/s/rt/apps/abc.sock"
PREFIX = "/user/alice/dsportal/apps/abc/"


def test_vscode_serves_on_the_socket_without_a_password_of_its_own():
    spec = launch("vscode", "/home/alice/proj", SOCK, PREFIX, "/py-folder/python", "/opt/cs/code-server", "/home/alice")
    assert spec == Launch(
        argv=[
            "/opt/cs/code-server",
            "--socket",
            SOCK,
            "--socket-mode",
            "600",
            "--auth",
            "none",
            "--disable-proxy",
            "--disable-telemetry",
            "--disable-update-check",
            "--ignore-last-opened",
            "--user-data-dir",
            "/home/alice/.local/share/dsportal/code-server",
            "--extensions-dir",
            "/home/alice/.local/share/dsportal/code-server/extensions",
            "--config",
            "/home/alice/.local/share/dsportal/code-server/config.yaml",
            "/home/alice/proj",
        ],
        env={"PATH": "/py-folder"},
        cwd="/home/alice/proj",
        absolute=False,
        private=["/home/alice/.local/share/dsportal/code-server"],
        files={"/home/alice/.local/share/dsportal/code-server/User/settings.json": VSCODE_SETTINGS},
    )
    assert json.loads(VSCODE_SETTINGS) == {"task.allowAutomaticTasks": "off", "security.workspace.trust.enabled": True}


def test_mlflow_serves_the_folders_database_under_its_prefix_on_uvicorns_socket():
    spec = launch("mlflow", "/home/alice/runs dir", "/tmp/a b/x.sock", PREFIX, "/py", "cs", "/home/alice")
    assert spec.argv == [
        "/py",
        "-m",
        "mlflow",
        "server",
        "--backend-store-uri",
        "sqlite:////home/alice/runs dir/mlflow.db",
        "--static-prefix",
        "/user/alice/dsportal/apps/abc",
        "--workers",
        "1",
        "--allowed-hosts",
        "*",
        "--uvicorn-opts",
        # MLflow splits it as a shell would: the quotes keep the paths whole; uvicorn's app dir is private
        "--uds '/tmp/a b/x.sock' --app-dir '/tmp/a b'",
    ]
    assert (spec.cwd, spec.absolute, spec.env) == ("/home/alice/runs dir", True, {"PATH": "/", **MLFLOW_ENV})
    assert MLFLOW_ENV == {
        "PYTHONSAFEPATH": "1",  # the folder's mlflow.py never runs, nor a uvicorn.py when MLflow starts uvicorn
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
    }


def test_streamlit_and_dash_run_the_users_file_on_the_socket():
    streamlit = launch("streamlit", "/home/alice/app/main.py", SOCK, PREFIX, "/layer/python", "cs", "/home/alice")
    assert streamlit.argv == [
        "/layer/python",
        "-P",  # the app's folder never shadows uvicorn or what it imports
        "-m",
        "uvicorn",
        "--app-dir",  # nor what uvicorn imports the application from
        "/tmp/s/rt/apps",
        "--uds",
        SOCK,
        "--factory",
        "spawner.job.apps.streamlitapp:make",
    ]
    assert streamlit.env["DSPORTAL_APP_FILE"] == "/home/alice/app/main.py"
    assert (streamlit.cwd, streamlit.absolute) == ("/home/alice/app", False)
    dash = launch("dash", "/home/alice/d.py", SOCK, PREFIX, "/layer/python", "cs", "/home/alice")
    assert dash.argv[:7] == ["/layer/python", "-P", "-m", "gunicorn", "--bind", f"unix:{SOCK}", "--workers"]
    assert dash.argv[-6:] == [
        "--no-control-socket",
        "--config",
        "/dev/null",
        "--chdir",  # gunicorn puts its folder first on the path: the private one, not the app's
        "/tmp/s/rt/apps",
        "spawner.job.apps.dashapp:make()",
    ]
    assert dash.env == {
        "DSPORTAL_APP_FILE": "/home/alice/d.py",
        "DASH_REQUESTS_PATHNAME_PREFIX": PREFIX,
        "PATH": "/layer",
    }
    with_path = launch("dash", "/home/alice/d.py", SOCK, PREFIX, "/layer/python", "cs", "/home/alice", "/usr/bin:/bin")
    assert with_path.env["PATH"] == "/layer:/usr/bin:/bin"  # the user's Python first


@pytest.mark.parametrize(
    "source, framework",
    [
        ("import streamlit as st\nst.title('x')", "streamlit"),
        ("from dash import Dash, html\napp = Dash()", "dash"),
        ("import os\n  import dash.html\n", "dash"),
        ("# import streamlit\nprint(1)", None),
        ("import streamlit_extras", None),
        ("x = 'import dash'", None),
    ],
)
def test_the_framework_of_a_file(source, framework):
    assert framework_of(source) == framework


def test_a_node_offers_the_apps_it_has_and_says_what_is_missing():
    offered, notes = offered_kinds(
        ("vscode", "mlflow", "streamlit", "gradio"),
        "code-server",
        which=lambda name: None,
        has_module=lambda name: name != "streamlit",
    )
    assert offered == ["mlflow"]
    assert notes == [
        "app vscode left out: code-server is not on this node (apps.code_server)",
        "app streamlit left out: the Python package streamlit is not installed",
        "app gradio left out: this version of the session does not know it",
    ]


@pytest.mark.parametrize(
    "body, error",
    [
        ({"kind": "vscode", "target": "x"}, None),
        ({"kind": "auto", "target": "app.py"}, None),
        ({"kind": "vscode"}, 'Send {"kind"'),
        ({"kind": "vscode", "target": "x", "more": 1}, 'Send {"kind"'),
        ({"kind": "gradio", "target": "x"}, "kind must be one of vscode, mlflow, streamlit, dash, auto"),
        ({"kind": "vscode", "target": 3}, "target must be a path"),
        ({"kind": "vscode", "target": "x" * 5000}, "target must be a path"),
        ([1], 'Send {"kind"'),
    ],
)
def test_what_a_start_request_must_send(body, error):
    if error is None:
        assert parse_open(body) == (body["kind"], body["target"])
    else:
        with pytest.raises(ValueError, match=error.replace("{", r"\{")):
            parse_open(body)


def test_the_app_gets_the_browsers_own_cookies_and_never_the_sessions():
    header = "jupyterhub-user-alice=tok; _xsrf=2|x; _streamlit_xsrf=s; jupyterhub-session-id=i; username-h=u; k=v"
    assert cookies_for_app(header) == "_streamlit_xsrf=s; k=v"
    # with per-user origins the hub's and the server's cookies carry the __Host- prefix
    prefixed = "__Host-jupyterhub-user-alice=tok; __Host-jupyterhub-session-id=i; __Secure-_xsrf=x; __Host-k=v"
    assert cookies_for_app(prefixed) == "__Host-k=v"
    assert cookies_for_app("") == ""


@pytest.mark.parametrize(
    "set_cookie, refused",
    [
        ("_streamlit_xsrf=abc; Path=/", False),
        ("jupyterhub-user-alice=forged; Path=/user/alice/", True),
        ("__Host-jupyterhub-user-alice=forged; Path=/; Secure", True),
        ("__Host-app=1; Path=/; Secure", False),
        ("__HOST-JupyterHub-user-alice=forged; Path=/; Secure", True),  # browsers match prefixes in any case
        ("theme=dark; Domain=localhost; Path=/", True),  # for the hub's and every user's origin
        ("_xsrf=forged", True),
        ("jupyterhub-hub-login=x; Domain=example.org; Path=/hub/", True),
        ("=; garbage", True),
    ],
)
def test_an_app_may_not_set_the_sessions_cookies(set_cookie, refused):
    assert sets_session_cookie(set_cookie) is refused


def test_the_answers_session_cookies_are_dropped_its_service_worker_kept_to_the_app_and_framing_is_ours():
    headers = HTTPHeaders()
    headers.add("Set-Cookie", "a=1")
    headers.add("Set-Cookie", "jupyterhub-user-alice=forged")
    headers.add("Service-Worker-Allowed", "/")
    headers.add("Content-Security-Policy", "default-src 'self'")
    headers.add("Content-Type", "text/html")
    headers.add("Clear-Site-Data", '"cookies"')
    secure_headers(headers, "/user/alice/dsportal/apps/abc/")
    assert "Clear-Site-Data" not in headers
    assert headers.get_list("Set-Cookie") == ["a=1"]
    assert headers.get_list("Service-Worker-Allowed") == ["/user/alice/dsportal/apps/abc/"]  # the app's pages only
    assert headers.get_list("Content-Security-Policy") == ["default-src 'self'", "frame-ancestors 'self'"]
    assert headers["Content-Type"] == "text/html"
    sandboxed = HTTPHeaders()
    secure_headers(sandboxed, "/p/", sandbox=True)  # code-server's any-file route: never a page of the origin
    assert sandboxed.get_list("Content-Security-Policy") == ["frame-ancestors 'self'", "sandbox"]


def test_the_query_loses_the_credentials_jupyter_takes_there():
    assert query_for_app("token=GUEST&a=1&_xsrf=x&b=&folder=%2Fhome") == "a=1&b=&folder=%2Fhome"
    assert query_for_app("") == ""


@pytest.mark.parametrize(
    "headers, kind, path, with_token, verdict",
    [
        ({}, "vscode", "/", True, "ok"),  # a client with a token, no browser
        ({}, "vscode", "/", False, "old browser"),  # cookies, and no word on where it comes from
        ({"Upgrade": "websocket"}, "streamlit", "/_stcore/stream", False, "ok"),  # Chromium's: its Origin is checked
        ({"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate"}, "mlflow", "/", False, "ok"),
        ({"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate"}, "mlflow", "/", False, "ok"),  # typed
        ({"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate"}, "vscode", "/proxy/47123/", False, "confirm"),
        ({"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, "streamlit", "/", True, "confirm"),
        ({"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors"}, "mlflow", "/ajax-api/x", False, "refuse"),
        (
            {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "websocket"},
            "streamlit",
            "/_stcore/stream",
            False,
            "refuse",
        ),
        ({"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}, "dash", "/", False, "refuse"),
        (
            {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Dest": "document"},
            "vscode",
            "/vscode-remote-resource?path=/tmp/bob.html",
            False,
            "refuse",
        ),
        (
            {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Dest": "image"},
            "vscode",
            "/vscode-remote-resource",
            False,
            "ok",
        ),
    ],
)
def test_where_a_request_comes_from_decides_whether_it_reaches_the_app(headers, kind, path, with_token, verdict):
    assert fetch_verdict(HTTPHeaders(headers), kind, path, with_token) == verdict


# --- an app's life, with a small server of our own in place of a framework's ---------------------------

SERVER = textwrap.dedent(
    """
    import os, socket, sys, time
    if os.environ.get("FAIL"):
        print("cannot start: " + os.environ["FAIL"], flush=True)
        sys.exit(3)
    time.sleep(float(os.environ.get("DELAY", "0")))
    s = socket.socket(socket.AF_UNIX)
    s.bind(sys.argv[1])
    s.listen()
    while True:
        c, _ = s.accept()
        try:
            if c.recv(1000):  # the start's probe connects and closes at once
                c.sendall(b"HTTP/1.0 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nok")
        except OSError:
            pass
        c.close()
    """
)


class SmallApps(Apps):
    """Apps whose every kind is the small server above (the seam: `_launch`)."""

    env: dict = {}

    def _launch(self, id_, kind, path):
        sock = str(self.folder / f"{id_}.sock")
        return Launch([sys.executable, "-c", SERVER, sock], dict(self.env), str(path.parent), False)


@pytest.fixture
def apps(tmp_path):
    (tmp_path / "home" / "runs").mkdir(parents=True)
    (tmp_path / "home" / "runs" / "mlflow.db").write_bytes(b"")
    (tmp_path / "home" / "app.py").write_text("import streamlit as st\n")
    (tmp_path / "home" / "plain.py").write_text("print(1)\n")
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    made = SmallApps(
        tmp_path / "home",
        runtime,
        "/user/alice/",
        ["vscode", "mlflow", "streamlit"],
        sys.executable,
        "code-server",
        max_running=2,
        start_seconds=10,
        environ={
            "HOME": str(tmp_path / "home"),
            "PATH": os.environ["PATH"],
            "JUPYTERHUB_HOST": "https://hub.example.org:8000",
            "JUPYTERHUB_USER": "alice",
            "SLURM_JOB_ID": "41",
        },
    )
    made.env = {}
    routed = []

    async def router(app_id):  # the hub's route (spawner/hub/apps/): here, a label of the app's own
        routed.append(app_id)
        return f"https://apps--{app_id * 2}.hpc.example.org:8000"

    async def unrouter(app_id):
        routed.remove(app_id)

    made.router, made.unrouter, made.routed = router, unrouter, routed
    return made


def run(coroutine):
    return asyncio.run(coroutine)


def test_an_app_starts_on_a_private_socket_answers_and_stops(apps):
    async def scenario():
        app, started = await apps.open("auto", "app.py")
        assert started and app.kind == "streamlit" and app.state == "running"
        assert app.url == f"/user/alice/dsportal/apps/{app.id}/"
        assert re.fullmatch(r"[0-9a-f]{12}", app.id)
        assert oct(os.stat(apps.folder).st_mode & 0o777) == "0o700"
        reader, writer = await asyncio.open_unix_connection(app.socket)
        writer.write(b"GET / HTTP/1.0\r\n\r\n")
        assert (await reader.read()).endswith(b"ok")
        again, started_again = await apps.open("streamlit", "app.py")
        assert (again is app, started_again) == (True, False)  # one app per file
        pid = app.process.pid
        assert await apps.stop(app.id)
        assert app.process.returncode is not None and not Path(app.socket).exists()
        with pytest.raises(ProcessLookupError):
            os.killpg(pid, 0)  # its whole group is gone
        assert apps.list() == [] and not await apps.stop(app.id)

    run(scenario())


def test_an_app_that_exits_stays_ended_and_is_not_restarted(apps):
    async def scenario():
        app, _ = await apps.open("vscode", "runs")
        os.killpg(app.process.pid, 9)
        for _ in range(100):
            if app.state == "ended":
                break
            await asyncio.sleep(0.05)
        assert (app.state, app.ended) == ("ended", "exited with code -9")
        await asyncio.sleep(0.5)
        assert app.process.returncode == -9 and apps.get(app.id) is app  # still listed, not started again
        again, started = await apps.open("vscode", "runs")  # the user starts it again
        assert started and again.state == "running"
        await apps.stop(again.id)

    run(scenario())


def test_an_app_that_fails_to_start_says_why_with_its_log(apps):
    apps.env = {"FAIL": "no such module"}

    async def scenario():
        with pytest.raises(AppError, match="VS Code ended while starting. Its log:\ncannot start: no such module"):
            await apps.open("vscode", "runs")

    run(scenario())


def test_an_app_that_never_answers_is_stopped_at_its_deadline(apps):
    apps.env = {"DELAY": "30"}
    apps.start_seconds = 0.5

    async def scenario():
        with pytest.raises(AppError, match="did not answer within 0 s and was stopped"):
            await apps.open("vscode", "runs")
        assert apps.list() == []

    run(scenario())


def test_at_most_max_running_apps(apps):
    async def scenario():
        await apps.open("vscode", "runs")
        await apps.open("mlflow", "runs")
        with pytest.raises(TooManyError, match="2 apps are running, the most a session may run"):
            await apps.open("streamlit", "app.py")
        for app in apps.list():
            await apps.stop(app.id)

    run(scenario())


@pytest.mark.parametrize(
    "kind, target, message",
    [
        ("dash", "app.py", "'dash' is not an app this session offers (offered: VS Code, MLflow, Streamlit app)"),
        ("vscode", "app.py", "app.py is not a folder; choose a folder for VS Code"),
        ("vscode", "nowhere", "nowhere is not a folder"),
        ("streamlit", "runs", "runs is not a file; choose the Python file of your app"),
        ("auto", "plain.py", "plain.py imports neither streamlit nor dash"),
        ("auto", "runs", "runs is not a file"),
        ("mlflow", ".", ". holds no MLflow runs (mlflow.db): choose the folder your notebook or script ran in"),
        ("vscode", "runs\x00", "Choose a folder for VS Code"),
    ],
)
def test_what_cannot_be_opened_says_what_to_choose(apps, kind, target, message):
    with pytest.raises(AppError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run(apps.open(kind, target))


# --- the apps' own origin (spawner/jupyter/apps/origin.py, spawner/hub/apps/proxy.py) ---


def test_each_app_has_an_origin_of_its_own_under_the_hubs_host():
    from spawner.hub.apps.proxy import MARK, app_route, route_data
    from spawner.jupyter.apps.origin import APPS_HOST, per_user_origins, session_base

    label = "apps--" + "0123456789ab" * 2
    route = app_route("https://hpc.example.org:8000", label, "/user/alice/", "aaaaaaaaaaaa", "1272")
    # the hub's route: the app's own host, the app's own path only
    assert route.spec == f"{label}.hpc.example.org/user/alice/dsportal/apps/aaaaaaaaaaaa/"
    assert route.origin == f"https://{label}.hpc.example.org:8000"
    assert route_data("alice", "", "aaaaaaaaaaaa", route) == {
        MARK: "alice",
        "server_name": "",
        "app": "aaaaaaaaaaaa",
        "job": "1272",
        "origin": route.origin,
    }
    assert APPS_HOST.fullmatch(f"{label}.hpc.example.org")
    assert not APPS_HOST.fullmatch("alice.hpc.example.org") and not APPS_HOST.fullmatch("apps--x.hpc.example.org")
    callback = "https://alice.hpc.example.org:8000/user/alice/oauth_callback"
    assert session_base({"JUPYTERHUB_OAUTH_CALLBACK_URL": callback}) == "https://alice.hpc.example.org:8000"
    assert per_user_origins({"JUPYTERHUB_HOST": "https://hpc.example.org:8000"})
    assert not per_user_origins({"JUPYTERHUB_HOST": ""})  # one origin for everyone: no apps


def test_an_app_is_routed_at_an_origin_of_its_own_before_it_starts(apps):
    async def scenario():
        app, started = await apps.open("auto", "app.py")
        assert apps.routed == [app.id] and app.origin == f"https://apps--{app.id * 2}.hpc.example.org:8000"
        await apps.stop(app.id)
        assert apps.routed == []  # its route went with it

    run(scenario())

    async def refused(app_id):
        raise RuntimeError("Only a running session's own token may route its apps.")

    apps.router = refused
    with pytest.raises(AppError, match="could not give .* an address of its own: Only a running session"):
        run(apps.open("auto", "app.py"))
    assert [a for a in apps.list() if a.state != "ended"] == []  # nothing started without its origin


def test_a_ticket_is_spent_once_by_its_own_app_and_a_pass_stands_for_its_token():
    from spawner.jupyter.apps.origin import MAX_PASSES, PASS_SECONDS, TICKET_SECONDS, Entries

    now = [100.0]
    entries = Entries(clock=lambda: now[0])
    ticket = entries.issue("aaaaaaaaaaaa", "tok-alice", "/user/alice/dsportal/apps/aaaaaaaaaaaa/?folder=x")
    assert entries.enter(ticket, "bbbbbbbbbbbb") is None  # another app's door: refused, and the ticket is spent
    assert entries.enter(ticket, "aaaaaaaaaaaa") is None
    ticket = entries.issue("aaaaaaaaaaaa", "tok-alice", "/next")
    key, found = entries.enter(ticket, "aaaaaaaaaaaa")
    assert found.next_uri == "/next"
    assert entries.enter(ticket, "aaaaaaaaaaaa") is None  # once only
    assert entries.token(key, "aaaaaaaaaaaa") == "tok-alice"
    assert entries.token(key, "bbbbbbbbbbbb") is None  # a pass opens its own app only
    assert entries.token("made-up", "aaaaaaaaaaaa") is None
    late = entries.issue("aaaaaaaaaaaa", "tok-alice", "/next")
    now[0] += TICKET_SECONDS
    assert entries.enter(late, "aaaaaaaaaaaa") is None  # a minute at most
    now[0] += PASS_SECONDS
    assert entries.token(key, "aaaaaaaaaaaa") is None
    keys = [entries.enter(entries.issue("cccccccccccc", "t", "/"), "cccccccccccc")[0] for _ in range(MAX_PASSES + 5)]
    assert entries.token(keys[0], "cccccccccccc") is None and entries.token(keys[-1], "cccccccccccc") == "t"
    entries.forget_app("cccccccccccc")  # a stopped app's passes go with it
    assert entries.token(keys[-1], "cccccccccccc") is None


def test_apps_are_refused_without_an_origin_of_their_own(apps):
    apps.per_user_origins = False
    with pytest.raises(AppError, match="origin of their own"):
        run(apps.open("auto", "app.py"))


def test_the_hub_keeps_each_apps_route_while_its_session_job_runs(monkeypatch):
    from types import SimpleNamespace

    from spawner.hub.apps.proxy import MARK, MAX_APP_ROUTES, PortalProxy, TooManyRoutes, running_job

    def spawner(ready, job_id, name=""):
        server = SimpleNamespace(base_url=f"/user/alice/{name}", host="http://node001:40000")
        return SimpleNamespace(ready=ready, job_id=job_id, server=server, name=name)

    alice = SimpleNamespace(name="alice", spawners={"": spawner(True, "41"), "gpu": spawner(False, "42", "gpu/")})
    users = {"alice": alice}
    assert running_job(users, "alice", "") == "41"
    assert running_job(users, "alice", "gpu") == "" and running_job(users, "bob", "") == ""

    added, deleted = {}, []

    class Recorded(PortalProxy):
        async def add_route(self, spec, target, data):
            added[spec] = (target, data)

        async def delete_route(self, spec):
            deleted.append(spec)
            added.pop(spec, None)

    proxy = Recorded.__new__(Recorded)  # no JupyterHub around it: its routes only
    proxy.app_routes = {}
    proxy.app = SimpleNamespace(subdomain_host="https://hpc.example.org:8000")

    async def scenario():
        first = await proxy.route_app(alice, alice.spawners[""], "aaaaaaaaaaaa")
        assert await proxy.route_app(alice, alice.spawners[""], "aaaaaaaaaaaa") == first  # asked again: the same
        other = await proxy.route_app(alice, alice.spawners[""], "bbbbbbbbbbbb")
        assert other != first and first.startswith("https://apps--") and len(added) == 2
        for i in range(MAX_APP_ROUTES - 2):
            await proxy.route_app(alice, alice.spawners[""], f"{i:012x}")
        assert len(added) == MAX_APP_ROUTES
        with pytest.raises(TooManyRoutes):  # a live app's route is never taken for another's
            await proxy.route_app(alice, alice.spawners[""], "dddddddddddd")
        await proxy.unroute_app(alice, alice.spawners[""], "bbbbbbbbbbbb")  # an app stopped: room for one
        assert len(added) == MAX_APP_ROUTES - 1 and deleted
        await proxy.route_app(alice, alice.spawners[""], "dddddddddddd")
        for target, data in added.values():
            assert target == "http://node001:40000" and data["job"] == "41" and data["server_name"] == ""

    run(scenario())

    # the periodic check (JupyterHub's own part of it aside): a restarted hub adopts the routes of its running
    # sessions' jobs, deletes those of jobs that ended, and puts back what a restarted proxy lost
    from jupyterhub.proxy import ConfigurableHTTPProxy

    async def nothing(*args, **kwargs):
        return None

    monkeypatch.setattr(ConfigurableHTTPProxy, "check_routes", nothing)
    kept = dict(added)
    lost = next(iter(kept))
    proxy.app_routes = {}  # a restarted hub
    added.pop(lost)  # ... and a route the proxy lost meanwhile
    ended = {"target": "http://node001:40000", "data": {MARK: "alice", "server_name": "", "app": "c" * 12}}
    ended["data"].update(job="40", origin="https://apps--" + "c" * 24 + ".hpc.example.org:8000")
    routes = {spec: {"target": t, "data": d} for spec, (t, d) in added.items()}
    routes["apps--" + "c" * 24 + ".hpc.example.org/user/alice/dsportal/apps/cccccccccccc/"] = ended
    run(proxy.check_routes({7: alice}, {}, routes))
    assert len(proxy.app_routes[("alice", "")]) == len(kept) - 1  # adopted: the lost one is the hub's no more
    assert deleted[-1].startswith("apps--" + "c" * 24)  # the ended job's


def test_a_sessions_route_added_as_the_session_ends_is_removed_again():
    # JupyterHub checks the session once, then adds its route with a request it retries for half a minute after a
    # proxy's restart: a session that ended meanwhile must not stay routed to a port anyone may take
    import logging
    from types import SimpleNamespace

    from spawner.hub.apps.proxy import PortalProxy

    routes = {}
    spawner = SimpleNamespace(
        name="", job_id="41", pending=None, _log_name="alice", proxy_spec="/user/alice/", ready=True
    )
    spawner.server = SimpleNamespace(host="http://node001:40000")
    alice = SimpleNamespace(name="alice", spawners={"": spawner})

    class Racing(PortalProxy):
        async def add_route(self, spec, target, data):
            routes[spec] = target
            if ending:
                spawner.server, spawner.ready = None, False  # its stop ran while the request was retried

        async def delete_route(self, spec):
            routes.pop(spec, None)

    proxy = Racing.__new__(Racing)
    proxy.app_routes = {}
    proxy.log = logging.getLogger("test")
    ending = False
    run(proxy.add_user(alice, ""))
    assert routes == {"/user/alice/": "http://node001:40000"}  # a running session: routed
    routes.clear()
    ending = True
    run(proxy.add_user(alice, ""))
    assert routes == {}  # removed again


def test_a_route_is_named_to_configurable_http_proxys_api_as_it_keeps_it():
    from spawner.hub.apps.proxy import chp_path

    assert chp_path("/") == "/"
    assert chp_path("/hub/") == "/hub"
    assert chp_path("alice.hpc.example.org/user/alice/") == "/alice.hpc.example.org/user/alice"
    assert chp_path("/user/alice/gpu/") == "/user/alice/gpu"


def test_a_route_is_asked_for_one_app_by_its_id():
    from spawner.hub.apps.handlers import parse_route_body

    assert parse_route_body(b'{"app": "0123456789ab"}') == "0123456789ab"
    for body in (b"", b"[]", b'{"app": 1}', b'{"app": "x"}', b'{"app": "0123456789ab", "to": "x"}', b"{"):
        with pytest.raises(ValueError):
            parse_route_body(body)


def test_an_apps_pass_never_reaches_an_app_nor_is_set_by_one():
    """The pass stands for the visitor's login at that app: an app the owner's guest wrote would keep it."""
    from spawner.jupyter.apps.proxy import is_session_cookie

    assert is_session_cookie("__Host-dsportal-app-0123456789ab")
    assert cookies_for_app("__Host-dsportal-app-0123456789ab=k; theme=dark") == "theme=dark"
    assert sets_session_cookie("__Host-dsportal-app-0123456789ab=planted; Path=/; Secure")
