"""The session's port keeper (spawner/jupyter/session/keeper.py): the port stays taken until the hub stopped routing."""

from __future__ import annotations

import errno
import os
import signal
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from spawner.contract import ENDED_CALLBACK
from spawner.jupyter.clock.clock import held_warning, hold_warning
from spawner.jupyter.session.keeper import exit_code, fork_server, keep, report_ended
from spawner.jupyter.singleuser import session_sockets


def port_is_free(port: int, family=socket.AF_INET) -> bool:
    probe = socket.socket(family)
    try:
        probe.bind(("::" if family == socket.AF_INET6 else "0.0.0.0", port))
        return True
    except OSError as e:
        assert e.errno == errno.EADDRINUSE
        return False
    finally:
        probe.close()


def test_the_session_port_is_taken_on_ipv4_and_ipv6():
    sockets = session_sockets("0.0.0.0")
    port = sockets[0].getsockname()[1]
    try:
        assert {s.family for s in sockets} == {socket.AF_INET, socket.AF_INET6}
        assert {s.getsockname()[1] for s in sockets} == {port}
        assert not port_is_free(port) and not port_is_free(port, socket.AF_INET6)  # before: IPv6 was free
    finally:
        for s in sockets:
            s.close()


def test_the_keeper_holds_the_port_until_the_report_is_answered_and_passes_signals_on():
    sockets = session_sockets("0.0.0.0")
    port = sockets[0].getsockname()[1]
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the "server": tells it has its handler, then waits for SIGUSR2 and exits 7
        signal.signal(signal.SIGUSR2, lambda *a: os._exit(7))
        os.write(write, b"r")
        signal.pause()
        os._exit(1)
    assert os.read(read, 1) == b"r"
    seen = []

    def report():
        seen.append(port_is_free(port))  # while the hub is being told, the port is still held
        return "reported"

    def slurms_warning():  # USR2 before the time limit, sent to the batch step: the keeper, once it listens
        while signal.getsignal(signal.SIGUSR2) in (signal.SIG_DFL, None):
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGUSR2)

    threading.Thread(target=slurms_warning, daemon=True).start()
    try:
        assert keep(sockets, child, report) == 7  # the server got the signal and ended with its own code
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_DFL)
    assert seen == [False]
    assert port_is_free(port) and port_is_free(port, socket.AF_INET6)  # released once the hub answered


def in_a_child(body) -> int:
    """Run `body` in a forked process (its signal handlers are its own) -> its exit code."""
    child = os.fork()
    if child == 0:
        try:
            os._exit(body())
        finally:
            os._exit(99)
    return exit_code(os.waitpid(child, 0)[1])


def test_slurms_warning_before_the_server_can_take_it_is_noted_not_fatal():
    # A session shorter than the warning window gets USR2 at once, while JupyterLab still imports: its default
    # action ended the server (exit 140) and with it the start.  From dsportal-singleuser's first line it is noted.
    def session() -> int:
        hold_warning()  # singleuser.main's first line
        os.kill(os.getpid(), signal.SIGUSR2)  # Slurm's warning, while "JupyterLab imports"
        deadline = time.monotonic() + 5
        while held_warning() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        return 0 if held_warning() is not None else 1

    assert in_a_child(session) == 0


def test_a_warning_between_the_fork_and_the_keepers_handlers_reaches_the_server_once_it_has_its_own():
    # Between the fork and keep(), the warning reaches the keeper only (the batch step): it waits, blocked, and is
    # passed on once keep() has its handlers; the server notes it (a signal that reaches a freshly forked Python
    # before its after-fork cleanup is dropped: blocked across the fork, it is not), and once its own handler is in
    # place takes a noted one as arrived (spawner/jupyter/clock/handlers.py): here it exits 12 when it has it.
    def session() -> int:
        hold_warning()
        sockets = session_sockets("127.0.0.1")
        child = fork_server()
        if child == 0:  # the server: loads, installs its handler, then looks at what was noted
            time.sleep(0.3)
            signal.signal(signal.SIGUSR2, lambda *a: os._exit(12))
            if held_warning() is not None:
                os._exit(12)
            signal.alarm(5)  # never got it: ends with SIGALRM (142), not a hung test
            signal.pause()
            os._exit(1)
        os.kill(os.getpid(), signal.SIGUSR2)  # after the fork, before keep(): noted by the keeper alone
        return keep(sockets, child, lambda: "reported")

    assert in_a_child(session) == 12


def test_exit_codes_read_like_a_shells():
    assert exit_code(0) == 0 and exit_code(3 << 8) == 3
    assert exit_code(signal.SIGKILL) == 128 + signal.SIGKILL


class Hub(BaseHTTPRequestHandler):
    answers: list[int] = []
    seen: list[tuple[str, str]] = []

    def do_POST(self):
        Hub.seen.append((self.path, self.headers.get("Authorization", "")))
        self.send_response(Hub.answers.pop(0))
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def a_hub():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Hub.seen.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}/hub/api"
    server.shutdown()


def test_the_report_is_retried_while_the_hub_fails_and_stops_at_a_final_answer(a_hub):
    Hub.answers[:] = [503, 502, 200]
    assert report_ended(a_hub, "tok", pause=lambda s: None) == "the hub has stopped routing to this session (200)"
    assert Hub.seen == [(f"/hub/api{ENDED_CALLBACK}", "token tok")] * 3
    for final in (400, 403, 404):
        Hub.answers[:] = [final]
        assert f"no longer its (HTTP {final})" in report_ended(a_hub, "tok", pause=lambda s: None)


class Enough(Exception):
    pass


def test_an_unreachable_hub_is_asked_again_and_again_never_given_up():
    pauses = []

    def pause(seconds):
        pauses.append(seconds)
        if len(pauses) == 7:
            raise Enough  # Slurm's kill at the job's end is what stops a keeper whose hub never answers

    with pytest.raises(Enough):
        report_ended("http://127.0.0.1:1/hub/api", "tok", pause=pause)
    assert pauses == [1, 2, 4, 8, 10, 10, 10]
