"""TensorBoard instances served inside the session's Jupyter server.

Why in-process: TensorBoard has no authentication, and other users' jobs can
share the compute node.  TensorBoard's own server listens on TCP (it cannot
bind a unix socket), so anyone on the node could reach it; behind
jupyter-server-proxy it would still listen.  Here TensorBoard's own WSGI
application runs in the Jupyter server and is reached only through its
authenticated handlers: no TensorBoard listener exists at all.  `--load_fast
false` keeps TensorBoard's Rust data server (a gRPC TCP listener) out of it.

TensorBoard offers its application only with its server, so two private names
of it are used, both in upstream_tensorboard.py: the step that reads the
folder, and the stop of its reload thread.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...sessionspec import TensorBoardSpec
from . import upstream_tensorboard

log = logging.getLogger("dsportal.tensorboard")

RELOAD_SECONDS = 5


class LogdirError(ValueError):
    """The folder cannot be shown; str(e) says why, for the user."""


class TooManyError(LogdirError):
    """The session runs as many TensorBoards as it may."""


def too_big(path: Path, roots: set[Path]) -> bool:
    """A folder TensorBoard must not rescan every few seconds: /, a top-level folder, a storage root, the home."""
    return len(path.parts) <= 2 or path in roots


@dataclass
class Instance:
    id: str
    logdir: str
    url: str
    app: Any = field(repr=False)
    stop: Callable[[], None] = field(repr=False)

    def to_dict(self) -> dict:
        return {"id": self.id, "logdir": self.logdir, "url": self.url}


def instance_id(logdir: Path) -> str:
    return hashlib.sha256(str(logdir).encode()).hexdigest()[:12]


FONT_URL = b"url(/font-roboto/"


def fonts_under_prefix(app: Callable, path_prefix: str) -> Callable:
    """TensorBoard's pages name their fonts at the server's root (`url(/font-roboto/...)`), whatever its
    path_prefix: under a prefix the browser asks the hub for them and refuses the answer (another origin, CSP
    font-src 'self').  This WSGI wrapper puts the prefix into those URLs of its HTML pages."""
    fixed = b"url(" + path_prefix.rstrip("/").encode() + b"/font-roboto/"

    def wrapped(environ, start_response):
        if not environ.get("PATH_INFO", "").endswith((".html", "/")):
            return app(environ, start_response)
        environ = {**environ, "HTTP_ACCEPT_ENCODING": "identity"}  # the page uncompressed, to read it
        seen: dict = {}

        def keep(status, headers, exc_info=None):
            seen.update(status=status, headers=headers, exc_info=exc_info)
            return lambda data: None  # TensorBoard returns its body; it never writes through this

        body = b"".join(app(environ, keep))
        headers = seen["headers"]
        if any(k.lower() == "content-type" and v.startswith("text/html") for k, v in headers):
            body = body.replace(FONT_URL, fixed)
            headers = [(k, str(len(body)) if k.lower() == "content-length" else v) for k, v in headers]
        start_response(seen["status"], headers, seen["exc_info"])
        return [body]

    return wrapped


def make_tensorboard_app(logdir: Path, path_prefix: str) -> tuple[Any, Callable[[], None]]:
    """TensorBoard's own WSGI application for `logdir`, and a function that stops its reloading."""
    from tensorboard import default, program
    from tensorboard.backend import application

    tb = program.TensorBoard(plugins=default.get_plugins())
    tb.configure(
        logdir=str(logdir),
        path_prefix=path_prefix,
        load_fast="false",
        reload_interval=RELOAD_SECONDS,
        reload_task="thread",
    )
    provider, multiplexer = upstream_tensorboard.data_provider(tb)  # TensorBoard.main's steps, minus the server
    app = application.TensorBoardWSGIApp(tb.flags, tb.plugin_loaders, provider, tb.assets_zip_provider, multiplexer)
    app = fonts_under_prefix(app, path_prefix)

    def stop() -> None:
        upstream_tensorboard.stop_reloading(tb)

    return app, stop


class TensorBoards:
    """The running instances of one session, one per folder."""

    def __init__(
        self,
        root: Path,
        base_url: str,
        factory=make_tensorboard_app,
        max_instances: int = TensorBoardSpec.max_instances,
        big_roots: tuple[str, ...] = (),
    ):
        self.root = root
        self.base_url = base_url.rstrip("/") + "/"
        self.factory = factory
        self.max_instances = max_instances
        # the file browser's root (the home) and the storage mounts, as they resolve
        self.big_roots = {Path(p).resolve() for p in (root, *big_roots)}
        self._instances: dict[str, Instance] = {}
        self._lock = threading.Lock()

    def resolve(self, logdir: str) -> Path:
        if not isinstance(logdir, str) or not logdir.strip() or "\x00" in logdir:
            raise LogdirError("Choose a folder to show in TensorBoard.")
        path = (self.root / logdir.strip()).resolve()  # relative to the file browser's root; absolute stays
        if not path.is_dir():
            raise LogdirError(f"{logdir} is not a folder; choose the folder your training writes its logs to.")
        if too_big(path, self.big_roots):
            raise LogdirError(
                f"{path} is too big a folder for TensorBoard, which rereads all of it every "
                f"{RELOAD_SECONDS} s; choose the folder your training writes its logs to, e.g. ~/logs/run1."
            )
        return path

    def prefix(self, id_: str) -> str:
        return f"{self.base_url}dsportal/tensorboard/{id_}"

    def open(self, logdir: str) -> tuple[Instance, bool]:
        """The instance for `logdir`, started if needed; (instance, started now).

        It touches the filesystem and builds TensorBoard: call it off the event loop.
        """
        path = self.resolve(logdir)
        id_ = instance_id(path)
        with self._lock:
            if id_ in self._instances:
                return self._instances[id_], False
            if len(self._instances) >= self.max_instances:
                raise TooManyError(
                    f"{len(self._instances)} TensorBoards are open, the most a session may run; "
                    "stop one (File > TensorBoards, or the list page) and try again."
                )
            prefix = self.prefix(id_)
            app, stop = self.factory(path, prefix)
            instance = Instance(id=id_, logdir=str(path), url=prefix + "/", app=app, stop=stop)
            self._instances[id_] = instance
        log.info("TensorBoard %s started for %s", id_, path)
        return instance, True

    def get(self, id_: str) -> Instance | None:
        return self._instances.get(id_)

    def list(self) -> list[Instance]:
        return sorted(self._instances.values(), key=lambda i: i.logdir)

    def close(self, id_: str) -> bool:
        with self._lock:
            instance = self._instances.pop(id_, None)
        if instance is None:
            return False
        instance.stop()
        log.info("TensorBoard %s stopped (%s)", id_, instance.logdir)
        return True

    def close_all(self) -> None:
        for instance in list(self._instances.values()):
            self.close(instance.id)
