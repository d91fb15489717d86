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

# each of these alone names no mirror to debootstrap from
NOT_A_MIRROR = [
    "Types: deb\nURIs: http://mirror.example.org/debian\nSuites: bookworm-security\nComponents: main\n",
    "Types: deb-src\nURIs: http://mirror.example.org/debian\nSuites: bookworm\nComponents: main\n",
    "Types: deb\nURIs: http://mirror.example.org/debian\nSuites: bookworm\nComponents: main\nEnabled: no\n",
    "Types: deb\nURIs: http://mirror.example.org/debian\nSuites: bookworm\nComponents: contrib\n",
    "Types: deb\nURIs: https://apt.example.com/node\nSuites: nodistro\nComponents: main\n",
    "deb https://apt.example.com/node nodistro main\n",
    "deb-src http://mirror.example.org/debian bookworm main\n",
    "deb http://mirror.example.org/debian bookworm-security main\n",
    "# deb http://mirror.example.org/debian bookworm main\n",
]


def test_the_root_is_made_from_the_machines_own_debian_mirror():
    assert platform.mirror_of([DEB822]) == "http://mirror.example.org/debian"
    assert platform.mirror_of(["deb http://mirror.example.org/debian bookworm main contrib\n"]) == (
        "http://mirror.example.org/debian"
    )
    signed = "deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://m.example.org/debian bookworm main\n"
    assert platform.mirror_of([signed]) == "http://m.example.org/debian"
    assert [platform.mirror_of([text]) for text in NOT_A_MIRROR] == [""] * len(NOT_A_MIRROR)
    assert platform.mirror_of([*NOT_A_MIRROR, DEB822]) == "http://mirror.example.org/debian"  # the first that is
    # a third party's archive, the security archive and a source line are not a Debian mirror
    assert (
        platform.mirror_of(["deb https://apt.example.com/node nodistro main\n", "deb-src http://x/debian b main\n"])
        == ""
    )


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
    # job ids of their own: the hub's records of one platform's jobs outlive a switch
    assert "FirstJobId" not in old and "FirstJobId=5000000\n" in new
    # nothing else differs: the same cluster, nodes, GPUs, partitions and PrivateData
    assert sorted(set(new.splitlines()) ^ set(old.splitlines())) == [
        "FirstJobId=5000000",
        "SlurmdSpoolDir=/var/spool/dsportal-dev/slurmd-24.11/%n",
        "SlurmdSpoolDir=/var/spool/dsportal-dev/slurmd/%n",
        "StateSaveLocation=/var/lib/dsportal-dev/slurmctld",
        "StateSaveLocation=/var/lib/dsportal-dev/slurmctld-24.11",
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


def test_a_tree_is_removed_only_once_nothing_is_mounted_at_or_in_it():
    mounts = (
        "proc /proc proc rw 0 0\n"
        "proc /var/cache/dsportal-dev/roots/debian13.part/proc proc rw 0 0\n"
        "udev /var/cache/dsportal-dev/roots/debian13.part/dev/pts devpts rw 0 0\n"
        "udev /var/cache/dsportal-dev/roots/debian13.part/dev devtmpfs rw 0 0\n"
        "tmpfs /var/cache/dsportal-dev/roots/debian13.partial tmpfs rw 0 0\n"
    )
    part = Path("/var/cache/dsportal-dev/roots/debian13.part")
    assert platform.mounts_under(part, mounts) == [
        "/var/cache/dsportal-dev/roots/debian13.part/dev/pts",
        "/var/cache/dsportal-dev/roots/debian13.part/proc",
        "/var/cache/dsportal-dev/roots/debian13.part/dev",
    ]  # deepest first; a sibling whose name starts alike is not inside
    assert platform.mounts_under(part, f"tmpfs {part} tmpfs rw 0 0\n") == [str(part)]  # the folder itself too
    assert platform.mounts_under(part, "proc /proc proc rw 0 0\n") == []


def test_a_folder_slurm_runs_from_must_be_roots_alone(tmp_path, monkeypatch):
    mine = tmp_path / "stage"
    mine.mkdir(mode=0o777)
    mine.chmod(0o777)  # a folder anyone may write: refused, whoever owns it
    with pytest.raises(ClusterError, match="not a folder of root's alone"):
        platform.root_folder(mine)
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    with pytest.raises(ClusterError, match="not a folder of root's alone"):
        platform.root_folder(link)


def test_a_machine_without_slurms_packages_has_nothing_of_slurms_to_unbind(tmp_path):
    # a new machine before its first `up`: `reset` unbinds nothing and goes on (it failed there: slurm_files
    # refused a root without the packages, and `.ci/run` begins with `reset`)
    assert platform.installed_slurm_files(tmp_path) == []
    info = tmp_path / "var/lib/dpkg/info"
    info.mkdir(parents=True)
    (tmp_path / "usr/bin").mkdir(parents=True)
    (tmp_path / "usr/bin/sbatch").write_text("")
    for package in platform.SLURM_PACKAGES:
        (info / f"{package}.list").write_text("/usr/bin/sbatch\n" if package == "slurm-client" else "")
    assert platform.installed_slurm_files(tmp_path) == ["/usr/bin/sbatch"]
    (info / "slurmdbd.list").unlink()
    assert platform.installed_slurm_files(tmp_path) == []
    with pytest.raises(ClusterError, match="lacks the package slurmdbd"):
        platform.slurm_files(tmp_path)  # a platform's own root must hold them all


def test_the_binds_over_slurms_paths_are_read_from_proc_mounts_in_order():
    mounts = (
        "/dev/vda / ext4 rw 0 0\n"
        "/dev/vda /usr/bin/sbatch ext4 ro 0 0\n"
        "proc /proc proc rw 0 0\n"
        "/dev/vda /usr/lib/x86_64-linux-gnu/slurm-wlm ext4 ro 0 0\n"
    )
    ours = {Path("/usr/bin/sbatch"), Path("/usr/lib/x86_64-linux-gnu/slurm-wlm"), Path("/usr/bin/squeue")}
    assert platform.bound_over(mounts, ours) == [Path("/usr/bin/sbatch"), Path("/usr/lib/x86_64-linux-gnu/slurm-wlm")]
    assert platform.bound_over("", ours) == []
