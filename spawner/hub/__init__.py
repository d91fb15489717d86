"""Runs inside JupyterHub on the head node, as the hub's service account.

One folder per concept, the same names as on the Jupyter side (spawner/jupyter/),
the job side (spawner/job/), the JavaScript (spawner/labext/src/) and the
admin settings' sections.  From the top down; each imports only those below it
(pyproject.toml's import contracts keep the order):

    wiring/    the admin YAML applied to JupyterHub, the routes, the background loops' lifecycle, the stop
    home/      the home page's data and its API (the session card, extend)
    usage/     what sessions used: their reports, Slurm's accounting, metrics, the usage and status pages
    runs/      notebooks and scripts run as Slurm jobs of their own
    sharing/   a running session shared with colleagues
    clock/     a session's time: what is left, extending it
    session/   the lifecycle of one session: the spawner, its record, progress, readiness, ports, tokens,
               idle culling, stop, and which spawners are the portal's
    slurm/     every Slurm command the hub runs and the shared answers (what is free, listings, estimates)
    request/   what a user asks for and what it becomes: options, resources, limits, form, job spec
    base/      what every concept's handlers and loops share: request limits, metrics, notices (mail)

Each concept's HTTP handlers are its `handlers.py`; they reach the hub's shared
services through tornado's settings (`self.portal_services`).  Imports nothing of
spawner/job or spawner/jupyter.
"""
