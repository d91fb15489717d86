"""Apply the admin YAML to JupyterHub's config object (deploy/jupyterhub_config.py calls it); runs in the hub.

The portal's one piece of JupyterHub wiring: the traits it sets, the
portal's routes (spawner/hub/wiring/routes.py), the home page's data
(spawner/hub/home/page.py through template_vars), the sessions' metrics and
the shared Slurm services with their reconciler.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
from pathlib import Path

from portal import statestamp
from portal.cleartext import cleartext_warnings
from portal.clientaddress import proxies_of
from portal.config import config_path, loaded_config, renamed_warnings
from portal.huburl import connect_url
from portal.settings import PortalSettings
from portal.version import version

from ...contract import data_dir
from ..apps.proxy import PortalProxy
from ..base.metrics import register_session_collector
from ..base.outside import OutsideHub
from ..base.pagescripts import script_path
from ..base.printable import printable_log
from ..base.requestlimits import SERVICES_KEY
from ..base.upstream_jupyterhub import hold_running_users, replace_outside_handler
from ..base.upstream_tornado import limit_hub_bodies
from ..home.page import home_template_var, hub_cards
from ..runs.limits import held_in_runs
from ..session.idle import culler_services
from ..session.ignored import ignored_settings
from ..session.lookup import hub_spawners
from ..slurm.services import HubServices, services_for
from . import routes, shutdown
from .lifecycle import HubLifecycle, hub_runs, portal_loops, running_hub


def apply_portal_config(c, path: str | os.PathLike | None = None) -> PortalSettings:
    """Load and validate the admin file, then set JupyterHub's traits from it."""
    path = config_path(path)
    printable_log(logging.getLogger("JupyterHub"))  # a user's words never break a line of the hub's log
    settings = loaded_config(path)
    logging.getLogger("JupyterHub").info("DS Portal %s", version())
    for warning in renamed_warnings(settings):
        logging.getLogger("JupyterHub").warning("%s: %s", path, warning)
    state = Path(settings.hub.data_dir)
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    _check_state(state)
    _apply_addresses(c, settings, state)
    services = _install_portal(c, settings, path)
    _apply_sessions(c, settings, services)
    c.Authenticator.admin_users = set(settings.hub.admin_users)  # whoever logs people in
    c.JupyterHub.token_expires_in_max_seconds = int(settings.hub.token_max_days * 86400)
    if settings.ldap.enabled:  # else the site's own authenticator, set in its hub config (docs: admins/own-hub)
        _apply_login(c, settings, path)
    _apply_idle_culling(c, settings)
    _apply_proxy(c, settings.hub)
    return settings


def _check_state(state: Path) -> None:
    """The state's stamp against this version (portal/statestamp.py): refused, or upgraded and stamped."""
    found = statestamp.verdict(statestamp.read_stamp(state), version())
    if not found.ok:
        logging.getLogger("JupyterHub").error("DS Portal will not start: %s", found.message)
        raise SystemExit(f"DS Portal will not start: {found.message}")
    if found.upgrade_from:
        logging.getLogger("JupyterHub").warning("DS Portal: %s", found.message)
    statestamp.stamp(state, version())


def _apply_addresses(c, settings: PortalSettings, state: Path) -> None:
    """Where the hub listens (its TLS, one origin per user) and where it keeps its state."""
    hub = settings.hub
    c.JupyterHub.bind_url = hub.bind_url
    if hub.subdomain_host:  # each user's server is its own origin
        c.JupyterHub.subdomain_host = hub.subdomain_host
        # __Host- cookies: a page on a user's origin (bob.HOST) cannot set a cookie for the hub's (HOST), so it
        # cannot log the hub's pages in as bob in alice's browser.  They must be set on "/" (every component of
        # one origin shares them), which per-user origins make safe: each user's server has an origin of its own.
        c.JupyterHub.cookie_host_prefix_enabled = True
    if hub.tls_cert:  # the proxy terminates HTTPS
        c.JupyterHub.ssl_cert = hub.tls_cert
        c.JupyterHub.ssl_key = hub.tls_key
    for warning in cleartext_warnings(settings):
        logging.getLogger("JupyterHub").warning("INSECURE: %s", warning)
    c.JupyterHub.hub_bind_url = hub.internal_bind_url
    c.JupyterHub.hub_connect_url = connect_url(hub)
    c.JupyterHub.db_url = hub.db_url or f"sqlite:///{state / 'jupyterhub.sqlite'}"
    c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")


