"""What a hub's start does with the state's stamp (portal/statestamp.py), by equality."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.version import Version

from portal.statestamp import RELEASES, Verdict, read_stamp, stamp, verdict


@pytest.mark.parametrize(
    "stamped, running, expected",
    [
        (None, "0.2.0", Verdict(True, None, "no stamp: a new state, or 0.1.0's")),
        ("0.2.0", "0.2.0", Verdict(True, None, "the state is 0.2.0's")),
        ("0.1.0", "0.2.0", Verdict(True, "0.1.0", "upgrading the portal's state from 0.1.0 to 0.2.0")),
        ("0.1.0", "0.2.0.dev0", Verdict(True, "0.1.0", "upgrading the portal's state from 0.1.0 to 0.2.0.dev0")),
        # a development build of the release now running, or of a known one
        ("0.2.0.dev0", "0.2.0", Verdict(True, "0.2.0.dev0", "upgrading the portal's state from 0.2.0.dev0 to 0.2.0")),
        ("0.1.0rc1", "0.2.0", Verdict(True, "0.1.0rc1", "upgrading the portal's state from 0.1.0rc1 to 0.2.0")),
        # a post release of the running one's, a site's own build (a local part) of a release
        ("0.2.0", "0.2.0.post1", Verdict(True, "0.2.0", "upgrading the portal's state from 0.2.0 to 0.2.0.post1")),
        ("0.2.0", "0.2.0+site1", Verdict(True, None, "the state is 0.2.0's")),
        ("0.2.0+site1", "0.2.0", Verdict(True, None, "the state is 0.2.0+site1's")),
    ],
)
def test_new_same_and_known_older_states_start(stamped, running, expected):
    assert verdict(stamped, running, releases=("0.1.0",)) == expected


def test_a_newer_state_is_refused_with_the_way_back():
    assert verdict("0.3.0", "0.2.0", releases=("0.1.0", "0.2.0")) == Verdict(
        False,
        None,
        "the state was last used by DS Portal 0.3.0, newer than this 0.2.0: a newer portal may have changed the "
        "database in ways this one cannot read. Install 0.3.0 again, or restore the backup taken before that upgrade "
        "(docs: admins/upgrade, Rolling back)",
    )


def test_an_unreleased_or_unreadable_version_is_refused_with_what_to_do():
    assert verdict("0.1.5", "0.2.0", releases=("0.1.0",)) == Verdict(
        False,
        None,
        "the state was last used by DS Portal 0.1.5, which is no release this 0.2.0 knows (0.1.0): upgrade from a "
        "release, one at a time (each release's CHANGELOG section), or restore the backup taken before that upgrade "
        "(docs: admins/upgrade, Rolling back)",
    )
    refused = verdict("not a version", "0.2.0")
    assert not refused.ok and "'not a version', which is no version" in refused.message


def test_the_stamp_is_written_whole_and_private(tmp_path):
    assert read_stamp(tmp_path) is None
    stamp(tmp_path, "0.2.0")
    assert read_stamp(tmp_path) == "0.2.0"
    assert (tmp_path / "dsportal-version").stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["dsportal-version"]


def test_a_portal_whose_version_is_no_version_checks_nothing_and_stamps_nothing(tmp_path):
    assert verdict("0.2.0", "unknown").ok
    stamp(tmp_path, "unknown")
    assert read_stamp(tmp_path) is None  # a stamp "unknown" would refuse every later start


def test_the_releases_known_are_changelogs_released_sections():
    changelog = (Path(__file__).resolve().parents[2] / "CHANGELOG.md").read_text()
    released = re.findall(r"^## (\d+\.\d+\.\d+) \(", changelog, flags=re.MULTILINE)
    assert released and tuple(sorted(released, key=Version)) == RELEASES
