"""The dev cluster on one Debian 12 machine, run as root by deploy/devcluster.

common.py      paths, commands with timeouts, waiting with a deadline
demo.py        the demo people and groups, declared once (accounts, directory, logins, tests)
machine.py     host names, unix accounts, the demo storage and module
slurmconf.py   munge key, slurm.conf, gres.conf, GPU stand-ins
accounting.py  Slurm's job accounting: MariaDB and slurmdbd, slurmdbd.conf, the database user
mail.py        exim4, local delivery only: USER@dsportal.test to /var/mail/USER
directory.py   the demo OpenLDAP directory (also used by the LDAP tests)
portal.py      /etc/dsportal: the admin YAML, JupyterHub's config and secrets
supervisor.py  Debian's supervisord owns every daemon, each in the foreground
__main__.py    up | down | status | token | restart-hub

Standard library only: it runs with Debian's python3 before the portal's
environment exists.
"""
