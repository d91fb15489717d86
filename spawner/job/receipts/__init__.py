"""Receipts, the job's side: what a session or a run ran with (environment.py), written as the job starts."""
