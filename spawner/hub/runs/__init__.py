"""Notebooks and scripts run as Slurm jobs of their own (hub side).

`request` validates what a user asks for (JupyterLab's dialog, the REST API),
spawner/notebookparams/ reads a notebook's papermill parameters, `jobscript` builds the
sbatch call and the job script, `board` turns the shared listing of every
user's jobs (spawner/hub/slurm/joblisting.py: one squeue, one sacct) into what the
jobs panel shows, `service` submits, cancels and reads the logs, `tracker`
notices ends and says so (spawner/hub/base/notices.py), `handlers` serves it all.
Sweeps (one job array per grid): `grid` checks the grid, `sweeps` and
`sweepboard` make the panel's one row, the table and the end's words.
The job itself runs spawner/job/runs/runner.py on the compute node, as the user.
"""
