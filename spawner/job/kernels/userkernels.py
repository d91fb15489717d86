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
used unchanged, only the command of the spec the server starts is rewritten.
"""

from __future__ import annotations

from jupyter_client.kernelspec import KernelSpecManager

from .pythonkernel import with_private_pipe


class PrivateKernelSpecManager(KernelSpecManager):
    def get_kernel_spec(self, kernel_name: str):
        spec = super().get_kernel_spec(kernel_name)
        spec.argv = with_private_pipe(spec.argv)
        return spec
