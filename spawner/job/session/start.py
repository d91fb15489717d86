"""Session start on the compute node, as the user, before JupyterLab starts.

~/templates from the portal's notebooks, storage links, and kernelspecs in a
session-private folder put first on JUPYTER_PATH.  The hub passes what the
admin configured in DSPORTAL_SESSION (spawner/sessionspec.py).  A step that
fails is a line in the session log, never a failed start; a spec this node
cannot read is one line there too, and ends the start.
"""

from __future__ import annotations

import fcntl
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ...contract import KERNEL_PYTHON_VAR, data_dir
from ...sessionspec import SessionSpec
from ..kernels.isolation import page_config, socket_path_fits
from ..kernels.kernelspecs import NodeProbe, build_kernelspecs, write_kernelspecs
from ..kernels.logos import copy_stock_logos
from ..kernels.userlayer import ensure_layer, portal_site_packages
from ..receipts import environment
from ..receipts.environment import kernels_offered
from .homefolder import link_storage, sync_templates


def say(message: str) -> None:
    print(f"dsportal: {message}", flush=True)


def session_dir(base: Path, user: str, job_id: str) -> Path:
    """A fresh private folder (mode 0700, unpredictable name) for this session's kernelspecs and kernel sockets.

    mkdtemp, not a fixed name: on a shared node another account could create
    a fixed-name folder first and plant kernelspecs in it.  This user's
    folders of earlier sessions are removed, but not those of their other
    sessions still running on this node (a user may run several): each
    session holds a lock on its folder's LOCK file for as long as it runs
    (`hold`), and a folder whose lock can be taken is no one's any more.
    """
    uid = os.getuid()
    for old in base.glob(f"dsportal-{user}-*"):
        try:
            if not old.is_symlink() and old.is_dir() and old.stat().st_uid == uid and not in_use(old):
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            continue
    folder = Path(tempfile.mkdtemp(prefix=f"dsportal-{user}-{job_id}-", dir=base))
    hold(folder)
    return folder


LOCK = ".in-use"
_HELD: list = []  # the open lock files: kept open (and locked) as long as this process and its fork live


def hold(folder: Path) -> None:
    """Lock `folder` as this session's: the lock lasts while the session's processes (the keeper, the server,
    which inherits it across the fork) keep the file open."""
    handle = open(folder / LOCK, "w")  # noqa: SIM115 - held open for the session's life on purpose
    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    _HELD.append(handle)


def in_use(folder: Path) -> bool:
    """Whether a running session holds `folder`'s lock (False for a folder without one: an older session's)."""
    try:
        with open(folder / LOCK) as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
            return False
    except FileNotFoundError:
        return False


KEEP_LOGS = 10


