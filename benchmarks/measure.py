"""Measuring tools for the benchmarks: a command's wall time and memory, the machine, the load.

``run_measured`` starts a command and, while it runs, samples its whole process tree
(every descendant, found through /proc) every 50 ms: the peak of the summed
proportional set size (PSS: shared pages, such as torch's libraries in forked children,
counted once in all) is the tree's peak memory. It also reads the command's own
``wait4`` resource usage, whose ``ru_maxrss`` is the largest resident set of any single
process of the tree that was waited for (what ``/usr/bin/time -f %M`` reports). Linux
carries a process's peak over ``exec``, so the command is started by a small shim
interpreter (about 10 MB) rather than forked from this one, which holds torch.
"""

from __future__ import annotations

import os
import platform
import re
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def tool_env(**extra: str) -> dict[str, str]:
    """The environment for the tools: the venv's bin first on PATH (nbgrader runs alembic)."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", PYDEVD_DISABLE_FILE_VALIDATION="1")
    env.update(extra)
    return env


# --- the process tree -------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as handle:
                    out += [int(p) for p in handle.read().split()]
            except OSError:
                pass
    except OSError:
        pass
    return out


def tree(pid: int) -> list[int]:
    """``pid`` and all its descendants now alive."""
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        seen.append(p)
        todo += _children(p)
    return seen


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def tree_pss_mib(pid: int) -> float:
    return sum(_pss_kib(p) for p in tree(pid)) / 1024


# Forks and execs the command, waits for it and writes its wait4 ru_maxrss (KiB) to fd argv[1].
_SHIM = (
    "import os, sys\n"
    "fd = int(sys.argv[1])\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.close(fd)\n"
    "    try:\n"
    "        os.execvp(sys.argv[2], sys.argv[2:])\n"
    "    finally:\n"
    "        os._exit(127)\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "os.write(fd, str(usage.ru_maxrss).encode())\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


@dataclass
class Measured:
    wall_s: float
    tree_peak_mib: float  # peak summed PSS of the process tree (sampled)
    max_rss_mib: float  # largest single process (wait4 ru_maxrss)
    returncode: int
    output: str = ""


def run_measured(
    cmd: list[str], *, cwd: Path | None = None, env: dict | None = None, timeout: float = 900, interval: float = 0.05
) -> Measured:
    """Run ``cmd`` to completion; its wall time, peak tree memory and largest process."""
    read_fd, write_fd = os.pipe()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _SHIM, str(write_fd), *cmd],
        cwd=cwd,
        env=env or tool_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        pass_fds=(write_fd,),
    )
    os.close(write_fd)
    peak = [0.0]
    done = threading.Event()
    chunks: list[bytes] = []

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], tree_pss_mib(proc.pid))
            done.wait(interval)

    def drain() -> None:
        assert proc.stdout is not None
        for chunk in iter(lambda: proc.stdout.read(65536), b""):
            chunks.append(chunk)

    sampler = threading.Thread(target=sample, daemon=True)
    reader = threading.Thread(target=drain, daemon=True)
    sampler.start()
    reader.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    reader.join(timeout=5)
    with os.fdopen(read_fd, "rb") as handle:
        text = handle.read().decode() or "0"
    return Measured(wall, peak[0], int(text) / 1024, proc.returncode, b"".join(chunks).decode(errors="replace"))


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


# --- the machine and the load -------------------------------------------------------------


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib() -> float:
    try:
        match = re.search(r"MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text())
        return int(match.group(1)) / 1024**2 if match else float("nan")
    except OSError:
        return float("nan")


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine() -> dict:
    return {
        "cpu": cpu_model(),
        "cores": cores(),
        "memory_gib": round(memory_gib(), 1),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "torch": version("torch"),
        "otter-grader": version("otter-grader"),
        "nbgrader": version("nbgrader"),
        "tokenizers": version("tokenizers"),
        "nbclient": version("nbclient"),
        "gpu": "none" if not _cuda() else _cuda(),
    }


def _cuda() -> str:
    try:
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else ""
    except Exception:
        return ""


def loadavg() -> tuple[float, float, float]:
    try:
        a, b, c = Path("/proc/loadavg").read_text().split()[:3]
        return float(a), float(b), float(c)
    except OSError:
        return (float("nan"),) * 3


@dataclass
class LoadMonitor:
    """Samples the 1-minute load average every few seconds while the benchmarks run."""

    every: float = 5.0
    samples: list[tuple[float, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._t0 = time.perf_counter()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.perf_counter() - self._t0, loadavg()[0]))
            self._stop.wait(self.every)

    def start(self) -> LoadMonitor:
        self._thread.start()
        return self

    def now(self) -> float:
        return time.perf_counter() - self._t0

    def window(self, start: float, end: float) -> dict:
        """Mean and max of the samples taken between ``start`` and ``end`` (seconds from the start)."""
        values = (
            [v for t, v in self.samples if start <= t <= end]
            or [v for t, v in self.samples if t <= end][-1:]
            or [float("nan")]
        )
        return {"mean": sum(values) / len(values), "max": max(values)}

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        values = [v for _, v in self.samples] or [float("nan")]
        return {"min": min(values), "mean": sum(values) / len(values), "max": max(values), "samples": len(values)}


def wait_for_quiet(threshold: float = 2.5, max_wait: float = 1200, poll: float = 30, say=print) -> tuple[bool, float]:
    """Wait (up to ``max_wait`` s) until the 1-minute load average is below ``threshold``."""
    start = time.perf_counter()
    while True:
        now = loadavg()[0]
        if now < threshold:
            return True, time.perf_counter() - start
        if time.perf_counter() - start >= max_wait:
            return False, time.perf_counter() - start
        say(f"load average {now:.2f} >= {threshold}: waiting ({time.perf_counter() - start:.0f}/{max_wait:.0f} s)")
        time.sleep(poll)


def load_average() -> str:
    """The machine's load averages over 1, 5 and 15 minutes, e.g. ``"0.5 / 1.2 / 2.0"``."""
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def notebook_records_parser(description: str, stage: str):
    """The options of a benchmark that runs ``stage``'s notebook (``run_notebook.py``) and records
    its figures, or reads the records of a run already made."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--threads", type=int, default=1, help="torch threads for the notebook (default 1)")
    parser.add_argument("--records", help=f"a run_notebook.py --json file of {stage} already made (not run again)")
    parser.add_argument("--load-before", help="with --records: the load average when that run began")
    parser.add_argument("--load-after", help="with --records: the load average when that run ended")
    return parser


def write_section(path, start: str, end: str, section: str) -> None:
    """Replace the text from ``start`` to ``end`` in the Markdown file ``path`` with ``section``
    (which holds both markers), or add it at the end of the file (a new file: the section alone)."""
    text = path.read_text() if path.exists() else ""
    if start in text:
        text = text[: text.index(start)] + section + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)
