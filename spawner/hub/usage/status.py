"""The admins' status page's data: PromQL over the portal's metrics, read into plots and tables (hub side).

Every number comes from Prometheus (spawner/hub/usage/prometheus.py), which
scrapes the hub's /hub/metrics; the questions are declared here once.
Prometheus down: the page says so and shows nothing else; the hub is
unaffected.
"""

from __future__ import annotations

import asyncio

from . import charts
from .prometheus import RANGES, Prometheus, PrometheusDown, Series

HEAVY_USERS = 10  # the heaviest users by GPU-hours, least efficient first
MIN_HEAVY_GPU_HOURS = 0.01  # below this a user is no heavy user at all


def queries(window: str) -> dict[str, str]:
    """The page's PromQL, per range (`window`: 24h or 7d)."""
    return {
        "gpus": "sum by (partition, state) (dsportal_partition_gpus)",
        "queue": "sum by (partition) (dsportal_queue_pending_jobs)",
        "wait_p50": "histogram_quantile(0.5, sum by (partition, le) (increase(dsportal_job_wait_seconds_bucket[1h])))",
        "wait_p90": "histogram_quantile(0.9, sum by (partition, le) (increase(dsportal_job_wait_seconds_bucket[1h])))",
        "sessions": "sum by (state) (dsportal_sessions)",
        "culled": f"sum by (partition) (increase(dsportal_culled_gpu_hours_total[{window}]))",
        "user_hours": f"sum by (user) (increase(dsportal_user_gpu_hours_total[{window}]))",
        "user_busy": f"sum by (user) (increase(dsportal_user_gpu_busy_hours_total[{window}]))",
    }


RANGED = ("gpus", "queue", "wait_p50", "wait_p90", "sessions")


def named(series: list[Series], *labels: str) -> dict[str, list[tuple[float, float]]]:
    return {" ".join(s.labels.get(label, "") for label in labels).strip() or "all": s.points for s in series}


def latest(series: list[Series], *labels: str) -> dict[tuple[str, ...], float]:
    return {tuple(s.labels.get(label, "") for label in labels): s.points[-1][1] for s in series if s.points}


def gpus_now(series: list[Series]) -> list[dict]:
    """The last reading of GPUs per partition: [{"partition", "allocated", "free", "down"}] (pure)."""
    rows: dict[str, dict] = {}
    for (partition, state), value in sorted(latest(series, "partition", "state").items()):
        rows.setdefault(partition, {"partition": partition, "allocated": 0, "free": 0, "down": 0})[state] = round(value)
    return list(rows.values())


def heavy_users(hours: list[Series], busy: list[Series]) -> list[dict]:
    """The heaviest users by GPU-hours (the hub's and Slurm's), least efficient first (pure).  Efficiency is
    the self-reported busy share, at most 100 %: a user cannot leave the ranking by reporting nothing (0 %)."""
    used = {key[0]: value for key, value in latest(busy, "user").items()}
    rows = [
        {
            "user": key[0],
            "gpu_hours": round(value, 2),
            "efficiency": min(100, round(100 * max(used.get(key[0], 0), 0) / value)),
        }
        for key, value in latest(hours, "user").items()
        if value >= MIN_HEAVY_GPU_HOURS
    ]
    heaviest = sorted(rows, key=lambda r: -r["gpu_hours"])[:HEAVY_USERS]
    return sorted(heaviest, key=lambda r: (r["efficiency"], -r["gpu_hours"]))


def figures(answers: dict[str, list[Series]]) -> dict[str, dict]:
    """The page's plots from Prometheus's answers (pure)."""
    gpus = {
        f"{s.labels.get('partition', '')} {s.labels.get('state', '')}": s.points
        for s in answers["gpus"]
        if s.labels.get("state") in ("allocated", "free")
    }
    waits = {f"{name} p50": pts for name, pts in named(answers["wait_p50"], "partition").items()}
    waits.update({f"{name} p90": pts for name, pts in named(answers["wait_p90"], "partition").items()})
    waits = {name: [(t, v / 60) for t, v in pts] for name, pts in waits.items()}
    users = heavy_users(answers["user_hours"], answers["user_busy"])
    culled = latest(answers["culled"], "partition")
    return {
        "gpus": charts.lines("GPUs allocated and free per partition", "GPUs", gpus),
        "queue": charts.lines("Jobs waiting in the queue", "pending jobs", named(answers["queue"], "partition")),
        "waits": charts.lines("Wait from submission to start (p50, p90 over the last hour)", "minutes", waits),
        "sessions": charts.lines("Portal sessions by state", "sessions", named(answers["sessions"], "state")),
        "culled": charts.bars(
            "GPU-hours given back by idle culling",
            "GPU-hours",
            [k[0] for k in culled],
            [round(v, 2) for v in culled.values()],
        ),
        "users": charts.bars(
            "Least efficient heavy users (share of their GPU-hours that did work, as their sessions reported it)",
            "% of GPU time busy (self-reported)",
            [r["user"] for r in users],
            [r["efficiency"] for r in users],
        ),
    }


async def status_data(prometheus: Prometheus, window: str) -> dict:
    """Everything the status page shows for one range, or {"error": words} when Prometheus is down."""
    asked = queries(window)
    try:
        answers = dict(
            zip(
                asked,
                await asyncio.gather(
                    *(
                        prometheus.range(q, window) if name in RANGED else prometheus.instant(q)
                        for name, q in asked.items()
                    )
                ),
                strict=True,
            )
        )
    except PrometheusDown as e:
        return {"range": window, "ranges": list(RANGES), "error": str(e), "figures": {}, "gpus_now": [], "users": []}
    return {
        "range": window,
        "ranges": list(RANGES),
        "error": "",
        "figures": figures(answers),
        "gpus_now": gpus_now(answers["gpus"]),
        "users": heavy_users(answers["user_hours"], answers["user_busy"]),
        "culled_gpu_hours": round(sum(latest(answers["culled"], "partition").values()), 2),
    }
