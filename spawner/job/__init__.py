"""Runs in the session's Slurm job on the compute node, as the user.

dsportal-singleuser prepares the home and the kernels, reports the port, then
becomes JupyterLab; dsportal-module-kernel starts module kernels.  Imports
nothing of the hub side (no jupyterhub.spawner, batchspawner, ldap3, portal).
"""
