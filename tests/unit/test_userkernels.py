"""A kernel the user registered for their own environment starts through the portal's launcher
(spawner/job/kernels/userkernels.py): jupyter_client's own lookup, the ipykernel command rewritten."""

from __future__ import annotations

import json
import sys

from spawner.job.kernels.pythonkernel import standalone_code
from spawner.job.kernels.userkernels import PrivateKernelSpecManager

OWN = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
R = ["R", "--slave", "-e", "IRkernel::main()", "--args", "{connection_file}"]


def test_the_users_own_ipykernel_runs_through_the_launcher_and_others_as_they_are(tmp_path):
    for name, argv in (("own-env", OWN), ("own-r", R)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "kernel.json").write_text(
            json.dumps({"argv": argv, "display_name": name, "language": "python"})
        )
    manager = PrivateKernelSpecManager(kernel_dirs=[str(tmp_path)])
    assert set(manager.find_kernel_specs()) >= {"own-env", "own-r"}
    assert manager.get_kernel_spec("own-env").argv == [
        sys.executable,
        "-c",
        standalone_code(),
        "-f",
        "{connection_file}",
    ]
    assert manager.get_kernel_spec("own-r").argv == R


def test_the_users_kernels_folder_is_searched_last(tmp_path, monkeypatch):
    from jupyter_client.kernelspec import KernelSpecManager

    monkeypatch.setenv("HOME", str(tmp_path))
    # as in a session: JupyterHub's disable_user_config leaves every folder under the home out of Jupyter's paths
    monkeypatch.setattr(KernelSpecManager, "_kernel_dirs_default", lambda self: ["/session/kernels", "/env/kernels"])
    mine = str(tmp_path / ".local" / "share" / "jupyter" / "kernels")
    assert PrivateKernelSpecManager().kernel_dirs == ["/session/kernels", "/env/kernels", mine]
    monkeypatch.setattr(KernelSpecManager, "_kernel_dirs_default", lambda self: [mine, "/env/kernels"])
    assert PrivateKernelSpecManager().kernel_dirs == [mine, "/env/kernels"]  # once
