"""The pages' plots as plotly.js figures: plain JSON the page hands to Plotly.newPlot (hub side, pure).

The hub builds each figure's data and layout here, tested by equality; the
browser draws them with plotly.js, served from the `plotly` package
(spawner/hub/usage/handlers.py).  Times are the hub's local time, as the rest of
the portal's pages show them.
"""

from __future__ import annotations

from datetime import datetime

CONFIG = {"displaylogo": False, "responsive": True}


def local_time(unix: float) -> str:
    return datetime.fromtimestamp(unix).strftime("%Y-%m-%d %H:%M:%S")


def _layout(title: str, y_title: str, **more) -> dict:
    return {
        "title": {"text": title, "font": {"size": 15}},
        "yaxis": {"title": {"text": y_title}, "rangemode": "tozero"},
        "margin": {"l": 60, "r": 20, "t": 40, "b": 40},
        "height": 300,
        # below the date axis's second line of labels (at its default y=-0.1 the legend covered the date)
        "legend": {"orientation": "h", "yanchor": "top", "y": -0.25},
        **more,
    }


def lines(title: str, y_title: str, series: dict[str, list[tuple[float, float]]]) -> dict:
    """One line per named series of (unix time, value), with small markers: a series of one reading shows too."""
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "marker": {"size": 4},
            "name": name,
            "x": [local_time(t) for t, _ in points],
            "y": [v for _, v in points],
        }
        for name, points in series.items()
    ]
    return {"data": data, "layout": _layout(title, y_title, xaxis={"type": "date"}), "config": CONFIG}


def bars(title: str, y_title: str, labels: list[str], values: list[float], name: str = "") -> dict:
    return {
        "data": [{"type": "bar", "name": name or y_title, "x": labels, "y": values}],
        "layout": _layout(title, y_title),
        "config": CONFIG,
    }


def points(title: str, y_title: str, series: dict[str, list[tuple[str, float]]], joined: tuple[str, ...] = ()) -> dict:
    """One marker per session or job, per named series of (local time text, value); the series named in
    `joined` have their markers joined by lines."""
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers" if name in joined else "markers",
            "name": name,
            "x": [t for t, _ in pts],
            "y": [v for _, v in pts],
        }
        for name, pts in series.items()
    ]
    return {
        "data": data,
        "layout": _layout(
            title, y_title, xaxis={"type": "date"}, yaxis={"title": {"text": y_title}, "range": [0, 105]}
        ),
        "config": CONFIG,
    }
