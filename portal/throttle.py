"""Failed-login throttling (runs in the hub).

A `LoginThrottle` counts attempts per key before the directory is asked, so a
burst of concurrent guesses cannot outrun it; a correct password clears its
key (`success`) or takes back its own attempt (`forgive`).  Once a key has
`max_failures` attempts within `window` seconds, it waits `backoff` seconds
after its latest one.  `failures` lets a caller slow a key down instead of
blocking it.  Memory is bounded: at most `max_keys` keys are kept.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable


class LoginThrottle:
    def __init__(
        self,
        max_failures: int,
        window: float,
        backoff: float,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 100_000,
    ):
        self.max_failures = max_failures
        self.window = window
        self.backoff = backoff
        self.clock = clock
        self.max_keys = max_keys
        self._attempts: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, key: str) -> deque[float]:
        times = self._attempts.get(key, deque())
        cutoff = self.clock() - self.window
        while times and times[0] < cutoff:
            times.popleft()
        return times

    def failures(self, key: str) -> int:
        """Attempts of `key` still counted (in the window, not cleared by a success)."""
        return len(self._recent(key))

    def wait_seconds(self, keys: list[str]) -> float:
        """Seconds until every key may try again (0 = now)."""
        now = self.clock()
        waits = [times[-1] + self.backoff - now for times in map(self._recent, keys) if len(times) >= self.max_failures]
        return max([0.0, *waits])

    def attempt(self, keys: list[str]) -> None:
        """Count an attempt now, before its outcome is known; it stays counted unless cleared or forgiven."""
        now = self.clock()
        for key in keys:
            times = self._recent(key)
            self._attempts.pop(key, None)
            times.append(now)
            self._attempts[key] = times  # most recent at the end
        while len(self._attempts) > self.max_keys:
            self._attempts.popitem(last=False)

    def success(self, keys: list[str]) -> None:
        """The key proved itself: forget its attempts."""
        for key in keys:
            self._attempts.pop(key, None)

    def forgive(self, keys: list[str]) -> None:
        """Take back the latest attempt only (a shared key, such as an address, after one good login)."""
        for key in keys:
            times = self._attempts.get(key)
            if times:
                times.pop()
