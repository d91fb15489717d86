"""The REST API's OpenAPI file (docs/reference/rest-api.yml) against the routes the hub installs, both ways.

The routes are JupyterHub's API list as spawner/hub/wiring/routes.py changes it
(`installed`): the portal's own (`routes.ADDED`) and JupyterHub's whose handler
the portal replaces (`routes.REPLACED`).  A route's methods are those the
portal's code defines (a replaced handler's others are JupyterHub's, in
JupyterHub's REST API).  Every one must be in the file, and every path and
method in the file must be served.  The pages among the routes (not under
/api) are not REST API.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from jupyterhub import apihandlers

from spawner.hub.home import handlers as home
from spawner.hub.usage import handlers as usage
from spawner.hub.wiring import routes

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "docs" / "reference" / "rest-api.yml"
METHODS = ("get", "post", "put", "patch", "delete")
OURS = ("spawner.", "portal.")


def template(route: str) -> str:
    """A tornado route's regex -> its path with each capture group as {}: '/api/x/([^/]+)/y' -> '/x/{}/y'."""
    out, depth, i = [], 0, 0
    while i < len(route):
        char = route[i]
        if char == "\\":  # an escaped character: itself outside groups
            out.append(route[i + 1] if depth == 0 else "")
            i += 2
            continue
        if char == "(":
            if depth == 0 and not route.startswith("(?", i):
                out.append("{}")
            depth += 1
        elif char == ")":
            depth -= 1
        elif depth == 0:
            out.append(char)
        i += 1
    return "".join(out).removeprefix("/api")


def test_a_route_reads_as_its_path_template():
    assert template(r"/api/dsportal/runs/([0-9]+(?:[_+][0-9]+)?)/log") == "/dsportal/runs/{}/log"
    assert template(r"/api/users/([^/]+)/servers/([^/]*)") == "/users/{}/servers/{}"
    assert template(r"/dsportal/static/(plotly\.min\.js)") == "/dsportal/static/{}"
    assert template("/api/dsportal/session") == "/dsportal/session"


def own_methods(handler: type) -> set[str]:
    """The HTTP methods the portal's code defines on `handler` or a base of its own."""
    return {
        method
        for method in METHODS
        for cls in handler.__mro__
        if cls.__module__.startswith(OURS) and method in vars(cls)
    }


def test_a_replaced_handler_counts_only_the_portals_methods():
    from spawner.hub.sharing.handlers import PortalShareCodeAPIHandler

    assert own_methods(PortalShareCodeAPIHandler) == {"post"}  # its get and delete are JupyterHub's


def served() -> set[tuple[str, str]]:
    """(path template, method) of every REST route of the portal's code the hub serves."""
    installed = routes.installed(list(apihandlers.default_handlers))
    ours = [route for route in installed if route[1].__module__.startswith(OURS)]
    return {
        (template(url), method)
        for url, handler, *_ in ours
        if url.startswith("/api/")
        for method in own_methods(handler)
    }


def documented() -> set[tuple[str, str]]:
    spec = yaml.safe_load(SPEC.read_text())
    return {
        (re.sub(r"\{[^}]+\}", "{}", path), method)
        for path, item in spec["paths"].items()
        for method in item
        if method in METHODS
    }


def test_the_served_routes_include_the_portals_own_and_the_replaced():
    paths = {path for path, _ in served()}
    assert {"/dsportal/session", "/dsportal/runs/{}/log", "/users/{}/servers/{}", "/share-codes/{}"} <= paths
    replaced = {handler for handler in routes.REPLACED.values()}
    assert replaced <= {route[1] for route in routes.installed(list(apihandlers.default_handlers))}


def test_every_served_route_and_method_is_in_the_openapi_file():
    missing = sorted(served() - documented())
    assert missing == [], f"routes the hub serves that {SPEC.relative_to(ROOT)} lacks: {missing}"


def test_every_path_and_method_in_the_openapi_file_is_served():
    unserved = sorted(documented() - served())
    assert unserved == [], f"{SPEC.relative_to(ROOT)} documents what no route serves: {unserved}"


def test_the_routes_outside_the_api_are_the_pages():
    pages = {route[0] for route in (*usage.handlers(), *home.handlers())}
    outside = {route[0] for route in routes.ADDED if not route[0].startswith("/api/")}
    assert outside == pages, "a portal route outside /api that is not a page: put it under /api and document it"


def test_the_openapi_file_is_valid_openapi_3():
    try:
        from openapi_spec_validator import validate
    except ImportError:
        pytest.fail("openapi-spec-validator is missing: run `deploy/devcluster up` (it installs the docs extra)")
    spec = yaml.safe_load(SPEC.read_text())
    validate(spec)
    assert spec["openapi"].startswith("3.")
