"""Runs in the session's Slurm job on the compute node, as the user.

The session's preparation (home, storage links, kernelspecs, private kernel sockets) that
dsportal-singleuser runs before its server starts, and dsportal-module-kernel,
which starts module kernels.  Imports nothing of the hub side and nothing of
JupyterHub (no jupyterhub, batchspawner, ldap3, portal).
"""
