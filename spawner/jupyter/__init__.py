"""Runs inside the user's Jupyter server (a server extension), on the compute node, as the user.

TensorBoard for any folder, served in-process behind the session's login.
"""
