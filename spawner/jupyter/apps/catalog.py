"""The apps a session can serve, and the command that serves each on a Unix socket (pure).

Every app listens on a Unix socket in the session's private runtime folder
(0700, spawner/job/session/start.py), never on TCP: a node's other accounts
reach anything on its TCP ports, loopback included.  Where the app's own
server can bind a Unix socket it is told to (code-server `--socket`, MLflow's
uvicorn `--uds`); the user's Streamlit and Dash apps, whose own servers bind
TCP only, are served by uvicorn or gunicorn on the socket through the
frameworks' public application objects (spawner/job/apps/).

Gradio, Panel and Voilà are not offered yet: Gradio's launcher binds TCP only
(its FastAPI application could be served the same way); Panel's `--unix-socket`
and Voilà as a server extension would fit, but neither is installed here to
test them against.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

FILE_APPS = ("streamlit", "dash")  # served from a file of the user's
FOLDER_APPS = ("vscode", "mlflow")  # opened on a folder


@dataclass(frozen=True)
class Launch:
    """How to start one app: its command, extra environment, working folder, and whether it expects the
    full path of its requests (its own prefix) or the path below the app's prefix."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    absolute: bool
    private: list[str] = field(default_factory=list)  # folders made 0700 before the start (the app's state)
    files: dict[str, str] = field(default_factory=dict)  # files written before the start where there is none yet


@dataclass(frozen=True)
class Kind:
    name: str
    title: str  # in the launcher and the list
    target: str  # "file" or "folder"
    program: str  # what the node must have: a command ("cmd:code-server") or a Python module ("py:mlflow")


KINDS: dict[str, Kind] = {
    "vscode": Kind("vscode", "VS Code", "folder", "cmd"),
    "mlflow": Kind("mlflow", "MLflow", "folder", "py:mlflow"),
    "streamlit": Kind("streamlit", "Streamlit app", "file", "py:streamlit"),
    "dash": Kind("dash", "Dash app", "file", "py:dash"),
}

# VS Code's settings when the user has none yet: a task a folder asks to run when it opens never runs by itself
# (Workspace Trust already holds it back in a folder not trusted)
VSCODE_SETTINGS = '{\n  "task.allowAutomaticTasks": "off",\n  "security.workspace.trust.enabled": true\n}\n'
MLFLOW_DB = "mlflow.db"
# Python started in a folder (`python -m mlflow` in the folder of runs, uvicorn or gunicorn in the app's) puts
# that folder first on its path, and so do uvicorn (its --app-dir) and gunicorn (its --chdir): a mlflow.py,
# uvicorn.py or streamlit.py there (in a folder others may write to) would run in place of the installed one,
# as the user.  -P, and the private apps folder as uvicorn's app dir and gunicorn's, keep it off (the user's
# app still finds its own modules: Streamlit and spawner/job/apps/dashapp.py put its folder on the path when
# they run it); MLflow starts a uvicorn of its own, so for MLflow it is PYTHONSAFEPATH, which that one inherits.
MLFLOW_ENV = {
    "PYTHONSAFEPATH": "1",
    # MLflow's server and its page report usage to MLflow's makers unless told not to
    "MLFLOW_DISABLE_TELEMETRY": "true",
    # its job runner (server-side GenAI evaluations, not the tracking UI) starts 8 processes, 1.8 GB idle
    "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
}  # MLflow's default store since 3.7: sqlite:///mlflow.db in the working folder


def launch(
    kind: str, target: str, socket: str, prefix: str, python: str, code_server: str, home: str, path: str = ""
) -> Launch:
    """The command serving app `kind` for `target` (an absolute file or folder) on `socket`, reached by the
    browser under `prefix` (the app's path on the session's server, ending in /); `path`: the session's PATH,
    which the app gets with `python`'s folder first (VS Code's terminal, an app's subprocesses: the user's
    Python 3, with their own packages)."""
    spec = _launch(kind, target, socket, prefix, python, code_server, home)
    search = ":".join(filter(None, [str(PurePosixPath(python).parent), path]))
    return replace(spec, env={"PATH": search, **spec.env})


