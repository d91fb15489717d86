"""What sessions used, in the hub: their reports, Slurm's accounting of them, the metrics and the two pages.

(An ended session's summary is made by spawner/hub/session/usagelog.py, which the spawner imports.)

- accounting.py: one shared sacct for everyone, and Slurm's numbers filled into the summaries;
- clustermetrics.py: GPUs per partition, the queue and its waits, for Prometheus;
- prometheus.py: the status page's questions to Prometheus;
- charts.py: the pages' plots as plotly.js figures (pure);
- handlers.py: the user's usage page, the admins' status page, and the sessions' reports of their tally.
"""
