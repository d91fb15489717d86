"""Kernels users register for environments of their own (a venv, a conda environment), as private as the portal's.

A user registers an environment the usual way: `ENV/bin/python -m ipykernel install --user --name NAME
--display-name "..."` writes ~/.local/share/jupyter/kernels/NAME/kernel.json, and JupyterLab's launcher shows it
(jupyter_client reads the user's data folder besides the session's own kernels).  Such a kernel talks to the
server over the session's Unix sockets like every kernel (KernelManager.transport=ipc, spawner/job/kernels/
isolation.py), but its own ipykernel would open its subprocess-output pipe on TCP, where any account on the
node can send to it (spawner/job/kernels/pythonkernel.py).  This kernelspec manager hands the server every
`PYTHON -m ipykernel_launcher` / `-m ipykernel` command through the portal's launcher (`python -c`, the pipe
on a Unix socket), whoever wrote the kernelspec; any other command (R, a container runtime's) as it is.  An
ipykernel too old or too new for the launcher's one replaced method keeps its own pipe and still starts.

Set by the session's server arguments (isolation.server_args); jupyter_client's own listing and lookup are
used, with the user's kernels folder added back (JupyterHub's disable_user_config leaves it out), and the
command of the spec the server starts rewritten.
"""

from __future__ import annotations

import os

from jupyter_client.kernelspec import KernelSpecManager

from .pythonkernel import with_private_pipe


def user_kernels_dir() -> str:
    """Where `ipykernel install --user` writes: the user's Jupyter data folder's kernels."""
    return os.path.join(os.path.expanduser("~"), ".local", "share", "jupyter", "kernels")


class PrivateKernelSpecManager(KernelSpecManager):
    def _kernel_dirs_default(self) -> list[str]:
        # The session's server runs with JupyterHub's disable_user_config, which drops every folder under the
        # home from Jupyter's paths: the user's own config must not change the server's (its transport, its
        # allowed messages).  A kernelspec is no server config: its command runs as the user, through
        # get_kernel_spec below.  Last, so that the session's kernels win over a user's of the same name.
        dirs = super()._kernel_dirs_default()
        return dirs if user_kernels_dir() in dirs else [*dirs, user_kernels_dir()]

    def get_kernel_spec(self, kernel_name: str):
        spec = super().get_kernel_spec(kernel_name)
        spec.argv = with_private_pipe(spec.argv)
        return spec
