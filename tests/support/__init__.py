"""Helpers the tests import (never conftest.py or a test module).

http.py         json_request, wait_until (a condition with a deadline), free_port
mockslurm.py    MockSlurm: fake sbatch/squeue/scancel and a sudo stand-in, their job table; config_data, fake_passwd
fakeruntime.py  FakeRuntime: a stand-in apptainer that records its calls (tests only; the dev cluster has none)
hub.py          HubProcess: a real JupyterHub + proxy on loopback with the portal's config; hub_with_mock_slurm
                (one with a mock Slurm of its own); form_login
slapd.py        Slapd: Debian's slapd with the demo directory on a loopback port; ldap_settings
cluster.py      Cluster: the dev cluster's hub API and Slurm's own view
mail.py         the dev cluster's delivered mail: mailbox_of(user), address_of(user), wait_for_mail(user, subject)
demo.py         the demo people (deploy/dev/demo.py): USERS, password_of(name), uid_of(name)
jupyter.py      run_code, run_in_terminal: a user's JupyterLab through the proxy
browser.py      Chromium's flags, log_in, shot (a screenshot per step)
notebooks.py    run a template notebook with papermill; how long each took
"""
