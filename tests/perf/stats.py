"""What the benchmarks print: percentiles of their timings."""

from __future__ import annotations


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank p-th percentile (nan for no values)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))] if ordered else float("nan")


def ms(values: list[float], p: float) -> str:
    return f"{percentile(values, p) * 1000:.0f} ms"
