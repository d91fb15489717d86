"""Where the session's server goes past the public hooks of JupyterHub's single-user code: each place, why.

Runs in the session's Jupyter server (in the Slurm job, as the user).
Checked against JupyterHub 6.1.1 (pyproject.toml pins jupyterhub>=6.1,<7 for
this module and the hub's, spawner/hub/base/upstream_jupyterhub.py);
tests/unit/test_upstream_jupyterhub.py fails when JupyterHub changes what a
place below relies on.  Imported once the server is about to start
(spawner/jupyter/singleuser.py): importing JupyterHub's single-user code starts
nothing.

- `JupyterHubSingleUser.make_serverapp`, a public override point of Jupyter
  Server's extension apps, replaced on JupyterHub's class (`launch_singleuser`):
  the session's server is JupyterHub's own single-user app, which cannot be
  subclassed (Jupyter Server names an extension app's package after the
  module of its class), and the portal must reach its ServerApp before it
  loads its configuration (the port it serves on).
- `extension.JupyterHubIdentityProvider`, the module's name for the identity
  provider, replaced (`use_identity_provider`): JupyterHub's single-user app
  sets `ServerApp.identity_provider_class` from that name (looked up when it
  runs) while it loads its configuration.
- `HubAuth._check_hub_authorization`, overridden (`HubOAuthAsked`): every
  question about a token (a request's, a cookie's) goes through it, with the
  key of JupyterHub's cache of the answers, which no public method gives: the
  portal asks the hub afresh about some tokens and keeps no answer about
  others (spawner/jupyter/sharing/guests.py).
- `handler._jupyterhub_user`, where JupyterHub's identity provider keeps who a
  request is once it has asked (`identified`, `identified_user`): its
  `get_user` answers from there when asked again about the same request, and
  the portal's additions to it (spawner/jupyter/sharing/guests.py) must run
  once per request as well.
"""

from __future__ import annotations

from collections.abc import Callable

from jupyterhub.services.auth import HubOAuth
from jupyterhub.singleuser import extension


def launch_singleuser(argv: list[str], prepare: Callable[[object], None]) -> None:
    """Run JupyterHub's single-user server with `argv`, calling `prepare(serverapp)` on its ServerApp before
    the ServerApp loads any configuration.  Does not return while the server runs."""
    make_serverapp = extension.JupyterHubSingleUser.make_serverapp.__func__

    def make_prepared_serverapp(cls, **kwargs):
        serverapp = make_serverapp(cls, **kwargs)
        prepare(serverapp)
        return serverapp

    extension.JupyterHubSingleUser.make_serverapp = classmethod(make_prepared_serverapp)
    extension.JupyterHubSingleUser.launch_instance(argv)


def use_identity_provider(provider: type[extension.JupyterHubIdentityProvider]) -> None:
    """Make JupyterHub's single-user server use `provider` (a subclass of its own) for every request (call
    before the server starts)."""
    extension.JupyterHubIdentityProvider = provider


class HubOAuthAsked(HubOAuth):
    """JupyterHub's HubOAuth, with two questions about its cache of the hub's answers about tokens."""

    def ask_afresh(self, token: str) -> bool:
        """Whether the hub is asked about `token` even when an answer is cached."""
        return False

    def may_keep(self, model: dict | None) -> bool:
        """Whether the hub's answer `model` (a user model; None: refused) may be cached."""
        return True

    async def _check_hub_authorization(self, url, api_token, cache_key=None, use_cache=True):
        if self.ask_afresh(api_token):
            use_cache = False
        model = await super()._check_hub_authorization(url, api_token, cache_key, use_cache)
        if use_cache and not self.may_keep(model):
            self.cache.pop(cache_key, None)
        return model


def identified(handler) -> bool:
    """Whether JupyterHub's identity provider has already said who `handler`'s request is (None included)."""
    return hasattr(handler, "_jupyterhub_user")


def identified_user(handler):
    """Who JupyterHub's identity provider said `handler`'s request is (once `identified`)."""
    return handler._jupyterhub_user
