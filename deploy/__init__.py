"""Deployment files (admin config examples, JupyterHub config) and the dev cluster (deploy/dev)."""
