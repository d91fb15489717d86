"""DS Portal spawner: JupyterLab sessions as Slurm jobs on GPU nodes."""
