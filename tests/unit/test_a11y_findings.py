"""The browser tests' reading of axe-core (tests/support/a11y.py): which findings fail a test, what is checked whole."""

from __future__ import annotations

from tests.support.a11y import Finding, blocking, checked_in_full, findings

VIOLATIONS = [  # axe-core 4.14's shape, cut to what is read
    {
        "id": "color-contrast",
        "impact": "serious",
        "help": "Elements must meet minimum color contrast ratio thresholds",
        "nodes": [{"target": [".lead"]}, {"target": ["#login_submit"]}],
    },
    {"id": "region", "impact": "moderate", "help": "All page content should be contained by landmarks", "nodes": []},
    {"id": "frame-title", "impact": None, "help": "Frames must have a title", "nodes": [{"target": ["iframe", "p"]}]},
]


def test_axes_violations_become_findings_of_the_named_page():
    assert findings("login", VIOLATIONS) == [
        Finding(
            "login",
            "color-contrast",
            "serious",
            "Elements must meet minimum color contrast ratio thresholds",
            (".lead", "#login_submit"),
        ),
        Finding("login", "region", "moderate", "All page content should be contained by landmarks", ()),
        Finding("login", "frame-title", "minor", "Frames must have a title", ("iframe p",)),
    ]


def test_serious_and_critical_findings_fail_a_test_the_others_are_reported():
    found = findings("login", VIOLATIONS)
    assert blocking(found) == found[:1]
    assert found[0].words() == (
        "login: serious color-contrast (Elements must meet minimum color contrast ratio thresholds) at .lead, "
        "#login_submit"
    )
    many = Finding("home", "label", "critical", "Form elements must have labels", tuple(f"#x{i}" for i in range(7)))
    assert many.words().endswith("at #x0, #x1, #x2, #x3, #x4 and 2 more")


def test_the_hubs_pages_are_checked_whole_jupyterlabs_only_where_a_test_names_a_part():
    assert checked_in_full("https://localhost:8000/hub/home")
    assert checked_in_full("https://localhost:8000/hub/spawn/alice?x=1")
    assert not checked_in_full("https://localhost:8000/user/alice/lab/tree/x.ipynb")
    assert not checked_in_full("https://localhost:8000/user/alice/hub/x")