def prune_session_logs(home: Path, keep: int = KEEP_LOGS) -> None:
    """Keep the newest `keep` session job logs (~/.dsportal-session-<job>.log) of this user."""
    logs = sorted(home.glob(".dsportal-session-*.log"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in logs[keep:]:
        old.unlink(missing_ok=True)


def read_spec(environ: dict[str, str] | os._Environ) -> SessionSpec:
    """The hub's session spec; one that cannot be read stops the session here, with the reason in its log."""
    try:
        return SessionSpec.from_environ(environ)
    except ValueError as e:
        say(
            f"{e}; the session cannot start. Tell the cluster admins (DS Portal on the hub and on this node "
            "must be the same version)."
        )
        raise SystemExit(1) from None


def prepare(environ: dict[str, str] | os._Environ = os.environ, probe: NodeProbe | None = None) -> dict[str, str]:
    """Prepare the home and the kernels; return the variables JupyterLab must start with."""
    spec = read_spec(environ)
    home = Path(environ.get("HOME") or Path.home())
    user = environ.get("USER", "user")
    updates: dict[str, str] = {}

    try:
        prune_session_logs(home)
        for line in sync_templates(data_dir("notebooks"), home / "templates"):
            say(f"templates: {line}")
    except OSError as e:
        say(f"templates: could not refresh ~/templates ({e})")

    try:
        for line in link_storage(home, spec.storage):
            say(line)
    except OSError as e:
        say(f"storage links: {e}")

    updates.update(usage_limits(environ))
    try:
        base = Path(environ.get("TMPDIR") or tempfile.gettempdir())
        folder = session_dir(base, user, environ.get("SLURM_JOB_ID", str(os.getpid())))
    except OSError as e:
        say(f"kernels: no private session folder ({e}); only the default Python 3 kernel is offered")
        return updates
    runtime = folder / "runtime"
    runtime.mkdir(mode=0o700)
    if not socket_path_fits(str(runtime)):
        say(f"kernel sockets: {runtime} is too long a path for them (kernels will not start); set a shorter TMPDIR")
    updates["JUPYTER_RUNTIME_DIR"] = str(runtime)  # the kernels' sockets: spawner/job/kernels/isolation.py
    config = lab_config(folder, news=spec.jupyterlab_news)
    updates["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
        filter(None, [str(config), environ.get("JUPYTER_CONFIG_PATH", "")])
    )
    python = kernel_python(home, spec.kernels)
    updates[KERNEL_PYTHON_VAR] = python  # the user's apps run with it too (spawner/jupyter/apps/handlers.py)
    if spec.kernels:
        updates["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(folder), environ.get("JUPYTER_PATH", "")]))
        updates[SESSION_KERNELS_VAR] = str(folder / "kernels")

    def in_the_background() -> None:
        # Probing the node (R, modules, images) takes most of a second, while the server starts; a page's first
        # ask for the kernel list waits for them (spawner/jupyter/session/kernelspecs.py).  The receipt's
        # environment after them: nothing waits for it
        offered = {"python3": {}}
        if spec.kernels:
            offered = write_session_kernels(
                folder, spec.kernels, spec.storage, home, python, probe or NodeProbe(), str(runtime)
            )
        record_environment(home, environ, python, kernels_offered(offered, spec.kernels))

    in_background(in_the_background)
    return updates


def record_environment(home: Path, environ, python: str, kernels: list[dict]) -> None:
    """The session's environment for its receipt (spawner/job/receipts/environment.py); a failure is one line."""
    job_id = environ.get("SLURM_JOB_ID", "")
    if not job_id:
        return
    try:
        environment.record(home, job_id, "session", environ, python, kernels, home)
    except (OSError, ValueError) as e:
        say(f"receipt: what this session runs with was not recorded ({e})")


def usage_limits(environ) -> dict[str, str]:
    """jupyter-resource-usage's limits (its status bar item) from what Slurm gave the job, not the node's."""
    limits = {}
    memory = environ.get("SLURM_MEM_PER_NODE", "")
    if memory.isdigit():
        limits["MEM_LIMIT"] = str(int(memory) * 1024 * 1024)  # Slurm says MiB; the extension wants bytes
    cpus = environ.get("SLURM_CPUS_PER_TASK") or environ.get("SLURM_CPUS_ON_NODE", "")
    if cpus.isdigit():
        limits["CPU_LIMIT"] = cpus
    return limits


NEWS_PLUGIN = "@jupyterlab/apputils-extension:notification"


def lab_config(folder: Path, news: bool) -> Path:
    """A Jupyter config folder of the session: JupyterLab without its debugger (page_config.json), and,
    unless the admin allows Jupyter's news, whose default is "never fetch it" (no prompt).

    jupyterlab_server layers labconfig/*.json of every folder on
    JUPYTER_CONFIG_PATH; a user's own choice in the settings still wins.
    """
    config = folder / "config"
    (config / "labconfig").mkdir(parents=True, exist_ok=True)
    (config / "labconfig" / "page_config.json").write_text(json.dumps(page_config()))
    if not news:
        (config / "labconfig" / "default_setting_overrides.json").write_text(
            json.dumps({NEWS_PLUGIN: {"fetchNews": "false", "checkForUpdates": False}})
        )
    return config


def kernel_python(home: Path, kernels: dict) -> str:
    """The Python 3 kernel's python: the user's layer of their own packages (spawner/job/kernels/userlayer.py)
    where the admin allows it and it can be made, else the portal's."""
    if not kernels.get("user_packages", True):
        return sys.executable
    try:
        return str(ensure_layer(home, sys.executable, portal_site_packages()))
    except (OSError, subprocess.TimeoutExpired) as e:
        say(f"your packages: no folder for %pip install ({e}); Python 3 has the portal's packages only")
        return sys.executable


# The session's kernelspecs folder, named to the session's server (spawner/jupyter/session/kernelspecs.py), which
# waits for it: it appears whole, once every kernelspec is written (or none could be).
SESSION_KERNELS_VAR = "DSPORTAL_SESSION_KERNELS"


def write_session_kernels(
    folder: Path, kernels: dict, storage: dict[str, str], home: Path, python: str, probe: NodeProbe, sockets: str
) -> dict[str, dict]:
    """folder/kernels, all at once: written beside it, then renamed into place.  A kernel list never holds some
    of them, nor the stock ones of their names with files about to go (logos: spawner/job/kernels/logos.py)."""
    try:
        specs, notes = build_kernelspecs(
            kernels, storage, str(home), python, str(Path(sys.executable).parent), probe, sockets
        )
        written = Path(tempfile.mkdtemp(prefix=".kernels-", dir=folder))
        write_kernelspecs(written, specs)
        copy_stock_logos(written, str(home))
        written.rename(folder / "kernels")
    finally:
        (folder / "kernels").mkdir(exist_ok=True)  # even none written: done, the server stops waiting
    for note in notes:
        say(note)
    say(f"kernels: {', '.join(specs)}")
    return specs


def in_background(work) -> None:
    """Run `work` in a detached process (double fork: no zombie is left to the JupyterLab process)."""
    sys.stdout.flush()
    child = os.fork()
    if child:
        os.waitpid(child, 0)
        return
    try:
        if os.fork() == 0:
            os.nice(19)  # the probes (R, the module system) must not slow JupyterLab's own start on the job's cores
            gc.enable()  # held by the session's start (spawner/jupyter/session/deferred.py); not this process's
            try:
                work()
            except Exception as e:  # noqa: BLE001 - nothing may escape a forked process; the log says it
                say(f"kernels: could not write the kernelspecs ({e}); only the default Python 3 kernel is offered")
            sys.stdout.flush()
    finally:
        os._exit(0)
