"""The portal's version (portal/version.py): pyproject.toml's, in the hub's log and in the hub pages' footer.
(`dsportal --version`: tests/unit/test_cli.py; the JupyterLab extension's: tests/unit/test_labext.py.)"""

from __future__ import annotations

import logging
import sysconfig
import tomllib
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import jinja2
import pytest
import yaml
from traitlets.config import Config

from portal import version as version_module
from portal.version import checkout_version, version
from spawner.contract import data_dir
from spawner.hub.wiring.hubconfig import apply_portal_config

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT_VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


@pytest.fixture
def no_cached_version():
    version.cache_clear()
    yield
    version.cache_clear()


def test_the_version_is_pyprojects():
    assert version() == PYPROJECT_VERSION


def test_a_pyproject_of_another_project_is_not_the_portals(tmp_path):
    other = tmp_path / "pyproject.toml"
    other.write_text('[project]\nname = "other"\nversion = "9.9"\n')
    broken = tmp_path / "broken.toml"
    broken.write_text("[project\n")
    assert [checkout_version(p) for p in (other, broken, tmp_path / "missing.toml")] == [None, None, None]


def test_an_installed_portal_reads_its_distributions_metadata(monkeypatch, tmp_path, no_cached_version):
    monkeypatch.setattr(version_module, "CHECKOUT_PYPROJECT", tmp_path / "pyproject.toml")  # a wheel has none
    monkeypatch.setattr(metadata, "version", lambda name: {"dsportal": "2.3.4"}[name])
    assert version() == "2.3.4"


def test_without_either_the_version_says_unknown(monkeypatch, tmp_path, no_cached_version):
    monkeypatch.setattr(version_module, "CHECKOUT_PYPROJECT", tmp_path / "pyproject.toml")

    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", not_installed)
    assert version() == "unknown"


def hub_config(tmp_path) -> Config:
    path = tmp_path / "portal.yaml"
    path.write_text(
        yaml.safe_dump({"ldap": {"bind_dn_template": "uid={username},dc=x"}, "hub": {"data_dir": str(tmp_path)}})
    )
    c = Config()
    apply_portal_config(c, path)
    return c


def test_the_hub_logs_its_version_at_start(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="JupyterHub"):
        hub_config(tmp_path)
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("DS Portal")] == [
        f"DS Portal {PYPROJECT_VERSION}"
    ]


def test_the_hub_pages_get_the_version_as_a_template_variable(tmp_path):
    assert hub_config(tmp_path).JupyterHub.template_vars.get_value({})["dsportal_version"] == PYPROJECT_VERSION


def test_an_admins_template_vars_that_kept_the_home_pages_data_get_the_version_back(tmp_path, caplog):
    from spawner.hub.base.pagescripts import script_path
    from spawner.hub.wiring.hubconfig import report_ignored_settings

    c = hub_config(tmp_path)
    home = c.JupyterHub.template_vars.get_value({})["dsportal_home"]
    c.JupyterHub.template_vars = {"dsportal_home": home}  # an admin's line that replaces the dict
    report_ignored_settings(c)
    assert c.JupyterHub.template_vars == {
        "dsportal_home": home,
        "dsportal_version": PYPROJECT_VERSION,
        "dsportal_theme_script": script_path("theme.js"),
        "dsportal_admin_script": script_path("admin.js"),
    }
    assert (
        "dropped the portal's page data (dsportal_version, dsportal_theme_script, dsportal_admin_script): added it back"
        in caplog.text
    )


# JupyterHub's own page.html, reduced to the block the portal's page.html fills (the same name: checked below)
STOCK_PAGE = "<body>{% block main %}{% endblock main %}{% block footer %}{% endblock footer %}</body>"


def rendered_page(**context) -> str:
    """templates/page.html over a stand-in of JupyterHub's page, loaded the way JupyterHub loads it."""
    loader = jinja2.ChoiceLoader(
        [
            jinja2.PrefixLoader({"templates": jinja2.DictLoader({"page.html": STOCK_PAGE})}),
            jinja2.FileSystemLoader(str(data_dir("templates"))),
        ]
    )
    env = jinja2.Environment(loader=loader, autoescape=True)
    return env.get_template("page.html").render(base_url="/hub/", **context)


def test_every_page_of_a_logged_in_user_shows_the_version_in_its_footer():
    html = rendered_page(user=SimpleNamespace(name="alice", admin=False), dsportal_version="0.1.0")
    assert (
        '<footer class="dsportal-footer container text-center text-muted small py-3">DS Portal 0.1.0</footer>' in html
    )


def test_the_login_page_does_not_tell_strangers_the_version():
    assert "dsportal-footer" not in rendered_page(user=None, dsportal_version="0.1.0")


def test_jupyterhubs_page_has_the_footer_block_the_portal_fills():
    stock = Path(sysconfig.get_path("data")) / "share" / "jupyterhub" / "templates" / "page.html"
    assert "{% block footer %}" in stock.read_text()
