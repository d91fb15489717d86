"""Which portal last ran on a hub's state: the stamp `hub.data_dir/dsportal-version`, an upgrade, and what is refused.

The hub's database and data folder are read by each release in turn.  At every start the hub (and `dsportal
check-config`, the unit's ExecStartPre) compares the stamp with its own version:

- none: a new hub, or 0.1.0's state (0.1.0 wrote no stamp); the same as the running version: nothing to do;
- older, and a release this version knows (RELEASES, CHANGELOG's released sections), a pre-release of one, or
  of this version's own release (0.2.0.dev0 under 0.2.0, 0.2.0 under 0.2.0.post1): an upgrade, which the hub
  logs and stamps (the upgrade steps of every release in between are CHANGELOG's);
- newer than this version: refused.  A newer portal may have changed the database in ways this one cannot read;
  going back means the backup taken before that upgrade (docs: admins/upgrade, "Rolling back");
- anything else (no version, or an older version that was never released): refused, with what to do.

Versions compare without their local part (0.2.0+site1 is 0.2.0): a site's own build of a release reads its state.
A portal whose own version is no version (a broken install: "unknown") checks nothing and writes no stamp.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

STAMP = "dsportal-version"
RELEASES = ("0.1.0",)  # every release, oldest first: the versions whose state this one upgrades
UNSTAMPED = "0.1.0"  # the last release that wrote no stamp


@dataclass(frozen=True)
class Verdict:
    ok: bool
    upgrade_from: str | None  # the version whose state this start upgrades, if any
    message: str  # what the log, or the refusal, says


def verdict(stamped: str | None, running: str, releases: tuple[str, ...] = RELEASES) -> Verdict:
    """What a start of version `running` does with a state stamped `stamped` (None: no stamp) (pure)."""
    backup = "restore the backup taken before that upgrade (docs: admins/upgrade, Rolling back)"
    try:
        now = Version(Version(running).public)
    except InvalidVersion:
        return Verdict(True, None, f"this portal's version {running!r} is not a release's: the state is not checked")
    if stamped is None:
        return Verdict(True, None, f"no stamp: a new state, or {UNSTAMPED}'s")
    try:
        then = Version(Version(stamped).public)
    except InvalidVersion:
        return Verdict(
            False,
            None,
            f"the state's stamp says {stamped!r}, which is no version: put back the {STAMP} file of the backup, "
            f"or write the version of the portal that last ran on this state into it",
        )
    if then == now:
        return Verdict(True, None, f"the state is {stamped}'s")
    if then > now:
        return Verdict(
            False,
            None,
            f"the state was last used by DS Portal {stamped}, newer than this {running}: a newer portal may have "
            f"changed the database in ways this one cannot read. Install {stamped} again, or {backup}",
        )
    known = {Version(r).release for r in releases}
    if then.release in known or then.release == now.release:
        return Verdict(True, stamped, f"upgrading the portal's state from {stamped} to {running}")
    return Verdict(
        False,
        None,
        f"the state was last used by DS Portal {stamped}, which is no release this {running} knows "
        f"({', '.join(releases)}): upgrade from a release, one at a time (each release's CHANGELOG section), or {backup}",
    )


def read_stamp(data_dir: str | Path) -> str | None:
    """The stamp's version, None where there is none."""
    try:
        return (Path(data_dir) / STAMP).read_text().strip()
    except FileNotFoundError:
        return None


def stamp(data_dir: str | Path, running: str) -> None:
    """The running version, written as the state's (the service account's alone, as the rest of data_dir); none
    for a version that is no version (it would lock out every later start)."""
    try:
        Version(running)
    except InvalidVersion:
        return
    path = Path(data_dir) / STAMP
    part = path.with_name(STAMP + ".new")
    part.write_text(running + "\n")
    part.chmod(0o600)
    part.replace(path)
