"""DS Portal on the head node: the hub's login, the admin settings and how they reach JupyterHub.

portal/*.py     inside JupyterHub, as the hub's service account (authenticator, settings, hub config)
portal/admin/   the `dsportal` command, run by an admin from a shell (check-config, images pull)
"""
