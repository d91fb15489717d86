"""The session's port keeper: in the Slurm job, on the compute node, as the user.

dsportal-singleuser binds the session's port, then forks: the child is the
Jupyter server, serving on that socket; this parent keeps the socket open
until the hub has stopped routing to it.

Why: when a session's server exits on its own (File > Shut Down, a crash, an
out-of-memory kill, Slurm's time limit, scancel outside the portal), the
proxy keeps routing the user's origin to node:port until the hub notices.
Had the port been freed, any account on the node could bind it and receive
that traffic, the user's tokens with it.  While the keeper holds the socket
nobody else can bind the port; what arrives waits unanswered in its backlog
(no process of another user sees it).  Once the server has exited, the
keeper tells the hub (`ENDED_CALLBACK`, with the session's own token), again
and again while the hub cannot answer; the hub answers once the route is
gone, and only then is the port released.

Signals Slurm sends to the batch step (TERM at scancel or the time limit,
USR2 before the time limit) reach the keeper, which passes them on to the
server.  The keeper itself ignores them: it ends when the server has.  They
are blocked from just before the fork (`fork_server`) until each side has
its handlers: one that reaches a freshly forked Python before its after-fork
cleanup is dropped, and one that reaches the keeper before `keep` would end
it.  Blocked, they wait in the kernel and arrive once each side can take them.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
import urllib.error
import urllib.request

from ...contract import ENDED_CALLBACK

PASSED_ON = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
REPORT_TIMEOUT = 20  # one report: the hub answers once the session's route is gone
RETRY_MOST = 10.0  # seconds between reports at most while the hub cannot take one
# The hub's final answers: 200 the route is gone; 400 or 403 the token is no session's any more (the hub has
# stopped the session, route first); 404 a hub without this report (it ends the session at its next poll).
FINAL = (200, 400, 403, 404)


def say(message: str) -> None:
    print(f"dsportal: {message}", file=sys.stderr, flush=True)


def ended_request(api_url: str, token: str) -> urllib.request.Request:
    return urllib.request.Request(
        api_url.rstrip("/") + ENDED_CALLBACK,
        method="POST",
        data=b"{}",
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
    )


def report_ended(api_url: str, token: str, pause=time.sleep) -> str:
    """Tell the hub the server has exited; asked again (1 s, doubling up to RETRY_MOST) until the hub gives a
    final answer: a hub that is down or restarting must not make the port free while its route may live.
    Slurm's kill at the job's end stops the asking at the latest.  -> what happened."""
    delay = 1.0
    while True:
        try:
            with urllib.request.urlopen(ended_request(api_url, token), timeout=REPORT_TIMEOUT) as answer:
                return f"the hub has stopped routing to this session ({answer.status})"
        except urllib.error.HTTPError as e:
            if e.code in FINAL:
                return f"the hub says the session is no longer its (HTTP {e.code})"
            problem = f"HTTP {e.code}"
        except (OSError, ValueError) as e:
            problem = str(e)
        say(f"the hub did not take the report ({problem}); asking again in {delay:g} s")
        pause(delay)
        delay = min(delay * 2, RETRY_MOST)


def exit_code(status: int) -> int:
    """A waitpid status -> the exit code a shell would give (128 + signal when killed)."""
    code = os.waitstatus_to_exitcode(status)  # negative: the signal that killed it
    return code if code >= 0 else 128 - code


def fork_server() -> int:
    """os.fork, the passed-on signals blocked across it: 0 in the server (unblocked again), its pid in the keeper,
    where they stay blocked until `keep` has its handlers."""
    signal.pthread_sigmask(signal.SIG_BLOCK, PASSED_ON)
    child = os.fork()
    if child == 0:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, PASSED_ON)  # after Python's own after-fork work: none is lost
    return child


def keep(sockets: list[socket.socket], child: int, report=None, token=None) -> int:
    """Hold `sockets` while the server (`child`) runs, report its end, then release them.  -> its exit code.
    `token()`: the session's token at the end (the server passes on a new one: spawner/jupyter/session/tokenpipe.py)."""

    reaped = False

    def pass_on(signum, frame):
        if reaped:
            return  # its pid may be another process's by now
        try:
            os.kill(child, signum)
        except OSError:
            pass

    for sig in PASSED_ON:
        signal.signal(sig, pass_on)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, PASSED_ON)  # what came since the fork arrives now (fork_server)
    _, status = os.waitpid(child, 0)  # retried by Python when a signal interrupts it (PEP 475)
    reaped = True
    code = exit_code(status)
    say(f"the session's server has exited ({code}); the port stays held until the hub stops routing to it")
    token = token or (lambda: os.environ["JUPYTERHUB_API_TOKEN"])
    report = report or (lambda: report_ended(os.environ["JUPYTERHUB_API_URL"], token()))
    say(report())
    for held in sockets:
        held.close()
    return code
