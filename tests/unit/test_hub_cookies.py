"""Per-user origins bring __Host- cookies (spawner/hub/wiring/hubconfig.py)."""

from __future__ import annotations

import yaml
from traitlets.config import Config

from spawner.hub.wiring.hubconfig import apply_portal_config

LDAP = {"bind_dn_template": "uid={username},dc=x"}


def hub_config(tmp_path, hub: dict) -> Config:
    path = tmp_path / "portal.yaml"
    path.write_text(yaml.safe_dump({"ldap": LDAP, "hub": {"data_dir": str(tmp_path / "state"), **hub}}))
    c = Config()
    apply_portal_config(c, path)
    return c


def test_per_user_origins_use_host_prefixed_cookies(tmp_path):
    c = hub_config(tmp_path, {"subdomain_host": "https://portal.example.org:8000"})
    assert (c.JupyterHub.subdomain_host, c.JupyterHub.cookie_host_prefix_enabled) == (
        "https://portal.example.org:8000",
        True,
    )


def test_one_origin_for_all_keeps_jupyterhubs_cookie_paths(tmp_path):
    assert "cookie_host_prefix_enabled" not in hub_config(tmp_path, {}).JupyterHub


def test_an_admins_template_vars_keep_the_home_pages_data(tmp_path):
    from portal.version import version
    from spawner.hub.base.pagescripts import script_path
    from spawner.hub.home.page import home_template_var
    from spawner.hub.wiring.hubconfig import report_ignored_settings

    portal_vars = {  # the pages' data, the footer's, the themes' script, the admin page's mends
        "dsportal_home": home_template_var,
        "dsportal_version": version(),
        "dsportal_theme_script": script_path("theme.js"),
        "dsportal_admin_script": script_path("admin.js"),
    }

    c = hub_config(tmp_path, {})
    c.JupyterHub.template_vars = {"announcement": "Maintenance on Friday"}  # replaces the whole dict
    report_ignored_settings(c)
    assert c.JupyterHub.template_vars == {"announcement": "Maintenance on Friday", **portal_vars}
    kept = hub_config(tmp_path, {})
    kept.JupyterHub.template_vars.update({"announcement": "x"})
    report_ignored_settings(kept)
    assert kept.JupyterHub.template_vars.get_value({}) == {"announcement": "x", **portal_vars}
