"""Continuing a session in a new job, the job's side: a kernel's variables carried (carry.py)."""
