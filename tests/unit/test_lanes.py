"""The lanes of the dev cluster's tests (tests/support/lanes.py): whom each lane stops and cancels, and a test that
acts as a person of the other lane refused with what to do."""

from __future__ import annotations

import pytest

from tests.support import lanes


def test_each_lane_cleans_its_own_people_and_alone_everyone():
    assert lanes.people("main") == ("alice", "bob", "carol", "dave")
    assert lanes.people("side") == ("erin", "frank", "grace")
    assert lanes.people("alone") == ("alice", "bob", "carol", "dave", "erin", "frank", "grace")


def test_the_lane_is_the_environments_or_alone(monkeypatch):
    monkeypatch.delenv("DSPORTAL_TEST_LANE", raising=False)
    assert lanes.lane() == "alone"
    monkeypatch.setenv("DSPORTAL_TEST_LANE", "side")
    assert lanes.lane() == "side"
    monkeypatch.setenv("DSPORTAL_TEST_LANE", "fast")
    with pytest.raises(ValueError, match="DSPORTAL_TEST_LANE='fast': use one of main, side, alone"):
        lanes.lane()


@pytest.mark.parametrize(
    "name, lane, words",
    [
        (
            "erin",
            "main",
            "a test in the main lane acts as erin, one of the side lane's people (erin, frank, grace): "
            "act as one of alice, bob, carol, dave, or mark the test `side`",
        ),
        ("alice", "side", "a test in the side lane acts as alice, one of the main lane's people"),
    ],
)
def test_a_person_of_the_other_lane_is_refused_with_what_to_do(name, lane, words):
    with pytest.raises(ValueError) as refused:
        lanes.check_person(name, lane)
    assert str(refused.value).startswith(words), refused.value


@pytest.mark.parametrize(
    "name, lane",
    [("alice", "main"), ("grace", "side"), ("erin", "alone"), ("alice", "alone"), ("soak03", "main"), ("root", "side")],
)
def test_own_people_everyone_alone_and_people_of_no_lane_pass(name, lane):
    assert lanes.check_person(name, lane) is None
