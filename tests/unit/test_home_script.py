"""The home page's script (templates/static/): its rules' JavaScript tests, the hub's route, the page's reference."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import jinja2
from tornado import web
from tornado.httpclient import AsyncHTTPClient
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

from spawner.contract import data_dir
from spawner.hub.base import pagescripts as script
from spawner.hub.base.requestlimits import SERVICES_KEY
from spawner.hub.home import handlers
from spawner.hub.home.page import HomePage

ROOT = Path(__file__).resolve().parents[2]
TEN_YEARS = 86400 * 365 * 10  # tornado's StaticFileHandler.CACHE_MAX_AGE


def test_the_home_pages_rules_pass_their_javascript_tests():
    node = shutil.which("node") or "/usr/bin/node"
    assert Path(node).exists(), "node (20 or later) is needed for tests/js: install nodejs"
    run = subprocess.run([node, "--test", "tests/js/"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert re.search(r"^# pass [1-9]", run.stdout, re.M) and re.search(r"^# fail 0$", run.stdout, re.M), run.stdout


def a_hub_serving_the_script() -> tuple[HTTPServer, int]:
    """A tornado server with the home page's script routes and the request limits' settings."""
    hub = SimpleNamespace(api_max_body_bytes=65536, api_rate_per_minute=300, api_burst=150, proxy_addresses=[])
    app = web.Application(handlers.handlers(), **{SERVICES_KEY: SimpleNamespace(settings=SimpleNamespace(hub=hub))})
    sockets = bind_sockets(0, "127.0.0.1")
    server = HTTPServer(app)
    server.add_sockets(sockets)
    return server, sockets[0].getsockname()[1]


async def test_the_hub_serves_the_scripts_as_javascript_kept_for_years_when_versioned():
    server, port = a_hub_serving_the_script()
    client = AsyncHTTPClient()
    try:
        for name in ("home.js", "homerules.js"):
            answer = await client.fetch(f"http://127.0.0.1:{port}/dsportal/static/{name}?v={script.version()}")
            assert answer.code == 200
            assert answer.headers["Content-Type"] == "text/javascript; charset=utf-8"
            assert answer.headers["Cache-Control"] == f"max-age={TEN_YEARS}"
            assert answer.body == (data_dir("templates") / "static" / name).read_bytes()
        unversioned = await client.fetch(f"http://127.0.0.1:{port}/dsportal/static/home.js")
        assert "Cache-Control" not in unversioned.headers  # the browser asks again (with its ETag)
        for other in ("page.html", "../home.html", "home.css"):  # the named files only
            answer = await client.fetch(f"http://127.0.0.1:{port}/dsportal/static/{other}", raise_error=False)
            assert answer.code == 404, other
    finally:
        server.stop()


def test_the_version_changes_with_any_file(tmp_path, monkeypatch):
    shipped = script.version()
    assert re.fullmatch(r"[0-9a-f]{16}", shipped)
    copies = tmp_path / "static"
    shutil.copytree(script.folder(), copies)
    monkeypatch.setattr(script, "folder", lambda: copies)
    versions = []
    try:
        for name in ("", *script.FILES):
            if name:
                (copies / name).write_text((copies / name).read_text() + "// the next release\n")
            script.version.cache_clear()
            versions.append(script.version())
    finally:
        script.version.cache_clear()  # the shipped files' again once the monkeypatch is undone
    assert versions[0] == shipped and len(set(versions)) == 1 + len(script.FILES)  # each file changes it


DATA = {
    "sessions": [],
    "history": [],
    "presets": [{"label": "1 GPU, 2 h", "partition": "", "gpus": 1, "hours": 2}],
    "limits": {"max_per_user": 2, "name_pattern": "[a-z]+", "name_rule": "letters"},
}


class Home(HomePage):  # the page's data without a spawner
    def __call__(self) -> dict:
        return DATA


def rendered_home() -> str:
    """templates/home.html's part of the page, as JupyterHub renders it (autoescape on)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(data_dir("templates"))), autoescape=True)
    template = env.get_template("home.html")
    context = template.new_context(
        {"dsportal_home": Home(None), "base_url": "/hub/", "user": SimpleNamespace(name="alice"), "xsrf_token": "2|x&y"}
    )
    return "".join(template.blocks["main"](context))


def test_the_home_page_loads_its_script_with_its_version_and_no_inline_code():
    html = rendered_home()
    assert f'<script type="module" src="/hub/dsportal/static/home.js?v={script.version()}"></script>' in html
    data = re.search(r'<script type="application/json" id="dsportal-data"([^>]*)>([^<]*)</script>', html)
    assert data is not None, html
    assert data.group(1).split() == ['data-base-url="/hub/"', 'data-user="alice"', 'data-xsrf="2|x&amp;y"']
    assert '"name_rule": "letters"' in data.group(2)
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, re.S)
    assert [attrs for attrs, code in scripts if code.strip() and "application/json" not in attrs] == []


def test_every_element_the_script_looks_up_is_on_the_page():
    code = (data_dir("templates") / "static" / "home.js").read_text()
    looked_up = set(re.findall(r'(?:byId|getElementById)\("([^"]+)"\)', code))
    assert {"dsportal-data", "dsportal-sessions", "dsportal-new-name", "dsportal-jobs"} <= looked_up
    html = rendered_home()
    assert sorted(i for i in looked_up if f'id="{i}"' not in html) == []
