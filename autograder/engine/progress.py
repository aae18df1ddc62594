"""Progress that fits where it goes: a bar in a terminal, plain lines in a log or CI.

tqdm's bar redraws itself with carriage returns: in a terminal that is one line that
moves; sent to a file or a CI log it is one ever longer line. ``interactive()`` says
whether the output is a terminal (and not CI); ``Progress`` counts work with a bar
there and otherwise writes a plain line every ``every`` units and at the end::

    progress = Progress(40, "grading 01_tokenisation", "submission")
    for path in paths:
        ...
        progress.update()      # a log gets "grading 01_tokenisation: 4/40 submissions (12 s)" every 4
    progress.close()

Training uses ``interactive()`` alone: its bar in a terminal, and elsewhere only its
evaluation lines (``training.loop``).
"""

import os
import sys
import threading
import time
from collections.abc import Callable

from tqdm import tqdm


def interactive() -> bool:
    """Whether a progress bar suits this process's output: standard output and standard error
    are both terminals, and this is not a CI run (``CI`` set, as CI services do)."""
    if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
        return False
    return all(_is_terminal(stream) for stream in (sys.stdout, sys.stderr))


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # replaced, or closed
        return False


def _plain(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Progress:
    """``total`` units of work: a tqdm bar in a terminal, else one plain line every ``every``
    units (by default a tenth of the total) and one at the end, through ``log`` (standard
    error, where the bar goes); nothing when ``show`` is False."""

    def __init__(
        self,
        total: int,
        desc: str,
        unit: str,
        show: bool = True,
        every: int | None = None,
        log: Callable[[str], None] = _plain,
    ) -> None:
        self.total, self.desc, self.unit, self.log = total, desc, unit, log
        self.every = every or max(1, total // 10)
        self.done, self.started, self._lock = 0, time.monotonic(), threading.Lock()
        self.lines = show and not interactive()
        self.bar = tqdm(total=total, desc=desc, unit=unit, disable=not show or self.lines)

    def update(self, n: int = 1) -> None:
        """``n`` more units done (from any thread)."""
        with self._lock:
            self.bar.update(n)
            before, self.done = self.done, self.done + n
            if self.lines and (self.done // self.every > before // self.every or self.done == self.total):
                seconds = time.monotonic() - self.started
                self.log(f"{self.desc}: {self.done}/{self.total} {self.unit}s ({seconds:.0f} s)")

    def close(self) -> None:
        self.bar.close()
