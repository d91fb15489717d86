# JupyterHub config for DS Portal.
#
# Everything an admin sets lives in one YAML file (/etc/dsportal/portal.yaml,
# or $DSPORTAL_CONFIG); this file applies it.
#
# Plain JupyterHub settings go in files of their own, so this file stays as
# shipped: every *.py in the folder jupyterhub_config.d beside it (for
# /etc/dsportal/jupyterhub_config.py, /etc/dsportal/jupyterhub_config.d/),
# loaded in name order (10-site.py before 20-proxy.py) after the YAML, so
# their settings win.  Each such file starts from an empty `c`: it sets or
# appends (c.JupyterHub.services.append({...})) but does not see what the
# YAML set.  The hub's service account must be able to read the folder and
# its files.  The dev cluster writes its own additions there (deploy/dev/portal.py).
from pathlib import Path

from spawner.hub.wiring.hubconfig import apply_portal_config, report_ignored_settings

c = get_config()  # noqa: F821  (provided by JupyterHub)
apply_portal_config(c)

config_d = Path(__file__).with_name("jupyterhub_config.d")
for extra in sorted(config_d.iterdir()) if config_d.is_dir() else []:  # an unreadable folder stops the hub
    if extra.suffix == ".py":
        load_subconfig(str(extra))  # noqa: F821  (provided by JupyterHub, as get_config is)

# Last: names every batchspawner setting above or in those files that the portal ignores, and the YAML key to
# use instead.
report_ignored_settings(c)
