"""Runs inside JupyterHub on the head node, as the hub's service account.

The spawner, every Slurm command, user options, the job script, the options
form and the port callback.  Imports nothing of spawner/job or spawner/jupyter.
"""
