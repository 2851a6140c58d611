"""A progress line with rate and ETA, on standard error."""

from __future__ import annotations

import sys
import time


class Progress:
    """``Progress(total, unit)``; call ``advance(n, extra)``; a line per second at most."""

    def __init__(self, total: int, what: str, enabled: bool = True, stream=None) -> None:
        self.total, self.what, self.enabled = total, what, enabled
        self.stream = stream or sys.stderr
        self.done, self.items = 0, 0
        self.start = self.last = time.monotonic()
        self.tty = getattr(self.stream, "isatty", lambda: False)()

    def advance(self, n: int = 1, items: int = 0, extra: str = "") -> None:
        self.done += n
        self.items += items
        now = time.monotonic()
        if self.enabled and (now - self.last >= 1.0 or self.done >= self.total):
            self.last = now
            self._print(now, extra)

    def _print(self, now: float, extra: str) -> None:
        el = max(now - self.start, 1e-9)
        rate = self.done / el
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        eta_s = f"{eta / 60:.1f} min" if eta != float("inf") else "?"
        counted = f"{self.items} schedules, {self.items / el * 3600:,.0f}/h | " if self.items else ""
        line = f"{self.what} {self.done}/{self.total} | {counted}elapsed {el / 60:.1f} min, ETA {eta_s} {extra}"
        if self.tty:
            self.stream.write("\r" + line[:150].ljust(150))
            if self.done >= self.total:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
