"""The users' own web apps, served on the session's private Unix sockets (in the Slurm job, as the user).

The session's Jupyter server starts these (spawner/jupyter/apps/) with uvicorn or gunicorn bound to a
Unix socket: the frameworks' own servers bind TCP only, which every account on the node could reach.
Each module here turns the user's file (DSPORTAL_APP_FILE) into the framework's public application object.
"""
