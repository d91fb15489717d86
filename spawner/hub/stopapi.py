"""Who stopped a session: JupyterHub's stop API, noting when an idle culler asked (hub side).

JupyterHub's own handler for DELETE /hub/api/users/NAME/server, served
instead of it, with one addition: when the caller is one of the portal's
idle cullers (spawner/hub/idle.py), the spawner learns that the session is
stopped for being idle, so the home page can say so.  JupyterHub's handler
has no hook for the caller's identity; everything else is JupyterHub's.
"""

from __future__ import annotations

from jupyterhub.apihandlers.users import UserServerAPIHandler

from .idle import is_culler


class PortalUserServerAPIHandler(UserServerAPIHandler):
    async def delete(self, user_name, server_name=""):
        caller = self.current_user
        if getattr(caller, "kind", "") == "service" and is_culler(caller.name):
            user = self.find_user(user_name)
            spawner = user.spawners.get(server_name) if user is not None else None
            if spawner is not None:
                spawner.stop_cause = "idle"
        return await super().delete(user_name, server_name)


REPLACED = {UserServerAPIHandler: PortalUserServerAPIHandler}  # JupyterHub's -> ours, by spawner/hub/routes.py
