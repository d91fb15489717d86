"""A session's kernels carried out by its Jupyter server (spawner/jupyter/continuation/kernels.py), with real
kernels under jupyter_client's kernel manager as the server holds them: a Python notebook's and an R notebook's
variables written, each in its own private folder, a busy kernel named as not carried, and the manifest the
continuing session reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jupyter_client.multikernelmanager import AsyncMultiKernelManager

from spawner.jupyter.continuation.kernels import carry_out, read_manifest, restore_into

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def kernels(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the kernels import the portal's code, as a session's do
    manager = AsyncMultiKernelManager()
    yield manager
    await manager.shutdown_all(now=True)


async def execute(manager, kernel_id: str, code: str, wait: bool = True) -> None:
    client = manager.get_kernel(kernel_id).client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        if wait:
            reply = await client.execute_interactive(code, timeout=60)
            assert reply["content"]["status"] == "ok", reply["content"]
        else:
            client.execute(code)
    finally:
        client.stop_channels()


async def test_each_notebooks_kernel_writes_its_variables_and_a_busy_one_is_named(kernels, tmp_path):
    python = await kernels.start_kernel(kernel_name="python3")
    r = await kernels.start_kernel(kernel_name="ir")
    busy = await kernels.start_kernel(kernel_name="python3")
    await execute(kernels, python, "import numpy as np\nweights = np.arange(6.0)\nepoch = 12")
    await execute(kernels, r, "frame <- data.frame(a = 1:3)")
    await execute(kernels, busy, "import time; time.sleep(60)", wait=False)  # a cell still running
    sessions = [
        {"path": "train.ipynb", "kernel": {"id": python}},
        {"path": "stats/explore.ipynb", "kernel": {"id": r}},
        {"path": "long.ipynb", "kernel": {"id": busy}},
        {"path": "console", "kernel": None},
    ]
    manifest = await carry_out(kernels, sessions, tmp_path / "continue", max_bytes=10**8, seconds=3)
    assert manifest["train.ipynb"]["report"] == {"carried": ["epoch", "weights"], "not": {}}
    assert manifest["stats/explore.ipynb"]["report"] == {"carried": ["frame"], "not": {}}
    assert manifest["long.ipynb"]["report"] == {
        "carried": [],
        "not": {},
        "refused": "the kernel did not answer within 13 s (a cell still running)",
        "busy": True,
    }
    assert (manifest["train.ipynb"]["language"], manifest["stats/explore.ipynb"]["language"]) == ("python", "R")
    assert json.loads((tmp_path / "continue" / "kernels.json").read_text()) == manifest
    assert oct((tmp_path / "continue").stat().st_mode & 0o777) == "0o700"
    assert sorted(p.name for p in (tmp_path / "continue" / "kernel-0").iterdir()) == [
        "epoch.pickle",
        "manifest.json",
        "weights.pickle",
    ]
    assert [p.name for p in (tmp_path / "continue" / "kernel-1").iterdir()] == ["workspace.RData"]


async def run_printed(manager, kernel_id: str, code: str) -> str:
    client = manager.get_kernel(kernel_id).client()
    client.start_channels()
    printed: list[str] = []
    try:
        await client.wait_for_ready(timeout=60)
        await client.execute_interactive(
            code, timeout=60, output_hook=lambda m: printed.append(m["content"].get("text", ""))
        )
    finally:
        client.stop_channels()
    return "".join(printed)


async def test_the_continuing_sessions_kernels_take_their_notebooks_variables_back(kernels, tmp_path):
    old_python, old_r = await kernels.start_kernel(kernel_name="python3"), await kernels.start_kernel(kernel_name="ir")
    await execute(kernels, old_python, "import numpy as np\nweights = np.arange(6.0) * 2\nepoch = 12")
    await execute(kernels, old_r, "frame <- data.frame(a = 1:3, b = c('x', 'y', 'z'))")
    carried = [{"path": "train.ipynb", "kernel": {"id": old_python}}, {"path": "r.ipynb", "kernel": {"id": old_r}}]
    manifest = await carry_out(kernels, carried, tmp_path / "continue", max_bytes=10**8, seconds=30)
    await kernels.shutdown_all(now=True)

    # the continuing session: its notebooks open again, each with a new kernel, and a notebook it did not carry
    python, r, other = [await kernels.start_kernel(kernel_name=k) for k in ("python3", "ir", "python3")]
    sessions = [
        {"path": "train.ipynb", "kernel": {"id": python}},
        {"path": "r.ipynb", "kernel": {"id": r}},
        {"path": "new.ipynb", "kernel": {"id": other}},
    ]
    done: set[str] = set()
    assert read_manifest(tmp_path / "continue") == manifest
    restored = await restore_into(kernels, sessions, manifest, done, seconds=30)
    assert restored == {
        "train.ipynb": {"carried": ["epoch", "weights"], "not": {}},
        "r.ipynb": {"carried": ["frame"], "not": {}},
    }
    assert (
        await run_printed(kernels, python, "print(weights.tolist(), epoch)") == "[0.0, 2.0, 4.0, 6.0, 8.0, 10.0] 12\n"
    )
    assert await run_printed(kernels, r, "cat(as.character(frame$b))") == "x y z"
    assert await restore_into(kernels, sessions, manifest, done, seconds=30) == {}  # once per notebook


def test_a_manifest_others_may_write_is_not_read(tmp_path):
    base = tmp_path / "continue"
    base.mkdir(mode=0o700)
    (base / "kernels.json").write_text(json.dumps({"x.ipynb": {"language": "python", "folder": "/tmp/planted"}}))
    (base / "kernels.json").chmod(0o600)
    assert read_manifest(base) != {}
    (base / "kernels.json").chmod(0o644)
    assert read_manifest(base) == {}
    (base / "kernels.json").chmod(0o600)
    base.chmod(0o750)
    assert read_manifest(base) == {}
