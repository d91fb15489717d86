"""The running apps of one session: started on a private Unix socket, listed, stopped; never restarted.

Runs in the session's Jupyter server (in the Slurm job, as the user).  Each
app is a process group of its own, started by this server (so the session's
usage sampler, which reads the server's process tree, counts it), serving on
`<runtime folder>/apps/<id>.sock`.  An app that exits stays in the list as
ended, with the end of its log, until the user starts it again or removes it:
the portal restarts nothing by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from .catalog import FILE_APPS, KINDS, MLFLOW_DB, Launch, framework_of, launch
from .origin import Entries, per_user_origins, route_at_hub, session_base, unroute_at_hub

log = logging.getLogger("dsportal.apps")

STOP_SECONDS = 5.0  # SIGTERM, then this long before SIGKILL
LOG_TAIL = 2000  # characters of an app's log shown when it fails


class AppError(ValueError):
    """The app cannot be started; str(e) says why and what to do."""


class TooManyError(AppError):
    pass


@dataclass
class App:
    id: str
    kind: str
    target: str
    url: str
    socket: str
    log_path: str
    absolute: bool
    origin: str = ""  # the app's own origin (origin.py), where the browser reaches it
    process: asyncio.subprocess.Process | None = field(default=None, repr=False)
    state: str = "starting"  # starting, running, ended
    ended: str = ""  # why it ended, in words

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "kind": self.kind,
            "title": KINDS[self.kind].title,
            "target": self.target,
            "url": self.url,
            "state": self.state,
            "ended": self.ended,
        }


def log_tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - LOG_TAIL))
            return f.read().decode(errors="replace").strip()
    except OSError:
        return ""


async def answers(path: str) -> bool:
    """Whether something accepts connections on the Unix socket `path` (within a second)."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_unix_connection(path), 1)
    except (OSError, TimeoutError):
        return False
    writer.close()
    return True


NO_ORIGIN = (
    "Apps are served at an origin of their own, which needs the portal's per-user origins (hub.subdomain_host); "
    "this portal has none, so apps are off. Ask your admin."
)


