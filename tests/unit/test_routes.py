"""The portal's routes are installed in one place (spawner/hub/wiring/routes.py); importing a module changes none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from jupyterhub.apihandlers.shares import ServerShareAPIHandler, ServerShareCodeAPIHandler
from jupyterhub.apihandlers.users import UserServerAPIHandler

from spawner.hub.apps.handlers import AppRouteHandler, AppRoutesHandler
from spawner.hub.base import pagescripts as homescript
from spawner.hub.clock import handlers as clockapi
from spawner.hub.continuation import handlers as continueapi
from spawner.hub.home import handlers as homeapi
from spawner.hub.receipts import handlers as receiptsapi
from spawner.hub.runs import handlers as runsapi
from spawner.hub.session import handlers as portapi
from spawner.hub.session import handlers as stopapi
from spawner.hub.sharing import handlers as shareapi
from spawner.hub.slurm import handlers as clusterapi
from spawner.hub.usage import handlers as usagepages
from spawner.hub.usage import handlers as usagereport
from spawner.hub.wiring import routes

ROOT = Path(__file__).resolve().parents[2]


class Stock:  # stand-ins for JupyterHub's own handlers
    pass


def test_installed_replaces_jupyterhubs_share_apis_with_the_admins_switches():
    handlers = [
        ("/api/shares/([^/]+)/([^/]*)", ServerShareAPIHandler),
        ("/api/share-codes/([^/]+)/([^/]*)", ServerShareCodeAPIHandler),
    ]
    assert routes.installed(handlers)[:2] == [
        ("/api/shares/([^/]+)/([^/]*)", shareapi.PortalShareAPIHandler),
        ("/api/share-codes/([^/]+)/([^/]*)", shareapi.PortalShareCodeAPIHandler),
    ]


def test_installed_adds_the_portals_replaces_the_stop_api_and_drops_batchspawners():
    batchspawners = ("/api/batchspawner", routes.REMOVED[0])
    handlers = [
        ("/api/info", Stock),
        ("/api/users/([^/]+)/server", UserServerAPIHandler),
        batchspawners,
        ("/api/users/([^/]+)/servers/([^/]*)", UserServerAPIHandler, {"extra": 1}),
    ]
    assert routes.installed(handlers) == [
        ("/api/info", Stock),
        ("/api/users/([^/]+)/server", stopapi.PortalUserServerAPIHandler),
        ("/api/users/([^/]+)/servers/([^/]*)", stopapi.PortalUserServerAPIHandler, {"extra": 1}),
        ("/api/dsportal/port", portapi.PortHandler),
        ("/api/dsportal/ended", portapi.EndedHandler),
        ("/api/dsportal/session", homeapi.SessionHandler),
        ("/api/dsportal/session/extend", clockapi.ExtendHandler, {"answer": homeapi.extended}),
        ("/api/dsportal/partitions", clusterapi.PartitionsHandler),
        ("/api/dsportal/estimate", clusterapi.EstimateHandler),
        ("/api/dsportal/alternatives", clusterapi.AlternativesHandler),
        ("/api/dsportal/accounts", clusterapi.AccountsHandler),
        ("/api/dsportal/runs", runsapi.RunsHandler),
        ("/api/dsportal/runs/form", runsapi.FormHandler),
        (r"/api/dsportal/runs/([0-9]+(?:[_+][0-9]+|%2[Bb][0-9]+)?)/cancel", runsapi.CancelHandler),
        (r"/api/dsportal/runs/([0-9]+(?:[_+][0-9]+|%2[Bb][0-9]+)?)/again", runsapi.AgainHandler),
        (r"/api/dsportal/runs/([0-9]+(?:[_+][0-9]+|%2[Bb][0-9]+)?)/log", runsapi.LogHandler),
        (r"/api/dsportal/runs/([0-9]+(?:[_+][0-9]+|%2[Bb][0-9]+)?)/tasks", runsapi.TasksHandler),
        # 0.1's names of the same routes, until 0.3 (a session started before an upgrade asks them)
        ("/api/dsportal/jobs", runsapi.RunsHandler),
        ("/api/dsportal/jobs/form", runsapi.FormHandler),
        (r"/api/dsportal/jobs/([0-9]+(?:[_+][0-9]+|%2[Bb][0-9]+)?)/cancel", runsapi.CancelHandler),
        (r"/api/dsportal/jobs/([0-9]+(?:[_+][0-9]+|%2[Bb][0-9]+)?)/again", runsapi.AgainHandler),
        (r"/api/dsportal/jobs/([0-9]+(?:[_+][0-9]+|%2[Bb][0-9]+)?)/log", runsapi.LogHandler),
        (r"/api/dsportal/jobs/([0-9]+(?:[_+][0-9]+|%2[Bb][0-9]+)?)/tasks", runsapi.TasksHandler),
        ("/api/dsportal/notify", runsapi.NotifyHandler),
        (r"/api/dsportal/receipts/([0-9]+(?:[_+][0-9]+|%2[Bb][0-9]+)?)", receiptsapi.ReceiptHandler),
        ("/api/dsportal/shares", shareapi.SharesHandler),
        ("/api/dsportal/session/token", shareapi.TokenCheckHandler),
        ("/api/dsportal/continue", continueapi.ContinueHandler),
        ("/api/dsportal/continue/automatically", continueapi.AutomaticHandler),
        ("/api/dsportal/session/usage", usagereport.UsageReportHandler),
        ("/api/dsportal/apps/routes", AppRoutesHandler),
        ("/api/dsportal/apps/routes/([0-9a-f]{12})", AppRouteHandler),
        ("/dsportal/usage", usagepages.UsagePageHandler),
        ("/dsportal/status", usagepages.StatusPageHandler),
        (r"/dsportal/static/(plotly\.min\.js)", usagepages.PlotlyHandler, {"path": usagepages.plotly_folder()}),
        (r"/dsportal/static/(home\.js)", homeapi.ScriptHandler, {"path": str(homescript.folder())}),
        (r"/dsportal/static/(homerules\.js)", homeapi.ScriptHandler, {"path": str(homescript.folder())}),
        (r"/dsportal/static/(form\.js)", homeapi.ScriptHandler, {"path": str(homescript.folder())}),
        (r"/dsportal/static/(formrules\.js)", homeapi.ScriptHandler, {"path": str(homescript.folder())}),
        (r"/dsportal/static/(theme\.js)", homeapi.ScriptHandler, {"path": str(homescript.folder())}),
        (r"/dsportal/static/(admin\.js)", homeapi.ScriptHandler, {"path": str(homescript.folder())}),
    ]
    assert routes.installed(routes.installed(handlers)) == routes.installed(handlers)  # installing twice: once


WHAT_IMPORTS_CHANGE = """
import json, pkgutil, importlib
import batchspawner  # its own import adds its handler: that is batchspawner's, taken out by routes.install()
from jupyterhub import apihandlers
import spawner.hub
before = [(u, h.__name__) for u, h, *_ in apihandlers.default_handlers]
for info in pkgutil.walk_packages(spawner.hub.__path__, "spawner.hub."):  # every concept's folder, every module
    importlib.import_module(info.name)
after = [(u, h.__name__) for u, h, *_ in apihandlers.default_handlers]
from spawner.hub.wiring import routes
routes.install()
installed = [(u, h.__name__) for u, h, *_ in apihandlers.default_handlers]
print(json.dumps([before == after, len(before), before != installed]))
"""


def test_importing_every_hub_module_changes_no_route():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", WHAT_IMPORTS_CHANGE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-3000:]
    unchanged, count, install_changes = json.loads(out.stdout.strip().splitlines()[-1])
    assert unchanged and count > 20 and install_changes


def test_the_port_callback_counts_as_served_only_without_batchspawners():
    assert portapi.served(routes.installed([("/api/info", Stock)]))
    assert not portapi.served([("/api/info", Stock)])  # a hub whose config did not install the routes
    assert not portapi.served([*routes.ADDED, ("/api/batchspawner", routes.REMOVED[0])])
