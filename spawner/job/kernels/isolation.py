"""How the session's Jupyter server talks to its kernels on a shared node (README "Security").

Jupyter's default is ZMQ over TCP on 127.0.0.1: every account on the node
can connect to those ports.  The HMAC key signs messages but does not stop a
subscriber, so another user could read a kernel's code and output on its
iopub socket.  Here kernels talk over `ipc` (Unix sockets, which every
kernel of the portal's speaks: ipykernel, IRkernel) in the session's private
runtime folder (mode 0700, made at session start by spawner/job/session/start.py):
only the session's own account can connect to them.

ipykernel's debugger starts debugpy listening on 127.0.0.1 with no
authentication, which would let any account on the node pause the kernel and
run code as its user.  debugpy has no other transport, so the server passes
no `debug_request` from the browser (jupyter_server's own
allowed_message_types), and JupyterLab's debugger is switched off in the
session's page config so that nothing offers it.
"""

from __future__ import annotations

# Every message a client may send on the shell, control and stdin channels (Jupyter messaging
# protocol 5.4), except debug_request.
ALLOWED_MESSAGES = (
    "execute_request",
    "inspect_request",
    "complete_request",
    "history_request",
    "is_complete_request",
    "comm_info_request",
    "kernel_info_request",
    "connect_request",
    "comm_open",
    "comm_msg",
    "comm_close",
    "shutdown_request",
    "interrupt_request",
    "input_reply",
    "create_subshell_request",
    "delete_subshell_request",
    "list_subshell_request",
)

DEBUGGER_PLUGIN = "@jupyterlab/debugger-extension"
SERVER_PROXY = "jupyter_server_proxy"  # the server extension, and its JupyterLab extension's launcher tiles:
SERVER_PROXY_LABEXTENSION = "@jupyterhub/jupyter-server-proxy"  # off (the portal's apps have their own)

# The longest socket name jupyter_client makes in the runtime folder: kernel-<uuid>-ipc-<n>.
LONGEST_SOCKET_NAME = len("kernel-00000000-0000-0000-0000-000000000000-ipc-99")
SOCKET_PATH_MAX = 107  # sun_path holds 108 bytes, the last one NUL


def server_args() -> list[str]:
    """Command-line settings of the session's server (they win over any config file).

    The runtime folder itself comes as JUPYTER_RUNTIME_DIR (spawner/job/session/start.py).
    """
    return [
        "--KernelManager.transport=ipc",
        # a kernel the user registered for their own environment: its ipykernel's pipe on a Unix socket too
        # (spawner/job/kernels/userkernels.py); the kernel list waits for the session's kernels (the Jupyter
        # side's subclass: spawner/jupyter/session/kernelspecs.py)
        "--ServerApp.kernel_spec_manager_class=spawner.jupyter.session.kernelspecs.SessionKernelSpecManager",
        # a folder's listing read again when one of its files went meanwhile (Jupyter Server answered 404 for the
        # folder: spawner/jupyter/session/upstream_jupyter_server.py)
        "--ServerApp.contents_manager_class=spawner.jupyter.session.upstream_jupyter_server.SessionContentsManager",
        *(f"--MappingKernelManager.allowed_message_types={kind}" for kind in ALLOWED_MESSAGES),
        # jupyter-server-proxy, installed for its proxy handler (spawner/jupyter/apps/proxy.py), would also
        # proxy any loopback port of the node (/proxy/PORT), other users' listeners included, without an
        # XSRF check: its own extension stays off
        f"--ServerApp.jpserver_extensions={SERVER_PROXY}=False",
        # the portal's environment is read-only to users and a compute node rarely reaches PyPI: JupyterLab's
        # Extension Manager lists what is installed instead of offering installs that fail (its PyPI client
        # also cost the start 35-75 ms on the dev cluster)
        "--LabApp.extension_manager=readonly",
    ]


def socket_path_fits(runtime_dir: str) -> bool:
    return len(runtime_dir) + 1 + LONGEST_SOCKET_NAME <= SOCKET_PATH_MAX


def page_config() -> dict:
    """labconfig/page_config.json of the session: JupyterLab without its debugger, server-proxy tiles or builds."""
    return {
        "disabledExtensions": {DEBUGGER_PLUGIN: True, SERVER_PROXY_LABEXTENSION: True},
        # the portal's environment is read-only to users: JupyterLab must not offer to rebuild itself (Dash
        # ships a source extension that would make it ask at every page load)
        "buildCheck": False,
        "buildAvailable": False,
    }
