"""Continuing a session in a new job, the Jupyter server's side: its kernels' variables written out (kernels.py)."""