class Apps:
    """The apps of one session (see the module's words)."""

    def __init__(
        self,
        root: Path,
        runtime: Path,
        base_url: str,
        offered: list[str],
        python: str,
        code_server: str,
        max_running: int,
        start_seconds: float,
        environ: dict[str, str] | None = None,
    ):
        self.root = root
        self.folder = runtime / "apps"
        self.base_url = base_url.rstrip("/") + "/"
        self.offered = offered
        self.python = python
        self.code_server = code_server
        self.max_running = max_running
        self.start_seconds = start_seconds
        self.environ = dict(os.environ if environ is None else environ)
        self._apps: dict[str, App] = {}
        self._ids: dict[tuple[str, Path], str] = {}  # (kind, file or folder) -> the id of its app
        self._starting: dict[tuple[str, Path], asyncio.Future] = {}
        self.per_user_origins = per_user_origins(self.environ)  # each app's own origin needs them (origin.py)
        self.session_origin = session_base(self.environ)
        self.entries = Entries()
        self.router = route_at_hub  # app id -> the app's own origin, routed by the hub
        self.unrouter = unroute_at_hub  # app id: its route goes when it stops

    def prefix(self, id_: str) -> str:
        return f"{self.base_url}dsportal/apps/{id_}/"

    def resolve(self, kind: str, target: str) -> Path:
        """The app's file or folder, absolute; AppError saying what to choose instead."""
        if kind not in self.offered:
            offered = ", ".join(KINDS[k].title for k in self.offered) or "none"
            raise AppError(f"{kind!r} is not an app this session offers (offered: {offered}).")
        wanted = KINDS[kind].target
        if not isinstance(target, str) or "\x00" in target:
            raise AppError(f"Choose a {wanted} for {KINDS[kind].title}.")
        path = (self.root / (target.strip() or ".")).resolve()
        if wanted == "folder" and not path.is_dir():
            raise AppError(f"{target} is not a folder; choose a folder for {KINDS[kind].title}.")
        if wanted == "file" and not path.is_file():
            raise AppError(f"{target} is not a file; choose the Python file of your app.")
        if kind == "mlflow" and not (path / MLFLOW_DB).is_file():
            raise AppError(
                f"{target} holds no MLflow runs ({MLFLOW_DB}): choose the folder your notebook or script ran "
                "in, where MLflow wrote mlflow.db."
            )
        return path

    @staticmethod
    def kind_of_file(path: Path) -> str:
        """The framework a Python file is an app of; AppError when it imports none the portal serves."""
        try:
            source = path.read_text(errors="replace")
        except OSError as e:
            raise AppError(f"{path} cannot be read: {e.strerror}.") from None
        kind = framework_of(source)
        if kind is None:
            raise AppError(f"{path.name} imports neither streamlit nor dash; the portal opens Streamlit and Dash apps.")
        return kind

    async def open(self, kind: str, target: str) -> tuple[App, bool]:
        """The app `kind` for `target`, started if it is not running; (app, started now).  kind "auto": the
        framework the file imports."""
        if not self.per_user_origins:  # an app on the session's own origin would script the session (origin.py)
            raise AppError(NO_ORIGIN)
        if kind == "auto":
            path = (self.root / str(target).strip()).resolve()
            kind = self.kind_of_file(path) if path.is_file() else "?"
            if kind not in FILE_APPS:
                raise AppError(f"{target} is not a file; choose the Python file of your app.")
        path = self.resolve(kind, target)
        key = (kind, path)
        current = self._apps.get(self._ids.get(key, ""))
        if current is not None and current.state == "running":
            return current, False
        if key in self._starting:  # a second click while it starts: the same start
            return await asyncio.shield(self._starting[key]), False
        running = [a for a in self._apps.values() if a.state != "ended"]
        if len(running) >= self.max_running:
            raise TooManyError(f"{len(running)} apps are running, the most a session may run; stop one and try again.")
        if current is not None:  # ended: its start again replaces it
            self._apps.pop(current.id, None)
        # a new id at each start, that no other page can guess: an app's address is no secret, but a page of
        # another origin that cannot name it cannot even send the browser there
        id_ = secrets.token_hex(6)
        self._ids[key] = id_
        future = asyncio.get_running_loop().create_future()
        self._starting[key] = future
        try:
            app = await self._start(id_, kind, path)
            future.set_result(app)
            return app, True
        except BaseException as e:
            future.set_exception(e)
            future.exception()  # retrieved: a lone start leaves no "never retrieved" warning
            raise
        finally:
            del self._starting[key]

    def _launch(self, id_: str, kind: str, path: Path) -> Launch:
        return launch(
            kind,
            str(path),
            str(self.folder / f"{id_}.sock"),
            self.prefix(id_),
            self.python,
            self.code_server,
            self.environ.get("HOME", str(Path.home())),
            self.environ.get("PATH", "/usr/bin:/bin"),
        )

    async def _start(self, id_: str, kind: str, path: Path) -> App:
        try:
            origin = await self.router(id_)  # before anything starts: an app never serves without its own origin
        except Exception as e:  # noqa: BLE001 - the hub's words (web.HTTPError), or why it could not be asked
            words = getattr(e, "log_message", None) or str(e)
            raise AppError(f"The hub could not give {KINDS[kind].title} an address of its own: {words}") from None
        self.folder.mkdir(mode=0o700, exist_ok=True)
        spec = self._launch(id_, kind, path)
        for folder in spec.private:
            Path(folder).mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(folder, 0o700)
        for name, text in spec.files.items():
            Path(name).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError), open(name, "x") as f:  # the user's own settings win
                f.write(text)
        sock = self.folder / f"{id_}.sock"
        with contextlib.suppress(FileNotFoundError):
            sock.unlink()  # an earlier run's
        log_path = self.folder / f"{id_}.log"
        app = App(id_, kind, str(path), self.prefix(id_), str(sock), str(log_path), spec.absolute, origin=origin)
        self._apps[id_] = app
        with open(log_path, "wb") as out:
            os.chmod(log_path, 0o600)
            try:
                app.process = await asyncio.create_subprocess_exec(
                    *spec.argv,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=out,
                    stderr=asyncio.subprocess.STDOUT,
                    cwd=spec.cwd,
                    env={**self.environ, **spec.env},
                    start_new_session=True,  # its own process group: stopped whole
                )
            except OSError as e:
                app.state, app.ended = "ended", f"could not start: {e.strerror or e}"
                raise AppError(f"{KINDS[kind].title} could not start: {e.strerror or e}.") from None
        log.info("app %s (%s) starting for %s, pid %s", id_, kind, path, app.process.pid)
        deadline = time.monotonic() + self.start_seconds
        while not await answers(str(sock)):
            if app.process.returncode is not None:
                app.state, app.ended = "ended", f"exited with code {app.process.returncode} while starting"
                raise AppError(f"{KINDS[kind].title} ended while starting. Its log:\n{log_tail(str(log_path))}")
            if time.monotonic() > deadline:
                await self.stop(id_)
                app.ended = f"did not answer within {self.start_seconds:.0f} s"
                raise AppError(
                    f"{KINDS[kind].title} did not answer within {self.start_seconds:.0f} s and was stopped. "
                    f"Its log:\n{log_tail(str(log_path))}"
                )
            await asyncio.sleep(0.2)
        app.state = "running"
        asyncio.get_running_loop().create_task(self._watch(app))
        log.info("app %s (%s) answers on its socket", id_, kind)
        return app

    async def _unroute(self, id_: str) -> None:
        try:
            await self.unrouter(id_)
        except Exception as e:  # noqa: BLE001 - the route goes with the session at the latest
            log.warning("app %s: the hub did not remove its route: %s", id_, getattr(e, "log_message", None) or e)

    async def _watch(self, app: App) -> None:
        code = await app.process.wait()
        if app.state != "ended":
            app.state, app.ended = "ended", f"exited with code {code}"
            log.warning("app %s (%s) exited with code %s; not restarted", app.id, app.kind, code)
            await self._unroute(app.id)

    def get(self, id_: str) -> App | None:
        return self._apps.get(id_)

    def list(self) -> list[App]:
        return sorted(self._apps.values(), key=lambda a: (a.kind, a.target))

    async def stop(self, id_: str) -> bool:
        """Stop an app (its whole process group) and forget it; False when there is none."""
        app = self._apps.pop(id_, None)
        if app is None:
            return False
        self.entries.forget_app(id_)
        await self._unroute(id_)
        app.state, app.ended = "ended", app.ended or "stopped"
        process = app.process
        if process is not None:
            # the whole group, even when its first process has ended (code-server's helpers, gunicorn's worker)
            signal_group(process.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), STOP_SECONDS)
            except TimeoutError:
                pass
            signal_group(process.pid, signal.SIGKILL)  # what is left of it
            await process.wait()
        with contextlib.suppress(FileNotFoundError):
            Path(app.socket).unlink()
        log.info("app %s (%s) stopped", app.id, app.kind)
        return True

    def stop_all_now(self) -> None:
        """At the server's end: every app's group gets SIGTERM (the job's end takes what is left)."""
        for app in self._apps.values():
            if app.process is not None:
                signal_group(app.process.pid, signal.SIGTERM)


def signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)
