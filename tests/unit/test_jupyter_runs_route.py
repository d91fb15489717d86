"""What the user's Jupyter server passes on to the hub's runs API (spawner/jupyter/runs/handlers.py): the runs'
routes, their 0.1 names (a browser tab that loaded 0.1's extension before an upgrade), the e-mail opt-in, and
nothing else of the hub's API."""

from __future__ import annotations

import re

import pytest

from spawner.jupyter.runs.handlers import ROUTE

PASSED = [
    "runs",
    "runs/form",
    "runs/12/cancel",
    "runs/12_3/again",
    "runs/82+1/log",
    "runs/82%2B1/log",  # a hetjob component's id as JupyterLab's encodeURIComponent writes it
    "runs/7/tasks",
    "notify",
]


@pytest.mark.parametrize("route", [*PASSED, *(r.replace("runs", "jobs", 1) for r in PASSED if r != "notify")])
def test_the_runs_routes_and_their_01_names_are_passed_on(route):
    assert re.fullmatch(ROUTE, route)


@pytest.mark.parametrize(
    "route",
    [
        "runs/defaults",  # the session's own (runs/defaults.py), never the hub's
        "runs/12/../../users/bob/tokens",
        "runs/12/stop",
        "runs/x/log",
        "session",
        "users/alice/tokens",
        "jobsx",
        "runs/form/x",
        "runs/82%2F1/log",
        "runs/1%2F..%2F..%2Fusers/log",
    ],
)
def test_nothing_else_is_passed_on(route):
    assert not re.fullmatch(ROUTE, route)
