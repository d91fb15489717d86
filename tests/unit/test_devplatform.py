"""The dev cluster's platforms (deploy/dev/platform.py): their pure parts, by equality."""

from __future__ import annotations

from pathlib import Path

import pytest

from deploy.dev import accounting, platform, slurmconf
from deploy.dev.common import ClusterError

DEBIAN12, DEBIAN13 = platform.PLATFORMS["debian12"], platform.PLATFORMS["debian13"]

DEB822 = """\
Types: deb
# a comment: http://example.invalid/debian
URIs: http://mirror.example.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example.org/debian-security
Suites: bookworm-security
Components: main
"""


def test_the_root_is_made_from_the_machines_own_debian_mirror():
    assert platform.mirror_of([DEB822]) == "http://mirror.example.org/debian"
    assert platform.mirror_of(["deb http://mirror.example.org/debian bookworm main contrib\n"]) == (
        "http://mirror.example.org/debian"
    )
    # a third party's archive, the security archive and a source line are not a Debian mirror
    assert (
        platform.mirror_of(["deb https://apt.example.com/node nodistro main\n", "deb-src http://x/debian b main\n"])
        == ""
    )
    assert platform.mirror_of([DEB822.split("\n\n")[1]]) == ""


def test_each_platform_keeps_its_own_slurm_state_and_the_first_keeps_the_names_it_had():
    assert (DEBIAN12.suffix, DEBIAN13.suffix) == ("", "-24.11")
    assert accounting.database_of(DEBIAN12) == "slurm_acct_db"
    assert accounting.database_of(DEBIAN13) == "slurm_acct_db_24_11"  # no dot: slurmdbd does not quote it
    assert "StorageLoc=slurm_acct_db_24_11\n" in accounting.slurmdbd_conf("0123", accounting.database_of(DEBIAN13))
    assert "GRANT ALL PRIVILEGES ON `slurm_acct_db_24_11`.*" in accounting.database_user_sql(
        "0123", "slurm_acct_db_24_11"
    )
    old, new = slurmconf.slurm_conf(DEBIAN12), slurmconf.slurm_conf(DEBIAN13)
    assert "StateSaveLocation=/var/lib/dsportal-dev/slurmctld\n" in old
    assert "SlurmdSpoolDir=/var/spool/dsportal-dev/slurmd/%n\n" in old
    assert "StateSaveLocation=/var/lib/dsportal-dev/slurmctld-24.11\n" in new
    assert "SlurmdSpoolDir=/var/spool/dsportal-dev/slurmd-24.11/%n\n" in new
    # nothing else differs: the same cluster, nodes, GPUs, partitions and PrivateData
    assert [a for a, b in zip(old.splitlines(), new.splitlines(), strict=True) if a != b] == [
        "StateSaveLocation=/var/lib/dsportal-dev/slurmctld",
        "SlurmdSpoolDir=/var/spool/dsportal-dev/slurmd/%n",
    ]


def test_a_platform_is_named_or_refused_with_the_names_there_are():
    assert platform.named("debian13") is DEBIAN13
    with pytest.raises(ClusterError, match="no platform 'rocky9': use one of debian12, debian13"):
        platform.named("rocky9")


def test_the_roots_programs_run_with_the_roots_loader_and_libraries_and_this_machines_mariadb():
    root, stage = Path("/cache/roots/debian13"), Path("/state/slurm/debian13")
    assert platform.patchelf_argv(stage / "usr/bin/sbatch", root, stage, program=True) == [
        "patchelf",
        "--set-interpreter",
        "/cache/roots/debian13/usr/lib64/ld-linux-x86-64.so.2",
        "--force-rpath",
        "--set-rpath",
        "/state/slurm/debian13/slurm-wlm:/state/slurm/debian13/compat:/cache/roots/debian13/usr/lib/x86_64-linux-gnu",
        "/state/slurm/debian13/usr/bin/sbatch",
    ]
    plugin = platform.patchelf_argv(stage / "slurm-wlm/auth_munge.so", root, stage, program=False)
    assert "--set-interpreter" not in plugin and plugin[-1].endswith("auth_munge.so")


def test_only_the_programs_both_releases_have_are_bound():
    staged = ["/usr/bin/sbatch", "/usr/bin/scrun", "/usr/sbin/slurmd-wlm", "/usr/sbin/slurmstepd-wlm"]
    machine = ["/usr/bin/sbatch", "/usr/bin/sstat", "/usr/sbin/slurmd-wlm", "/usr/sbin/slurmstepd-wlm"]
    assert platform.bound_paths(staged, machine) == [
        "/usr/bin/sbatch",
        "/usr/sbin/slurmd-wlm",
        "/usr/sbin/slurmstepd-wlm",
    ]
