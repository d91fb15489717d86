"""The admins' status page asks Prometheus (hub side): its HTTP API, with a timeout, read into plain series.

Prometheus scrapes the hub's /hub/metrics (deploy/prometheus/prometheus.yml);
the page's questions are PromQL over the portal's metrics
(spawner/hub/base/metrics.py).  A Prometheus that does not answer, or answers an
error, is PrometheusDown with words for the page; the hub is unaffected.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from urllib.parse import urlencode

from tornado.httpclient import AsyncHTTPClient, HTTPClientError

RANGES = {"24h": (24 * 3600, 300), "7d": (7 * 86400, 3600)}  # name -> (seconds back, step seconds)


class PrometheusDown(Exception):
    """Prometheus did not answer or refused the question; the text says which, for the page."""


@dataclass(frozen=True)
class Series:
    labels: dict[str, str]
    points: list[tuple[float, float]]  # (unix time, value)


def range_url(base: str, query: str, start: float, end: float, step: int) -> str:
    return f"{base.rstrip('/')}/api/v1/query_range?" + urlencode(
        {"query": query, "start": f"{start:.0f}", "end": f"{end:.0f}", "step": str(step)}
    )


def instant_url(base: str, query: str) -> str:
    return f"{base.rstrip('/')}/api/v1/query?" + urlencode({"query": query})


def read_answer(body: bytes) -> list[Series]:
    """Prometheus's JSON answer (a matrix or a vector) -> series; PrometheusDown for an error answer (pure)."""
    try:
        answer = json.loads(body)
    except ValueError:
        raise PrometheusDown("Prometheus answered something that is not its API's JSON.") from None
    if answer.get("status") != "success":
        raise PrometheusDown(f"Prometheus refused the question: {answer.get('error', 'no reason given')}.")
    series = []
    for item in answer.get("data", {}).get("result", []):
        values = item.get("values") or ([item["value"]] if "value" in item else [])
        points = [(float(t), float(v)) for t, v in values if v not in ("NaN", "+Inf", "-Inf")]
        series.append(Series(labels=dict(item.get("metric", {})), points=points))
    return series


class Prometheus:
    def __init__(self, url: str, timeout: float):
        self.url = url
        self.timeout = timeout

    async def _get(self, url: str) -> list[Series]:
        if not self.url:
            raise PrometheusDown("No Prometheus is configured (usage.prometheus_url in the portal's config).")
        try:
            response = await AsyncHTTPClient().fetch(url, request_timeout=self.timeout)
        except HTTPClientError as e:
            if e.response is not None and e.code != 599:
                return read_answer(e.response.body)  # a 400 carries Prometheus's own error text
            raise PrometheusDown(f"Prometheus at {self.url} does not answer ({e}).") from None
        except OSError as e:
            raise PrometheusDown(f"Prometheus at {self.url} cannot be reached ({e}).") from None
        return read_answer(response.body)

    async def range(self, query: str, name: str, now: float | None = None) -> list[Series]:
        back, step = RANGES[name]
        end = time.time() if now is None else now
        return await self._get(range_url(self.url, query, end - back, end, step))

    async def instant(self, query: str) -> list[Series]:
        return await self._get(instant_url(self.url, query))
