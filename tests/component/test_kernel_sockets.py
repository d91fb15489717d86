"""Kernels over private Unix sockets: every kernel kind the portal offers speaks them, and the server passes
no debugger request (spawner/job/kernels/isolation.py)."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from traitlets.config import Config
from traitlets.config.loader import KVArgParseConfigLoader

from spawner.job.kernels.isolation import ALLOWED_MESSAGES, server_args, socket_path_fits
from spawner.job.kernels.kernelspecs import write_kernelspecs
from spawner.job.kernels.pythonkernel import connection_folder

KERNELS = {
    "python": ([sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"], "print(6 * 7)"),
    "R": (["R", "--slave", "-e", "IRkernel::main()", "--args", "{connection_file}"], "cat(6 * 7, '\\n')"),
}


@pytest.fixture
def runtime():
    folder = Path(tempfile.mkdtemp(prefix="dsp-", dir="/tmp"))  # short, as a session's is: sun_path is 108 bytes
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("language", sorted(KERNELS))
def test_each_kernel_kind_runs_over_unix_sockets_in_the_private_folder(runtime, language):
    argv, code = KERNELS[language]
    specs = runtime / "kernels"
    write_kernelspecs(specs, {language.lower(): {"argv": argv, "display_name": language, "language": language}})
    manager = KernelManager(
        transport="ipc",
        connection_file=str(runtime / "kernel-1.json"),
        kernel_name=language.lower(),
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(specs)]),
    )
    manager.start_kernel()
    try:
        client = manager.client()
        client.start_channels()
        client.wait_for_ready(timeout=60)
        outputs: list[str] = []
        reply = client.execute_interactive(
            code, timeout=60, output_hook=lambda msg: outputs.append(msg["content"].get("text", ""))
        )
        client.stop_channels()
    finally:
        manager.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "ok" and "42" in "".join(outputs)
    info = manager.get_connection_info()
    assert info["transport"] == "ipc" and info["ip"].startswith(str(runtime))


def listening_tcp_ports(pid: int) -> set[int]:
    """The TCP ports process `pid` listens on (its sockets' inodes matched in /proc/net/tcp*)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:
                ports.add(int(f[1].split(":")[1], 16))
    return ports


def test_the_sessions_python_kernel_listens_on_no_tcp_port_and_still_shows_subprocess_output(runtime):
    cwd = Path(__file__).resolve().parents[2]  # the checkout: spawner.job.kernels.pythonkernel, as installed on a node
    specs = runtime / "kernels"
    write_kernelspecs(
        specs,
        {
            "py": {
                "argv": [sys.executable, "-m", "spawner.job.kernels.pythonkernel", "-f", "{connection_file}"],
                "display_name": "py",
                "language": "python",
                "env": {"PYTHONPATH": str(cwd)},
            }
        },
    )
    manager = KernelManager(
        transport="ipc",
        connection_file=str(runtime / "kernel-3.json"),
        kernel_name="py",
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(specs)]),
    )
    manager.start_kernel(cwd=str(cwd))
    try:
        client = manager.client()
        client.start_channels()
        client.wait_for_ready(timeout=60)
        outputs: list[str] = []
        code = (
            "import multiprocessing as mp\n"
            "p = mp.get_context('fork').Process(target=print, args=('from a forked child',)); p.start(); p.join()"
        )
        reply = client.execute_interactive(
            code, timeout=60, output_hook=lambda msg: outputs.append(msg["content"].get("text", ""))
        )
        ports = listening_tcp_ports(manager.provisioner.process.pid)
        client.stop_channels()
    finally:
        manager.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "ok"
    assert "from a forked child" in "".join(outputs)  # the pipe works, over its Unix socket
    assert ports == set()  # before: ipykernel's pipe listened on 127.0.0.1 for anyone's messages


def test_a_connection_files_folder_is_found_in_the_kernels_arguments():
    assert connection_folder(["-f", "/tmp/s/runtime/kernel-1.json"]) == "/tmp/s/runtime"
    assert connection_folder(["--f=/tmp/s/runtime/kernel-1.json"]) == "/tmp/s/runtime"
    assert connection_folder(["--debug"]) is None


def test_the_sockets_live_only_in_a_folder_of_the_user():
    folder = Path(tempfile.mkdtemp(prefix="dsp-", dir="/tmp"))
    try:
        manager = KernelManager(transport="ipc", connection_file=str(folder / "kernel-2.json"), kernel_name="python3")
        manager.start_kernel()
        try:
            client = manager.client()
            client.start_channels()
            client.wait_for_ready(timeout=60)
            client.stop_channels()
            sockets = [p for p in folder.iterdir() if stat.S_ISSOCK(p.stat().st_mode)]
            assert len(sockets) == 5  # shell, iopub, stdin, control, heartbeat
        finally:
            manager.shutdown_kernel(now=True)
        assert stat.S_IMODE(folder.stat().st_mode) & 0o077 == 0  # no other account reaches them
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_server_is_told_ipc_and_every_client_message_but_the_debuggers():
    config: Config = KVArgParseConfigLoader(server_args()).load_config()
    assert config.KernelManager.transport == "ipc"
    allowed = config.MappingKernelManager.allowed_message_types
    assert list(allowed) == list(ALLOWED_MESSAGES) and "debug_request" not in allowed
    assert {"execute_request", "input_reply", "interrupt_request", "comm_msg"} <= set(allowed)
    assert config.LabApp.extension_manager == "readonly"  # nothing to install into the portal's environment


def test_a_socket_path_must_fit_in_sun_path():
    assert socket_path_fits("/tmp/dsportal-alice-123456-abcdefgh/runtime")
    assert not socket_path_fits("/" + "x" * 60)
