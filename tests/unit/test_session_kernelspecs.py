"""A session's kernel list is the session's: the server's first kernelspec answers wait, bounded, for the session's
kernels (spawner/jupyter/session/kernelspecs.py), which appear whole and with the stock kernels' logos
(spawner/job/session/start.py, spawner/job/kernels/logos.py)."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import time
from pathlib import Path

from jupyter_server.kernelspecs.handlers import KernelSpecResourceHandler
from jupyter_server.services.kernelspecs.handlers import MainKernelSpecHandler

from spawner.job.kernels.logos import server_kernel_dirs, stock_logos
from spawner.job.session.start import write_session_kernels
from spawner.jupyter.session.kernelspecs import RESOURCE_MAX_BYTES, SessionKernelSpecManager, resource_file


def a_kernel(folder: Path, name: str, *logos: str) -> Path:
    (folder / name).mkdir(parents=True)
    (folder / name / "kernel.json").write_text(json.dumps({"argv": ["R"], "display_name": name, "language": "R"}))
    for logo in logos:
        (folder / name / logo).write_bytes(b"<svg/>")
    return folder / name


def test_jupyter_server_awaits_the_kernel_list_and_asks_the_manager_for_a_kernels_files():
    # the two hooks the session's manager answers through (the gateway's kernelspec manager uses them too)
    assert "await ensure_async(ksm.get_all_specs())" in inspect.getsource(MainKernelSpecHandler.get)
    resources = inspect.getsource(KernelSpecResourceHandler.get)
    assert 'hasattr(ksm, "get_kernel_spec_resource")' in resources
    assert "await ksm.get_kernel_spec_resource(kernel_name, path)" in resources


def test_only_the_files_the_kernel_list_offers_are_served():
    assert resource_file("/k/ir", "logo-64x64.png") == Path("/k/ir/logo-64x64.png")
    assert resource_file("/k/ir", "logo-svg.svg") == Path("/k/ir/logo-svg.svg")
    assert resource_file("/k/ir", "kernel.js") == Path("/k/ir/kernel.js")
    assert resource_file("/k/ir", "kernel.json") is None
    assert resource_file("/k/ir", "logo-x/../../../etc/passwd") is None
    assert resource_file("/k/ir", "../ir/logo-svg.svg") is None


def test_the_first_kernel_list_waits_for_the_session_kernels(tmp_path):
    stock, session = tmp_path / "env", tmp_path / "session" / "kernels"
    a_kernel(stock, "python3", "logo-svg.svg")
    manager = SessionKernelSpecManager(kernel_dirs=[str(session), str(stock)], session_kernels=str(session))

    async def written_later():
        await asyncio.sleep(0.3)
        a_kernel(session, "python3")
        a_kernel(session, "ngc-pytorch")

    async def listed():
        writer = asyncio.create_task(written_later())
        specs = await manager.get_all_specs()
        await writer
        return specs

    specs = asyncio.run(listed())
    assert sorted(specs) == ["ngc-pytorch", "python3"]
    assert specs["python3"]["resource_dir"] == str(session / "python3")


def test_past_the_bound_the_list_has_what_there_is_and_the_log_says_why(tmp_path, caplog):
    stock = tmp_path / "env"
    a_kernel(stock, "ir", "logo-64x64.png")
    manager = SessionKernelSpecManager(
        kernel_dirs=[str(tmp_path / "never"), str(stock)],
        session_kernels=str(tmp_path / "never"),
        session_kernels_wait=0.2,
        ensure_native_kernel=False,
        log=logging.getLogger("session-kernelspecs-test"),
    )
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, "session-kernelspecs-test"):
        specs = asyncio.run(manager.get_all_specs())
    assert 0.2 <= time.monotonic() - started < 2
    assert sorted(specs) == ["ir"]
    assert "the session's kernels were not written within 0.2 s" in caplog.text
    # the bound is spent once: the next answer does not wait again (a second wait would warn a second time)
    with caplog.at_level(logging.WARNING, "session-kernelspecs-test"):
        assert asyncio.run(manager.get_kernel_spec_resource("ir", "logo-64x64.png")) == b"<svg/>"
    assert caplog.text.count("were not written within") == 1


def test_a_kernels_logo_is_served_once_the_session_kernels_are_written(tmp_path):
    session = tmp_path / "kernels"
    a_kernel(session, "python3", "logo-svg.svg")
    manager = SessionKernelSpecManager(kernel_dirs=[str(session)], session_kernels=str(session))
    assert asyncio.run(manager.get_kernel_spec_resource("python3", "logo-svg.svg")) == b"<svg/>"
    assert asyncio.run(manager.get_kernel_spec_resource("python3", "kernel.json")) is None
    assert asyncio.run(manager.get_kernel_spec_resource("python3", "logo-none.png")) is None
    assert asyncio.run(manager.get_kernel_spec_resource("nosuch", "logo-svg.svg")) is None


def test_a_logo_linked_out_of_its_kernel_is_not_served(tmp_path):
    """The hostile review: logo-64x64.png -> ~/.secret was served by the session's own handler (jupyter_server's
    answers 403); so is a folder, a fifo and a file over the bound."""
    session = tmp_path / "kernels"
    a_kernel(session, "python3", "logo-svg.svg")
    secret = tmp_path / "secret"
    secret.write_text("SECRET")
    (session / "python3" / "logo-64x64.png").symlink_to(secret)
    (session / "python3" / "kernel.js").symlink_to("/etc/hostname")
    (session / "python3" / "logo-32x32.png").mkdir()
    os.mkfifo(session / "python3" / "kernel.css")
    (session / "python3" / "logo-big.png").write_bytes(b"x" * (RESOURCE_MAX_BYTES + 1))
    (session / "python3" / "logo-inside.png").symlink_to(session / "python3" / "logo-svg.svg")
    manager = SessionKernelSpecManager(kernel_dirs=[str(session)], session_kernels=str(session))
    for name in ("logo-64x64.png", "kernel.js", "logo-32x32.png", "kernel.css", "logo-big.png"):
        assert asyncio.run(manager.get_kernel_spec_resource("python3", name)) is None, name
    assert asyncio.run(manager.get_kernel_spec_resource("python3", "logo-inside.png")) == b"<svg/>"


def test_without_session_kernels_nothing_waits(tmp_path, monkeypatch):
    monkeypatch.delenv("DSPORTAL_SESSION_KERNELS", raising=False)
    a_kernel(tmp_path, "python3")
    manager = SessionKernelSpecManager(kernel_dirs=[str(tmp_path)])
    assert manager.session_kernels == ""
    assert sorted(asyncio.run(manager.get_all_specs())) == ["python3"]
    monkeypatch.setenv("DSPORTAL_SESSION_KERNELS", "/tmp/dsportal-alice-77-x/kernels")
    assert SessionKernelSpecManager().session_kernels == "/tmp/dsportal-alice-77-x/kernels"


def test_the_servers_kernel_folders_leave_the_home_out_but_the_users_own_kernels_last():
    found = ["/home/a/.local/share/jupyter/kernels", "/opt/env/share/jupyter/kernels", "/usr/share/jupyter/kernels"]
    assert server_kernel_dirs(found, "/home/a", "/home/a/.local/share/jupyter/kernels") == [
        "/opt/env/share/jupyter/kernels",
        "/usr/share/jupyter/kernels",
        "/home/a/.local/share/jupyter/kernels",
    ]


def test_each_kernels_logos_come_from_the_first_folder_that_has_it(tmp_path):
    env, system = tmp_path / "env", tmp_path / "system"
    a_kernel(env, "python3", "logo-64x64.png", "logo-svg.svg")
    a_kernel(system, "python3", "logo-old.png")
    a_kernel(system, "ir", "logo-64x64.png")
    (system / "notakernel").mkdir()
    assert stock_logos(["python3", "ir", "ngc-pytorch", "notakernel"], [str(env), str(system)]) == {
        "python3": [env / "python3" / "logo-64x64.png", env / "python3" / "logo-svg.svg"],
        "ir": [system / "ir" / "logo-64x64.png"],
    }


def test_the_session_kernels_appear_whole_with_their_logos(tmp_path, monkeypatch):
    env = tmp_path / "env"
    a_kernel(env / "kernels", "python3", "logo-svg.svg")
    monkeypatch.setenv("JUPYTER_PATH", str(env))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    kernels = {
        "python_display_name": "Python 3",
        "r": False,
        "module_command": "",
        "modulepath": [],
        "modules": [],
        "container_runtime": "apptainer",
        "containers": [],
    }
    write_session_kernels(tmp_path, kernels, {}, tmp_path / "home", "/usr/bin/python3", None, str(tmp_path))
    assert sorted(p.name for p in (tmp_path / "kernels").iterdir()) == ["python3"]
    assert sorted(p.name for p in (tmp_path / "kernels" / "python3").iterdir()) == ["kernel.json", "logo-svg.svg"]
    assert [p.name for p in tmp_path.glob(".kernels-*")] == []  # renamed into place, nothing left beside it
