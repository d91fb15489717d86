"""The soak: simulated users and injected faults against the real dev cluster, then the portal's promises checked.

    deploy/devcluster soak [--minutes N]          = python -m tests.soak (as root, with the portal's Python)

model.py       what the soak records (calls, faults, samples, tokens, history reads, probes) and its violations
observe.py     reading squeue, the hub's sessions, the sessions' tokens in /proc, answers' words (parsers pure)
users.py       a simulated user: start, stop, extend, share, revoke, run and cancel jobs, look, log in
hostile.py     the hostile user: big notebook reads, a forged log line, a flood of token offers
faults.py      hub and proxy restarts, slurmctld and slapd stopped, a slurmd killed; restoring them
invariants.py  the promises as pure checks of what was recorded
report.py      the printed report (pure)
driver.py      one soak: Plan -> Report
"""
