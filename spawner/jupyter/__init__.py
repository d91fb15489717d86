"""Runs as the user's Jupyter server, in the Slurm job on the compute node, as the user.

singleuser.py: dsportal-singleuser, JupyterHub's single-user server holding its own port;
extension.py: the server extension, which loads each concept's handlers (clock/, runs/, tensorboard/, sharing/)
and the readiness proof; session/: the session's plumbing (port keeper, activity, token, GPUs); usage/: its sampler.
"""
