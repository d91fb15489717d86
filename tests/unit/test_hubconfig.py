"""The admin YAML applied to JupyterHub's config (spawner/hub/wiring/hubconfig.py): what the handlers are given."""

from __future__ import annotations

import yaml
from traitlets.config import Config

from spawner.hub.base.requestlimits import SERVICES_KEY
from spawner.hub.slurm.services import services_for
from spawner.hub.wiring.hubconfig import apply_portal_config


def test_tornado_settings_carry_the_hubs_shared_services_not_the_scrapers_service(tmp_path):
    # the scraper's service list once took the services' place (a name reused in apply_portal_config), so every
    # portal handler's self.services was a list, holding Prometheus's token
    token = tmp_path / "scraper-token"
    token.write_text("t" * 40)
    path = tmp_path / "portal.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "ldap": {"bind_dn_template": "uid={username},dc=x"},
                "hub": {"data_dir": str(tmp_path / "state")},
                "usage": {"scraper_token_file": str(token)},
            }
        )
    )
    c = Config()
    apply_portal_config(c, path)
    assert c.JupyterHub.tornado_settings[SERVICES_KEY] is services_for(str(path))
    assert [s["name"] for s in c.JupyterHub.services.get_value([])][:1] == ["prometheus"]