def _install_portal(c, settings: PortalSettings, path: Path) -> HubServices:
    """The portal's pages, routes and spawner, and its shared services (started with the hub when it runs)."""
    c.JupyterHub.template_paths = [str(data_dir("templates"))]
    c.JupyterHub.template_vars.update(portal_template_vars())
    routes.install()  # the portal's API beside JupyterHub's, before JupyterHub builds its application
    limit_hub_bodies(settings.hub.max_body_bytes)  # JupyterHub's endpoints too, before it creates its server
    proxies_of(settings.hub)  # the proxy's addresses, a host name's looked up now: not in a request's turn
    c.JupyterHub.spawner_class = "dsportal"
    c.SlurmGPUSpawner.config_file = str(path)
    # Shared Slurm answers for all users (spawner/hub/slurm/services.py), in tornado's settings for the handlers
    services = services_for(str(path))
    # the sessions' GPU cap counts the runs and sweeps with the runs' own count (request/gpuclaims.py says why)
    services.gpu_claims.count_runs = functools.partial(held_in_runs, services)
    app = running_hub()
    if app is not None:
        start_with_hub(app, services)
        replace_outside_handler(app, OutsideHub)  # paths outside /hub/ answered without credentials
        hold_running_users(app)  # a restart reads the running sessions' rows in a few queries, not five each
    return services


def _apply_sessions(c, settings: PortalSettings, services: HubServices) -> None:
    """Sessions: named servers, the roles and services the YAML adds, what every session's server gets."""
    # Several sessions per user: each a named server of its own, each its own Slurm job; how many run at once
    # and their GPUs together are the spawner's checks (spawner/hub/request/sessionlimits.py), how many are kept JupyterHub's.
    c.JupyterHub.allow_named_servers = True
    c.JupyterHub.named_server_limit_per_user = settings.sessions.max_kept_per_user
    c.JupyterHub.load_roles.extend(portal_roles(settings))
    scrapers, roles = scraper_service(settings)
    c.JupyterHub.services.extend(scrapers)
    c.JupyterHub.load_roles.extend(roles)
    c.Spawner.default_url = "/lab"
    # A user's own ~/.jupyter config could add handlers to what their session serves;
    # sessions read only the environment's and the system's config (the portal's extensions live there).
    c.Spawner.disable_user_config = True
    # Sessions are Slurm jobs that outlive the hub: a hub restart keeps them.
    c.JupyterHub.cleanup_servers = False
    # A session may wait in the Slurm queue for long: answer the spawn request
    # after 1 s (refused options fail well within it and still get their 400),
    # and let the progress page follow the job.
    c.JupyterHub.tornado_settings = {"slow_spawn_timeout": 1, SERVICES_KEY: services}
    if settings.hub.behind_tls_proxy:
        # the browser's side is HTTPS, though the proxy tells the hub "http" (it appends its own scheme to the
        # TLS proxy's X-Forwarded-Proto, and tornado reads the last): the hub's cookies are Secure all the same
        c.JupyterHub.tornado_settings["cookie_options"] = {"secure": True}


def _apply_login(c, settings: PortalSettings, path: Path) -> None:
    """The portal's LDAP login, its admins, and how often an account is looked up again."""
    c.JupyterHub.authenticator_class = "dsportal"
    c.PortalLDAPAuthenticator.config_file = str(path)
    # auth_state (the account's uid, uidNumber, gidNumber, home and groups) is
    # stored encrypted; JupyterHub needs JUPYTERHUB_CRYPT_KEY for that.
    c.Authenticator.enable_auth_state = bool(os.environ.get("JUPYTERHUB_CRYPT_KEY"))
    # Access follows the directory: the account is looked up again every
    # refresh_seconds; one that lost access is refused on every request, its
    # tokens included (strict), and looked up before each start.
    ldap = settings.ldap
    c.Authenticator.auth_refresh_age = ldap.refresh_seconds
    c.Authenticator.auth_refresh_strict = True
    c.Authenticator.refresh_pre_spawn = bool(ldap.refresh_seconds)


def _apply_idle_culling(c, settings: PortalSettings) -> None:
    """Idle sessions give their GPUs back: jupyterhub-idle-culler services, each reaching only
    the users of its timeout's group (spawner/hub/session/idle.py).  A session's last activity is
    what the session reports (spawner/jupyter/session/activity.py), not the proxy's traffic, which
    an open but untouched JupyterLab tab keeps up by polling."""
    slurm = settings.slurm
    services, roles = culler_services(
        settings.sessions, sys.executable, [p.name for p in slurm.partitions], slurm.default_partition.name
    )
    c.JupyterHub.services.extend(services)
    c.JupyterHub.load_roles.extend(roles)
    c.JupyterHub.last_activity_interval = 0


def _apply_proxy(c, hub) -> None:
    c.JupyterHub.proxy_class = PortalProxy  # each session's apps' own origin is routed beside it (hub/apps)
    if hub.external_proxy:  # its own service; CONFIGPROXY_AUTH_TOKEN in both environments
        c.ConfigurableHTTPProxy.should_start = False
        c.ConfigurableHTTPProxy.api_url = hub.proxy_api_url


