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
