"""The browser tests' judge of a console error (tests/support/browser.py): an app's own page's script speaks for
the app (VS Code, MLflow, Streamlit, Dash log errors of their own); the portal's pages, its doors and error pages
at the apps' addresses, and the browser's own reports on any page (a refused websocket, a blocked load) are the
portal's to answer for."""

from __future__ import annotations

from tests.support.browser import console_error_owner, page_owner

LABEL = "apps--" + "0123456789abcdef01234567"  # an app origin's label: 24 hex digits
APP = f"https://{LABEL}.localhost:8000/user/alice/dsportal/apps/0a1b2c3d4e5f/"


def test_an_apps_own_pages_are_the_apps_and_every_other_page_the_portals():
    urls = [
        APP,  # VS Code, Streamlit, Dash: the app's first page
        APP + "?folder=/tmp/bobs-project",  # VS Code on another folder
        APP + "#/experiments/1",  # MLflow's pages are fragments
        APP + "echo",  # a Dash app's page of its own
        f"https://{LABEL}.localhost:8000/user/alice/train/dsportal/apps/0a1b2c3d4e5f/",  # a named session's app
        APP + "?dsportal-enter=TICKET",  # the door that spends the ticket: the portal's page
        "https://alice.localhost:8000/user/alice/dsportal/apps/0a1b2c3d4e5f/",  # the session's origin: the portal's
        f"https://{LABEL}.localhost:8000/user/alice/dsportal/apps/",  # the apps' listing: the portal's
        f"https://{LABEL}.localhost:8000/user/alice/dsportal/apps/api/instances",
        f"https://{LABEL}.localhost:8000/hub/home",  # another path there: the hub's or the proxy's answer
        f"http://{LABEL}.localhost:8000/user/alice/dsportal/apps/0a1b2c3d4e5f/",  # never served without TLS
        "https://apps--0123.localhost:8000/user/alice/dsportal/apps/0a1b2c3d4e5f/",  # no app's label
        f"https://x{LABEL}.localhost:8000/user/alice/dsportal/apps/0a1b2c3d4e5f/",
        "https://localhost:8000/hub/home",
        "https://localhost:8000/hub/login?next=%2Fuser%2Falice%2Fdsportal%2Fapps%2F0a1b2c3d4e5f%2F",
        "https://alice.localhost:8000/user/alice/lab/tree/apps-test",  # JupyterLab with the portal's extension
        "about:blank",
        "",
    ]
    assert {url: page_owner(url) for url in urls} == {
        APP: "app",
        APP + "?folder=/tmp/bobs-project": "app",
        APP + "#/experiments/1": "app",
        APP + "echo": "app",
        f"https://{LABEL}.localhost:8000/user/alice/train/dsportal/apps/0a1b2c3d4e5f/": "app",
        APP + "?dsportal-enter=TICKET": "portal",
        "https://alice.localhost:8000/user/alice/dsportal/apps/0a1b2c3d4e5f/": "portal",
        f"https://{LABEL}.localhost:8000/user/alice/dsportal/apps/": "portal",
        f"https://{LABEL}.localhost:8000/user/alice/dsportal/apps/api/instances": "portal",
        f"https://{LABEL}.localhost:8000/hub/home": "portal",
        f"http://{LABEL}.localhost:8000/user/alice/dsportal/apps/0a1b2c3d4e5f/": "portal",
        "https://apps--0123.localhost:8000/user/alice/dsportal/apps/0a1b2c3d4e5f/": "portal",
        f"https://x{LABEL}.localhost:8000/user/alice/dsportal/apps/0a1b2c3d4e5f/": "portal",
        "https://localhost:8000/hub/home": "portal",
        "https://localhost:8000/hub/login?next=%2Fuser%2Falice%2Fdsportal%2Fapps%2F0a1b2c3d4e5f%2F": "portal",
        "https://alice.localhost:8000/user/alice/lab/tree/apps-test": "portal",
        "about:blank": "portal",
        "": "portal",
    }


def test_only_an_apps_own_script_speaks_for_the_app():
    lab = "https://alice.localhost:8000/user/alice/lab"
    assert [
        console_error_owner(APP, said_by_script=True),  # VS Code's "An unknown error occurred..."
        console_error_owner(APP, said_by_script=False),  # the browser: a websocket the proxy refused, a CSP block
        console_error_owner(lab, said_by_script=True),  # JupyterLab, the portal's extension in it
        console_error_owner(lab, said_by_script=False),
        console_error_owner(APP + "?dsportal-enter=TICKET", said_by_script=True),
    ] == ["app", "portal", "portal", "portal", "portal"]