def _launch(kind: str, target: str, socket: str, prefix: str, python: str, code_server: str, home: str) -> Launch:
    if kind == "vscode":
        return _vscode(target, socket, code_server, home)
    if kind == "mlflow":
        return _mlflow(target, socket, prefix, python)
    private = str(PurePosixPath(socket).parent)  # the session's apps folder (0700): nothing of others' in it
    if kind == "streamlit":
        argv = [python, "-P", "-m", "uvicorn", "--app-dir", private, "--uds", socket]
        argv += ["--factory", "spawner.job.apps.streamlitapp:make"]
        return Launch(argv, {"DSPORTAL_APP_FILE": target}, str(PurePosixPath(target).parent), absolute=False)
    if kind == "dash":
        # no control socket (gunicorn's default, in the home, which a second app would take over) and no
        # ./gunicorn.conf.py of the app's folder
        argv = [python, "-P", "-m", "gunicorn", "--bind", f"unix:{socket}", "--workers", "1", "--threads", "4"]
        argv += ["--no-control-socket", "--config", "/dev/null", "--chdir", private]
        argv += ["spawner.job.apps.dashapp:make()"]
        # Dash builds its pages' URLs from this prefix; its routes stay at / (the proxy strips the prefix)
        env = {"DSPORTAL_APP_FILE": target, "DASH_REQUESTS_PATHNAME_PREFIX": prefix}
        return Launch(argv, env, str(PurePosixPath(target).parent), absolute=False)
    raise ValueError(f"unknown app {kind!r}")


def _vscode(folder: str, socket: str, code_server: str, home: str) -> Launch:
    state = f"{home}/.local/share/dsportal/code-server"  # its settings, extensions and session socket
    argv = [
        code_server,
        "--socket",
        socket,
        "--socket-mode",
        "600",
        # the socket is the guard: a 0700 folder, a 0600 socket, reached only through the session's login
        "--auth",
        "none",
        # its proxy of any port of the node (/proxy/PORT, /absproxy/PORT) would put whatever another account
        # serves there on the session's origin
        "--disable-proxy",
        "--disable-telemetry",
        "--disable-update-check",
        "--ignore-last-opened",  # the folder it was opened on, not the one it showed last time
        # Workspace Trust stays on: a folder another user can write to (.vscode/tasks.json, settings) runs
        # nothing until the user trusts it
        "--user-data-dir",
        state,
        "--extensions-dir",
        f"{state}/extensions",
        "--config",  # else it writes ~/.config/code-server/config.yaml with a password it never asks for
        f"{state}/config.yaml",
        folder,
    ]
    return Launch(
        argv, {}, folder, absolute=False, private=[state], files={f"{state}/User/settings.json": VSCODE_SETTINGS}
    )


def _mlflow(folder: str, socket: str, prefix: str, python: str) -> Launch:
    argv = [
        python,
        "-m",
        "mlflow",
        "server",
        "--backend-store-uri",
        f"sqlite:///{PurePosixPath(folder) / MLFLOW_DB}",
        "--static-prefix",
        prefix.rstrip("/"),
        "--workers",
        "1",
        # MLflow refuses Host headers other than its own address (DNS rebinding); on a Unix socket reached
        # through the session's login alone no other site can reach it, and the Host is the portal's
        "--allowed-hosts",
        "*",
        "--uvicorn-opts",
        f"--uds {shlex.quote(socket)} --app-dir {shlex.quote(str(PurePosixPath(socket).parent))}",
    ]
    return Launch(argv, MLFLOW_ENV, folder, absolute=True)


FRAMEWORK_IMPORT = re.compile(r"^\s*(?:import|from)\s+(streamlit|dash)\b", re.MULTILINE)


def framework_of(source: str) -> str | None:
    """Which app framework a Python file is written for, from its first framework import (pure)."""
    found = FRAMEWORK_IMPORT.search(source)
    return found.group(1) if found else None


def offered_kinds(
    wanted: tuple[str, ...], code_server: str, which: Callable[[str], str | None], has_module: Callable[[str], bool]
) -> tuple[list[str], list[str]]:
    """The apps of `wanted` this node can serve, and a line for each one left out (what is missing)."""
    offered, notes = [], []
    for name in wanted:
        kind = KINDS.get(name)
        if kind is None:
            notes.append(f"app {name} left out: this version of the session does not know it")
            continue
        if kind.program == "cmd":
            if which(code_server) is None:
                notes.append(f"app {name} left out: {code_server} is not on this node (apps.code_server)")
                continue
        elif not has_module(kind.program.removeprefix("py:")):
            notes.append(f"app {name} left out: the Python package {kind.program[3:]} is not installed")
            continue
        offered.append(name)
    return offered, notes
