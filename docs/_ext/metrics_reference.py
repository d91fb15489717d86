"""The Prometheus metrics' reference, in Markdown, from the portal's metrics module (spawner/hub/base/metrics.py).

The hub serves them with JupyterHub's own at /hub/metrics.  Each metric the
module declares (prometheus_client's Counter, Gauge, Histogram) and each
family of the session collector it registers at the hub's start are listed
with their name, type, help and labels, as prometheus_client would expose
them (a counter's samples end in _total, a histogram's in _bucket, _sum and _count).
"""

from __future__ import annotations

from dataclasses import dataclass

from markdown_text import prose
from prometheus_client.metrics import MetricWrapperBase

from spawner.hub.base import metrics


@dataclass(frozen=True)
class Metric:
    name: str  # as exposed, counters with their _total
    type: str
    help: str
    labels: tuple[str, ...]


def _declared(metric: MetricWrapperBase) -> Metric:
    (family,) = metric.describe()  # name (without a counter's _total), type and help: prometheus_client's public API
    name = family.name + "_total" if family.type == "counter" else family.name
    # prometheus_client has no public accessor for a metric's label names: the constructor's labelnames are
    # kept as _labelnames (checked on 0.20 to 0.26); tests/unit/test_docs.py builds this page, so a change fails there.
    return Metric(name, family.type, family.documentation, tuple(metric._labelnames))


def _collected() -> list[Metric]:
    """The session collector's families, as it yields them at a scrape: one running session gives every family a
    sample, whose labels are the family's."""
    a_session = {"state": "running", "partition": "gpu", "gpus": 1}
    collector = metrics.SessionCollector(lambda: [a_session])
    return [Metric(f.name, f.type, f.documentation, tuple(f.samples[0].labels)) for f in collector.collect()]


def portal_metrics() -> list[Metric]:
    """Every metric the portal adds to the hub's /hub/metrics, by name."""
    declared = [_declared(m) for m in vars(metrics).values() if isinstance(m, MetricWrapperBase)]
    return sorted(declared + _collected(), key=lambda m: m.name)


def metrics_markdown() -> str:
    lines = []
    for metric in portal_metrics():
        labels = ", ".join(f"`{label}`" for label in metric.labels) or "none"
        lines += [
            f"(metric-{metric.name.replace('_', '-')})=",
            f"## `{metric.name}`",
            "",
            prose(metric.help),
            "",
            f"- **Type:** {metric.type}",
            f"- **Labels:** {labels}",
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"
