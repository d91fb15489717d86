"""Runs as the user's Jupyter server, in the Slurm job on the compute node, as the user.

singleuser.py: dsportal-singleuser, JupyterHub's single-user server holding its own port;
handlers.py, tensorboard.py: the server extension (TensorBoard for any folder, the readiness proof).
"""
