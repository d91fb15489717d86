"""Reading what JupyterLab's launcher drew (tests/support/launcher.py): pure."""

from __future__ import annotations

from tests.support.launcher import display_names, every_kernel_at, first_cards

SESSION = ["Python 3", "Python 3 (container: debian-py)", "Python 3 (demo module)", "R"]
HISTORY = [
    [1_700_000_000_500, ["Python 3 (ipykernel)", "R"]],
    [1_700_000_001_250, [*SESSION]],
    [1_700_000_002_000, [*SESSION, "Python 3 (mine)"]],
]


def test_the_kernels_a_server_offers_are_its_display_names():
    answer = {
        "default": "python3",
        "kernelspecs": {
            "python3": {"name": "python3", "spec": {"display_name": "Python 3"}, "resources": {}},
            "ir": {"name": "ir", "spec": {"display_name": "R"}, "resources": {"logo-64x64": "/k/ir/logo-64x64.png"}},
        },
    }
    assert display_names(answer) == ["Python 3", "R"]


def test_the_first_cards_drawn():
    assert first_cards(HISTORY) == ["Python 3 (ipykernel)", "R"]
    assert first_cards([[1, []], [2, ["R"]]]) == ["R"]
    assert first_cards([]) == []


def test_when_every_kernel_was_drawn():
    assert every_kernel_at(HISTORY, SESSION) == 1_700_000_001.25
    assert every_kernel_at(HISTORY, ["R"]) == 1_700_000_000.5
    assert every_kernel_at(HISTORY, ["Python 3 (container: debian-py from the registry)"]) is None
