"""One session start as a timeline, read from the hub's log, the session's job log and the browser (pure parsers).

The logs and Chromium run on the dev cluster's one machine, so their clocks
agree.  Marks, in order: sbatch returned (hub), the job script runs (job log's
first line), preparation done (`dsportal: prepared at`), the Jupyter server's
first log line (its modules imported), listening (Jupyter's "is running at"),
the port reported (hub), readiness proven (hub: "JupyterLab at"), the hub says
ready (JupyterHub: "took N seconds to start"); then the browser's
(`page_marks`): the page leaves for JupyterLab (the progress page's reload on
"ready", or the bare server's URL opened), JupyterLab's page received, its
scripts run (its first API call), the launcher drawn.
"""

from __future__ import annotations

import re
from datetime import datetime

_HUB_LINE = re.compile(r"^\[\w (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) JupyterHub [^\]]*\] (.*)$")
_JUPYTER_LINE = re.compile(r"^\[\w (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) \w+\] (.*)$")
_SINCE = re.compile(r"^dsportal: job (\d+) of \S+ on \S+ since (\S+);")
_PREPARED = re.compile(r"^dsportal: prepared at (\S+)$")

MARKS = ("sbatch returned", "job script runs", "preparation done", "server imported", "listening",
         "port reported", "readiness proven")  # fmt: skip


def _local(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f").timestamp()  # the hub logs local time


def hub_marks(hub_log: str, user: str, job_id: str) -> dict[str, float]:
    """The hub's marks of job `job_id` of `user` (seconds since the epoch)."""
    wanted = {
        "sbatch returned": f"Session job {job_id} submitted for {user}",
        "port reported": f"Session of {user} reported port",
        "readiness proven": f"Session job {job_id} of {user}: JupyterLab at",
        "hub says ready": f"User {user} took ",
    }
    marks: dict[str, float] = {}
    submitted = False
    for line in hub_log.splitlines():
        found = _HUB_LINE.match(line)
        if not found:
            continue
        stamp, text = found.groups()
        for mark, words in wanted.items():
            if text.startswith(words) and mark not in marks and (submitted or mark == "sbatch returned"):
                marks[mark] = _local(stamp)
                submitted = True
    return marks


def job_marks(job_log: str) -> dict[str, float]:
    """The session's own marks, from its job log."""
    marks: dict[str, float] = {}
    for line in job_log.splitlines():
        if found := _SINCE.match(line):
            marks["job script runs"] = datetime.fromisoformat(found.group(2)).timestamp()
        elif found := _PREPARED.match(line):
            marks["preparation done"] = datetime.fromisoformat(found.group(1)).timestamp()
        elif found := _JUPYTER_LINE.match(line):
            stamp, text = found.groups()
            marks.setdefault("server imported", _local(stamp))
            if "is running at" in text:
                marks.setdefault("listening", _local(stamp))
    return marks


def timeline(asked: float, marks: dict[str, float], ready: float) -> list[tuple[str, float, float]]:
    """[(mark, seconds since the start was asked, seconds since the mark before)], ending with "hub says ready"."""
    rows, last = [], asked
    for mark in (*MARKS, "hub says ready"):
        at = ready if mark == "hub says ready" else marks.get(mark)
        if at is None:
            continue
        rows.append((mark, at - asked, at - last))
        last = at
    return rows


# In the page (Chromium), from its first frame: the moment JupyterLab's launcher is laid out, checked once per
# frame, as epoch milliseconds (the wall clock, as the logs').  Measured in the page, not by polling it from the
# test: Playwright's expect polls at 0.1, 0.25 and 0.5 s, then every 1 s, so a launcher drawn just after a poll
# was counted up to a second late.
DRAWN_SCRIPT = """
(() => {
  const look = () => {
    const card = document.querySelector('.jp-Launcher .jp-LauncherCard');
    if (card && card.getBoundingClientRect().width > 0) {
      window.__dsportalDrawn = Date.now();
      return;
    }
    requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
})();
"""
# What the page knows of its own load (run in JupyterLab's page once the launcher is drawn)
PAGE_TIMES_SCRIPT = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const api = performance.getEntriesByType('resource').find(e => e.name.includes('/api/'));
  return {origin: performance.timeOrigin, received: nav ? nav.responseEnd : null,
          firstApi: api ? api.startTime : null, drawn: window.__dsportalDrawn || null};
}"""


def page_marks(times: dict) -> dict[str, float]:
    """The browser's marks (seconds since the epoch) from PAGE_TIMES_SCRIPT's answer: the navigation to
    JupyterLab starts (the progress page's reload when the hub says ready, with the redirects and OAuth after
    it), JupyterLab's page received, its scripts run (its first API call), the launcher drawn."""
    origin = times["origin"]
    marks = {"page leaves for lab": origin / 1000}
    if times.get("received") is not None:
        marks["lab page received"] = (origin + times["received"]) / 1000
    if times.get("firstApi") is not None:
        marks["scripts run"] = (origin + times["firstApi"]) / 1000
    if times.get("drawn") is not None:
        marks["launcher drawn"] = times["drawn"] / 1000
    return marks


def in_order(start: float, marks: dict[str, float]) -> list[tuple[str, float, float]]:
    """[(mark, seconds since `start`, seconds since the mark before)], in the order they happened."""
    rows, last = [], start
    for mark, at in sorted(marks.items(), key=lambda item: item[1]):
        rows.append((mark, at - start, at - last))
        last = at
    return rows
