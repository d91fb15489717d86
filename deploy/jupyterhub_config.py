# JupyterHub config for DS Portal.
#
# Everything an admin sets lives in one YAML file (/etc/dsportal/portal.yaml,
# or $DSPORTAL_CONFIG); this file applies it.  Plain JupyterHub settings may
# follow the first call and override what it set; keep the last call last.
from portal.hubconfig import apply_portal_config, report_ignored_settings

c = get_config()  # noqa: F821  (provided by JupyterHub)
apply_portal_config(c)

# Plain JupyterHub settings, if any, go here, e.g.:
# c.JupyterHub.shutdown_on_logout = True

# Last: names every batchspawner setting above that the portal ignores, and the YAML key to use instead.
report_ignored_settings(c)
