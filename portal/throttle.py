"""Failed-login throttling per username and per client address.

After `max_failures` failures within `window` seconds, a key (a username or
an address) is refused for `backoff` seconds, whatever password comes next.
Memory is bounded: old entries are pruned, and at most `max_keys` are kept.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from typing import Callable


class LoginThrottle:
    def __init__(self, max_failures: int, window: float, backoff: float,
                 clock: Callable[[], float] = time.monotonic, max_keys: int = 100_000):
        self.max_failures = max_failures
        self.window = window
        self.backoff = backoff
        self.clock = clock
        self.max_keys = max_keys
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._blocked_until: dict[str, float] = {}

    def wait_seconds(self, keys: list[str]) -> float:
        """Seconds until every key may try again (0 = now)."""
        now = self.clock()
        waits = [self._blocked_until.get(k, 0) - now for k in keys]
        return max([0.0, *waits])

    def failure(self, keys: list[str]) -> None:
        now = self.clock()
        for key in keys:
            times = self._failures.pop(key, deque())
            times.append(now)
            while times and times[0] < now - self.window:
                times.popleft()
            self._failures[key] = times  # most recent at the end
            if len(times) >= self.max_failures:
                self._blocked_until[key] = now + self.backoff
                times.clear()
        self._prune(now)

    def success(self, keys: list[str]) -> None:
        for key in keys:
            self._failures.pop(key, None)

    def _prune(self, now: float) -> None:
        while len(self._failures) > self.max_keys:
            self._failures.popitem(last=False)
        for key in [k for k, until in self._blocked_until.items() if until <= now]:
            del self._blocked_until[key]
