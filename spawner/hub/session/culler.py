"""One of the portal's idle cullers: jupyterhub-idle-culler, passing over the sessions of other timeouts.

Run by the hub as a JupyterHub-managed service (spawner/hub/session/idle.py):
`python -m spawner.hub.session.culler --timeout=60 --partitions=debug
--default-partition=sxm2` and the library's other options.  A user whose
sessions have different idle timeouts is in the JupyterHub group of each, so
a culler lists sessions that another culler owns; the library would stop one
idle past its own, shorter timeout, and the hub refuses it (403, a traceback
in the log every pass).  The library's cull_arbiter_hook decides instead:
a session is this culler's when its partition is one of `partitions`.
"""

from __future__ import annotations

from jupyterhub_idle_culler import IdleCuller, default_cull_arbiter
from traitlets import List, Unicode, default

from .idle import session_partition


class PortalIdleCuller(IdleCuller):
    """jupyterhub-idle-culler that culls only the sessions of its partitions."""

    partitions = List(
        Unicode(),
        help="The partitions whose sessions have this culler's timeout (the others are another culler's).",
    ).tag(config=True)
    default_partition = Unicode(
        help="The partition of a session whose options name none (the admin config's default)."
    ).tag(config=True)

    aliases = {
        **IdleCuller.aliases,
        "partitions": "PortalIdleCuller.partitions",
        "default-partition": "PortalIdleCuller.default_partition",
    }

    @default("cull_arbiter_hook")
    def _own_sessions_only(self):
        def arbiter(*, inactive, inactive_limit, server, **kwargs):
            if session_partition(server.get("user_options"), self.default_partition) not in self.partitions:
                return False  # another culler's session
            return default_cull_arbiter(inactive=inactive, inactive_limit=inactive_limit, server=server, **kwargs)

        return arbiter


if __name__ == "__main__":
    PortalIdleCuller.launch_instance()
