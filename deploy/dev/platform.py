"""The dev cluster's platform: which Slurm every host runs, Debian 12's 22.05 or Debian 13's 24.11.

Sites run Slurm 23.11 and 24.x as often as 22.05, and the portal must meet each as it is.  `up --platform NAME`
chooses (PLATFORMS), and the choice stays until another `up --platform` or `reset`:

- debian12: this machine's own packages, Slurm 22.05.
- debian13: Debian 13's Slurm 24.11.  Its controller talks to clients at most three releases older, so every Slurm
  program of the cluster changes together: the daemons, the commands on the head node (the hub's `sudo sbatch`) and
  on the nodes (a job's `srun`).  Debian 13's build needs Debian 13's C library, so `up` makes a Debian 13 root with
  debootstrap from the mirror this machine's apt uses (under CACHE: `reset` keeps it, as every download), copies its
  Slurm programs and plugins out with their loader and library path pointed into that root (patchelf), and binds
  each over this machine's Slurm file of the same path.  Every process then runs 24.11 at the paths a Debian site
  has, the sudoers rule's included; the jobs, the portal's Python and everything else stay Debian 12's, as on a
  site that builds its own Slurm on an older system.  The daemons keep their state apart per platform (slurmctld's
  state, slurmd's spool, the accounting database): 24.11 converts 22.05's for good.

One exception in the root's libraries: Debian 13's slurmdbd 24.11.5 exits at its start with Debian 13's own
libmariadb3 11.8 ("error 5027", measured) and runs with Debian 12's 10.11, so that one library is this machine's.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from .common import CACHE, STATE, ClusterError, run, say

HOST_LIBS = Path("/usr/lib/x86_64-linux-gnu")
PLUGINS = HOST_LIBS / "slurm-wlm"  # Debian's PluginDir and the home of libslurmfull, on both platforms
# The Debian packages whose programs are Slurm's, the same names on both platforms
SLURM_PACKAGES = ("slurm-client", "slurmctld", "slurmd", "slurmdbd")
MARIADB_LIBRARY = HOST_LIBS / "libmariadb.so.3"  # slurmdbd's, this machine's (the module's doc says why)
CHOSEN = STATE / "platform"
ROOTS = CACHE / "roots"  # a root per platform that needs one: a download, kept by `reset`
# STAGES/NAME: the root's Slurm programs, patched to run from the root; kept with the root.  Both are read by every
# account (the hub's runs the commands; a job's user srun), so neither is under STATE, which is root's alone
STAGES = CACHE / "slurm"
STAGE_FORMAT = 2  # raised when ensure_stage makes its copies otherwise: a kept stage is made anew


@dataclass(frozen=True)
class Platform:
    name: str
    suite: str  # Debian's release name
    slurm: str  # the Slurm release, as its commands print it
    own: bool  # this machine's own packages: no root, nothing bound
    # slurm.conf's FirstJobId: the hub's records (runs, sessions, usage) outlive a switch, so a platform's job ids
    # never reach the other's (the ids a 22.05 cluster gives stay far below)
    first_job_id: int = 1

    @property
    def suffix(self) -> str:
        """What tells this platform's Slurm state apart (folders, the accounting database): none for the machine's
        own, so a dev cluster made before platforms keeps its state."""
        return "" if self.own else "-" + self.slurm


PLATFORMS = {
    "debian12": Platform("debian12", "bookworm", "22.05", own=True),
    "debian13": Platform("debian13", "trixie", "24.11", own=False, first_job_id=5_000_000),
}
DEFAULT = "debian12"


def named(name: str) -> Platform:
    if name not in PLATFORMS:
        raise ClusterError(f"no platform {name!r}: use one of {', '.join(PLATFORMS)} (deploy/dev/platform.py)")
    return PLATFORMS[name]


def chosen() -> Platform:
    """The platform `up` last chose (DEFAULT before any choice)."""
    return named(CHOSEN.read_text().strip() if CHOSEN.exists() else DEFAULT)


def choose(name: str) -> Platform:
    platform = named(name)
    STATE.mkdir(mode=0o750, parents=True, exist_ok=True)
    CHOSEN.write_text(platform.name + "\n")
    return platform


def mirror_of(sources: list[str]) -> str:
    """The first Debian mirror of apt's sources (pure): an enabled deb822 stanza of binary packages, or a one-line
    `deb [options] URI suite components` entry, whose URI ends in /debian and whose components include main; a
    security suite is not a mirror ("" if none)."""
    for text in sources:
        for stanza in re.split(r"\n\s*\n", text):
            fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", stanza, flags=re.MULTILINE))
            uris, suites = fields.get("URIs", "").split(), fields.get("Suites", "").split()
            if (
                "deb" in fields.get("Types", "").split()
                and fields.get("Enabled", "yes").lower() != "no"
                and "main" in fields.get("Components", "").split()
                and not any("security" in suite or "/" in suite for suite in suites)
                and uris
                and uris[0].rstrip("/").endswith("/debian")
            ):
                return uris[0]
        for line in text.splitlines():
            words = re.sub(r"\[[^\]]*\]", " ", line.split("#")[0]).split()  # [signed-by=...] and other options
            if (
                len(words) >= 4
                and words[0] == "deb"
                and "main" in words[3:]
                and "security" not in words[2]
                and words[1].rstrip("/").endswith("/debian")
            ):
                return words[1]
    return ""


def machine_mirror() -> str:
    apt = Path("/etc/apt")
    files = [
        apt / "sources.list",
        *sorted((apt / "sources.list.d").glob("*.sources")),
        *sorted((apt / "sources.list.d").glob("*.list")),
    ]
    found = mirror_of([f.read_text() for f in files if f.is_file()])
    if not found:
        raise ClusterError("apt's sources name no Debian mirror with main (/etc/apt): add one, then run `up` again")
    return found


def root_of(platform: Platform) -> Path:
    return ROOTS / platform.name


def slurm_files(root: Path) -> list[str]:
    """The paths of the Slurm packages' programs under `root` (/usr/bin/sbatch, /usr/sbin/slurmd-wlm, ...),
    as dpkg lists them there."""
    found = []
    for package in SLURM_PACKAGES:
        listing = root / "var/lib/dpkg/info" / f"{package}.list"
        if not listing.exists():
            raise ClusterError(
                f"{root} lacks the package {package}: `deploy/devcluster reset` removes nothing of it; "
                f"delete {root} and run `up` again to make it anew"
            )
        for line in listing.read_text().splitlines():
            path = root / line.lstrip("/")
            if re.fullmatch(r"/usr/s?bin/[\w.-]+", line) and path.is_file() and not path.is_symlink():
                found.append(line)
    return sorted(set(found))


def root_folder(path: Path, mode: int = 0o755) -> Path:
    """`path` as a folder of root's that no one else may write (made with `mode` if missing): what root runs and
    every account loads Slurm from lies under it, so a folder someone else made or may write is refused."""
    path.mkdir(mode=mode, parents=True, exist_ok=True)
    found = path.lstat()
    if path.is_symlink() or found.st_uid != 0 or found.st_mode & 0o022:
        raise ClusterError(
            f"{path} is not a folder of root's alone to write (a link, or another's): remove it and run `up` again"
        )
    path.chmod(mode)
    return path


def harden(root: Path) -> None:
    """What debootstrap's root holds that no one should reach through it: its device nodes (a console of its own,
    0666), the set-id bits of its programs (su, mount, newgrp: copies the machine's updates never reach) and the
    write bits for all (its /tmp).  Nothing of it runs but Slurm's programs, with the root's libraries."""
    base = ["find", str(root), "-xdev"]
    run([*base, "(", "-type", "c", "-o", "-type", "b", "-o", "-type", "p", "-o", "-type", "s", ")", "-delete"])
    run([*base, "-type", "f", "-perm", "/6000", "-exec", "chmod", "ug-s", "{}", "+"])
    run([*base, "-perm", "-0002", "!", "-type", "l", "-exec", "chmod", "o-w", "{}", "+"])


def ensure_root(platform: Platform) -> Path:
    """The platform's Debian root with its Slurm packages, made by debootstrap once (a minute or so), hardened."""
    root = root_of(platform)
    root_folder(ROOTS)
    if not (root / "var/lib/dpkg/info/slurmd.list").exists():
        # made in a folder of root's alone: the root's own /tmp is everyone's until harden(), and the root itself
        # must be open to all (its packages' scripts run programs in it as other accounts: su -s /bin/sh ...)
        building = root_folder(ROOTS / ".building", mode=0o700)
        part = building / root.name
        remove_tree(part)  # of a debootstrap that failed
        part.mkdir(mode=0o755)
        mirror = machine_mirror()
        say(f"making a Debian {platform.suite} root for Slurm {platform.slurm} in {root} (debootstrap, a minute or so)")
        run(["debootstrap", "--variant=minbase", platform.suite, str(part), mirror], timeout=1200)
        # no daemon of the root starts while its packages install (they would take the cluster's ports)
        policy = part / "usr/sbin/policy-rc.d"
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        env = ["env", "DEBIAN_FRONTEND=noninteractive", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"]
        run(["chroot", str(part), *env, "apt-get", "update", "-qq"], timeout=600)
        install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *SLURM_PACKAGES]
        run(["chroot", str(part), *env, *install], timeout=1200)
        run(["chroot", str(part), *env, "apt-get", "clean"], timeout=120)
        harden(part)
        part.rename(root)
    harden(root)  # also a root an earlier `up` made before it hardened
    return root


def mounts_under(folder: Path, mounts: str) -> list[str]:
    """Mount points at or below `folder` in /proc/mounts' text, deepest first (pure)."""
    points = [line.split()[1] for line in mounts.splitlines() if len(line.split()) > 1]
    inside = [p for p in points if p == str(folder) or p.startswith(f"{folder}/")]
    return sorted(inside, key=len, reverse=True)


def remove_tree(folder: Path) -> None:
    """`folder` and all in it, once nothing is mounted there: a debootstrap that failed may leave the machine's
    /proc, /sys or /dev mounted in its root, and deleting through those would delete the machine's own files.
    Mounts are looked up by the resolved path, as /proc/mounts names them."""
    folder = folder.resolve()
    for point in mounts_under(folder, Path("/proc/mounts").read_text()):
        run(["umount", "--lazy", point], check=False)
    if mounts_under(folder, Path("/proc/mounts").read_text()):
        raise ClusterError(f"something is still mounted in {folder}: unmount it, then run `up` again")
    shutil.rmtree(folder, ignore_errors=True)


def debootstrap(suite: str, target: Path, include: tuple[str, ...] = (), timeout: float = 1200) -> None:
    """A minbase Debian `suite` in `target` (with `include`'s packages), from the mirror this machine's apt uses,
    its packages kept in CACHE/debootstrap: a download, kept by `reset`, so a second root downloads nothing."""
    cache = CACHE / "debootstrap"
    cache.mkdir(parents=True, exist_ok=True)
    argv = ["debootstrap", "--variant=minbase", f"--cache-dir={cache}"]
    argv += [f"--include={','.join(include)}"] if include else []
    run([*argv, suite, str(target), machine_mirror()], timeout=timeout)


def patchelf_argv(path: Path, root: Path, stage: Path, program: bool) -> list[str]:
    """patchelf's arguments that make one of the root's files run from the root on this machine (pure): its own
    Slurm libraries first, then this machine's libmariadb (stage/compat), then the root's; a program's loader is
    the root's.  DT_RPATH, not RUNPATH: it also holds for what a plugin loads in turn."""
    search = f"{stage / 'slurm-wlm'}:{stage / 'compat'}:{root / 'usr/lib/x86_64-linux-gnu'}"
    loader = ["--set-interpreter", str(root / "usr/lib64/ld-linux-x86-64.so.2")] if program else []
    return ["patchelf", *loader, "--force-rpath", "--set-rpath", search, str(path)]


def stage_of(platform: Platform) -> Path:
    """The stage of the root as it is now: a folder per root's state (its Slurm packages, STAGE_FORMAT), so a new
    one is made beside the one whose files are bound and running, never over it."""
    root = root_of(platform)
    listing = root / "var/lib/dpkg/info/slurmd.list"
    made = f"{root}\n{listing.stat().st_mtime_ns if listing.exists() else 0}\n{STAGE_FORMAT}\n"
    return STAGES / f"{platform.name}-{hashlib.sha256(made.encode()).hexdigest()[:12]}"


def ensure_stage(platform: Platform, root: Path) -> Path:
    """The root's Slurm programs and plugins, copied and patched (seconds), once per root's state."""
    stage = stage_of(platform)
    done = stage / ".done"
    if done.exists():
        return stage
    say(f"making Slurm {platform.slurm}'s programs run from {root} ({stage})")
    remove_tree(stage)  # a copy that stopped half-way
    root_folder(stage / "compat")
    shutil.copy2(MARIADB_LIBRARY, stage / "compat")
    # without the PMIx plugins: they look for PMIx at the root's path, which this machine lacks, and slurmd 24.11
    # loads every MPI plugin at its start (two error lines a start); no job of the dev cluster asks for PMIx
    shutil.copytree(
        root / PLUGINS.relative_to("/"), stage / "slurm-wlm", symlinks=True, ignore=shutil.ignore_patterns("mpi_pmix*")
    )
    for line in slurm_files(root):
        target = stage / line.lstrip("/")
        root_folder(target.parent)
        shutil.copy2(root / line.lstrip("/"), target)
        run(patchelf_argv(target, root, stage, program=True))
    for library in (stage / "slurm-wlm").rglob("*.so*"):
        if library.is_file() and not library.is_symlink():
            run(patchelf_argv(library, root, stage, program=False))
    run(["chmod", "-R", "go-w", str(stage)])
    done.write_text(f"{root}\n")
    return stage


def prepare(platform: Platform) -> Path | None:
    """The platform's root and stage, made where missing (a minute or so the first time), nothing bound yet: what
    may fail or take long happens while the cluster still runs.  None for the machine's own."""
    if platform.own:
        return None
    root_folder(STAGES)
    return ensure_stage(platform, ensure_root(platform))


def bound_paths(staged: list[str], machine: list[str]) -> list[str]:
    """The Slurm programs to bind: those of the root's that this machine's packages have too, by path (pure).  The
    alternatives' links (/usr/sbin/slurmd -> /usr/sbin/slurmd-wlm) follow their files; a program new in the root's
    release (scrun, scrontab) is left out: no site's 22.05 setup calls it."""
    return sorted(set(staged) & set(machine))


def binds(stage: Path) -> list[tuple[Path, Path]]:
    """(source, mount point) of every bind a root's platform needs: the programs, then the plugins' folder."""
    staged = [str(Path("/") / p.relative_to(stage)) for p in stage.glob("usr/*bin/*")]
    paths = bound_paths(staged, slurm_files(Path("/")))
    return [*((stage / p.lstrip("/"), Path(p)) for p in paths), (stage / "slurm-wlm", PLUGINS)]


def installed_slurm_files(root: Path = Path("/")) -> list[str]:
    """slurm_files of `root`, or none where its Slurm packages are not installed (a new machine before its first
    `up`: `reset` then has nothing of Slurm's to unbind, and must not fail)."""
    if not all((root / "var/lib/dpkg/info" / f"{package}.list").exists() for package in SLURM_PACKAGES):
        return []
    return slurm_files(root)


def bound_over(proc_mounts: str, ours: set[Path]) -> list[Path]:
    """The mount points of /proc/mounts' text that are among `ours`, in mount order (pure)."""
    points = [Path(line.split()[1]) for line in proc_mounts.splitlines() if len(line.split()) > 1]
    return [p for p in points if p in ours]


def mounted() -> list[Path]:
    """The machine's Slurm paths that something is bound over, in mount order."""
    ours = {Path(p) for p in installed_slurm_files()} | {PLUGINS}
    return bound_over(Path("/proc/mounts").read_text(), ours)


def _same_file(a: Path, b: Path) -> bool:
    first, second = a.stat(), b.stat()
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def in_place(stage: Path) -> bool:
    """Every bind of `stage` is in place and nothing else is bound over Slurm's paths: each mount point is its
    source's very file (a bind shows its source's device and inode)."""
    wanted = binds(stage)
    return set(mounted()) == {point for _, point in wanted} and all(_same_file(s, p) for s, p in wanted)


def switching(platform: Platform, stage: Path | None) -> bool:
    """Whether the machine's Slurm programs are not yet `platform`'s (stage: prepare's): its daemons must stop."""
    return bool(mounted()) if stage is None else not in_place(stage)


def ensure(platform: Platform, stage: Path | None) -> None:
    """The machine runs `platform`'s Slurm programs (stage: prepare's): its programs bound read-only, or every
    bind gone for the machine's own; the platform's older stages removed.  Its Slurm daemons must be stopped."""
    if stage is None:
        remove_binds()
        return
    if not in_place(stage):
        remove_binds()
        for source, point in binds(stage):
            run(["mount", "--bind", "-o", "ro", str(source), str(point)])
        if not in_place(stage):
            raise ClusterError(
                f"binding {stage} over the machine's Slurm failed: see /proc/mounts, then run `up` again"
            )
    for older in STAGES.glob(f"{platform.name}-*"):
        if older != stage:
            remove_tree(older)


def remove_binds() -> None:
    """Every bind over Slurm's paths gone.  Lazily: a process still running a bound program (a user's `squeue`, a
    slurmstepd exiting) keeps its file, and nothing new starts from it."""
    for point in reversed(mounted()):
        run(["umount", "--lazy", str(point)], check=False)
    left = mounted()
    if left:
        raise ClusterError(f"could not unbind {left[0]}: see /proc/mounts, then run `up` again")


def remove() -> None:
    """Every bind and the choice (reset); the roots and their patched programs stay, as downloads."""
    remove_binds()
    CHOSEN.unlink(missing_ok=True)
