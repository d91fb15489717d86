"""Where the apps' proxy goes past jupyter-server-proxy's public API: each place, why, what it relies on.

Runs in the session's Jupyter server (in the Slurm job, as the user).  Checked against jupyter-server-proxy 4.6.0
(pyproject.toml pins jupyter-server-proxy>=4.2,<5 for this module); tests/unit/test_upstream_jupyter_server_proxy.py
fails when a method below is gone or is used otherwise.

- `ProxyHandler._record_activity`, replaced with nothing: jupyter-server-proxy counts every byte either way as use
  of the session, the app's own pushes and pings too; the proxy (proxy.py) records what the browser does instead.
- `ProxyHandler._proxy_progressive`, replaced with `_proxy_buffered`: jupyter-server-proxy streams an event stream
  as it comes, past proxy.py's header rules and for up to 2 hours, beyond a guest's revoked share; no offered app
  uses event streams, so every response is read whole.
"""

from __future__ import annotations


class ProxyOverrides:
    """The two methods of jupyter-server-proxy's ProxyHandler replaced: put before it among a handler's bases."""

    async def _proxy_progressive(self, host, port, proxied_path, body, client):
        return await self._proxy_buffered(host, port, proxied_path, body, client)

    def _record_activity(self):
        # jupyter-server-proxy calls this for the app's traffic too; proxy.py records the browser's
        pass