def portal_template_vars() -> dict:
    """What the portal adds to every hub page's template variables: the home page's session card and history
    (templates/home.html calls dsportal_home()), the version the pages' footer shows, the script of their high
    contrast (templates/page.html) and the one that mends JupyterHub's admin page (templates/admin.html)."""
    return {
        "dsportal_home": home_template_var,
        "dsportal_version": version(),
        "dsportal_theme_script": script_path("theme.js"),
        "dsportal_admin_script": script_path("admin.js"),
    }


def start_with_hub(app, services: HubServices) -> HubLifecycle:
    """The portal's background loops start once `app` (the JupyterHub whose config this is) runs and stop at
    its stop, first taking no new request or Slurm command (spawner/hub/wiring/lifecycle.py, shutdown.py)."""
    # JupyterHub adds its extra_log_file's handler right after loading this config, before its next await
    asyncio.get_running_loop().call_soon(printable_log, app.log)
    lifecycle = HubLifecycle(lambda: portal_loops(app, services), lambda: hub_runs(app))
    lifecycle.begin()
    shutdown.install(app, then=lifecycle.stop)
    register_session_collector(lambda: hub_cards(hub_spawners(app)) if hub_runs(app) else [])  # at /hub/metrics
    return lifecycle


def portal_roles(settings: PortalSettings) -> list[dict]:
    """JupyterHub roles the admin YAML changes (pure): users who may make share codes (sharing.codes; JupyterHub's
    share-code API wants the `shares` scope, which users do not have by default)."""
    if settings.sharing.enabled and settings.sharing.codes:
        return [{"name": "user", "scopes": ["self", "shares!user"]}]
    return []


def scraper_service(settings: PortalSettings) -> tuple[list[dict], list[dict]]:
    """Prometheus as a JupyterHub service whose token may read /hub/metrics and nothing else; none without
    usage.scraper_token_file.  The token is read here, never logged; a missing or empty file stops the hub with
    words (a scraper that silently gets 403s would leave the status page empty)."""
    path = settings.usage.scraper_token_file
    if not path:
        return [], []
    try:
        token = Path(path).read_text().strip()
    except OSError as e:
        raise SystemExit(
            f"usage.scraper_token_file: cannot read {path} ({e.strerror}); fix it or empty the key"
        ) from None
    if len(token) < 32:
        raise SystemExit(f"usage.scraper_token_file: {path} must hold a token of at least 32 characters")
    return (
        [{"name": "prometheus", "api_token": token}],
        [{"name": "dsportal-prometheus", "scopes": ["read:metrics"], "services": ["prometheus"]}],
    )


def report_ignored_settings(c) -> list[str]:
    """Log an error for each batchspawner setting the portal's spawner would silently ignore.

    Called last in jupyterhub_config.py, so it sees the admin's own lines too;
    it also puts back the home page's data if such a line replaced JupyterHub's
    template_vars (the page would silently fall back to JupyterHub's stock page).
    """
    problems = ignored_settings(c)
    log = logging.getLogger("JupyterHub")
    for problem in problems:
        log.error(problem)
    for replaced in (keep_home_page_data(c), keep_services(c)):
        if replaced:
            log.warning(replaced)
    return problems


def keep_home_page_data(c) -> str:
    """Add the portal's template variables back to c.JupyterHub.template_vars if a later line replaced the dict;
    what was done."""
    template_vars = c.JupyterHub.template_vars
    if not isinstance(template_vars, dict):
        return ""  # still the portal's update (a lazy value)
    dropped = {name: value for name, value in portal_template_vars().items() if name not in template_vars}
    if not dropped:
        return ""  # the admin's dict kept them
    c.JupyterHub.template_vars = {**template_vars, **dropped}
    return (
        "c.JupyterHub.template_vars was set after the portal's config and dropped the portal's page data "
        f"({', '.join(dropped)}): added it back. Use c.JupyterHub.template_vars.update({{...}}) instead."
    )


def keep_services(c) -> str:
    """Put the portal's services back into c.JupyterHub.tornado_settings if a later line replaced the dict."""
    settings = c.JupyterHub.tornado_settings
    if not isinstance(settings, dict) or SERVICES_KEY in settings:
        return ""
    kept = {SERVICES_KEY: services_for(str(c.SlurmGPUSpawner.config_file))}
    if loaded_config(c.SlurmGPUSpawner.config_file).hub.behind_tls_proxy and "cookie_options" not in settings:
        kept["cookie_options"] = {"secure": True}  # _apply_sessions' Secure cookies behind a TLS proxy
    c.JupyterHub.tornado_settings = {**settings, **kept}
    return (
        "c.JupyterHub.tornado_settings was set after the portal's config and dropped the portal's services: "
        "added them back. Use c.JupyterHub.tornado_settings.update({...}) instead."
    )
