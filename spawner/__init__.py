"""DS Portal sessions, by where the code runs.

spawner/contract.py  shared by both sides: names and installed paths (standard library only)
spawner/sessionspec.py  shared: the typed session spec the hub writes and the node reads once (standard library only)
spawner/slurmvocab.py   shared: Slurm's vocabulary, formats, parsers, argument lists (standard library only)
spawner/hub/         inside JupyterHub on the head node, as the hub's service account
spawner/job/         in the Slurm job on the compute node, as the user, before and around JupyterLab
spawner/jupyter/     inside the user's Jupyter server (server extension), as the user
spawner/labext/      in the user's browser (the JupyterLab extension, TypeScript: src/ by concept)
"""
