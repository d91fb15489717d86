# DS Portal's spawner (and its pages) in a site's own JupyterHub, with the site's own authenticator.
#
# For a site that runs JupyterHub already (its login, its templates) and wants DS Portal's Slurm sessions: copy
# this file as its jupyterhub_config.py (or add these lines to its own), and set in the admin file
#   ldap:
#     enabled: false        # the authenticator is this file's, not the portal's LDAP login
# The rest of the admin file (slurm, sessions, environment, ...) is read as ever; `dsportal check-config` checks
# it.  The sessions, their routes, the home page and the usage pages are the portal's; JupyterHub's own pages
# keep the site's templates where the portal has none.
from spawner.hub.wiring.hubconfig import apply_portal_config, report_ignored_settings

c = get_config()  # noqa: F821  (provided by JupyterHub)
apply_portal_config(c)  # the admin file: $DSPORTAL_CONFIG or /etc/dsportal/portal.yaml

# The site's authenticator: any JupyterHub authenticator that logs in unix account names (PAM, LDAP, OAuth with
# usernames mapped to accounts).  Sessions run as the account of the user's name (sudo -u NAME sbatch).
c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = set()  # or allowed groups: c.PAMAuthenticator.allowed_groups = {"datasci"}
# the hub's admins are the admin file's hub.admin_users (the portal sets c.Authenticator.admin_users from it)

# Variables every session gets (exported by the job script; names the portal or Slurm owns are refused in the
# hub's log), as environment.variables in the admin file
c.Spawner.environment = {}

report_ignored_settings(c)  # batchspawner settings this spawner does not use, each named with what to set instead
