"""How many CPU threads torch should use: the CPUs this process may really use.

torch starts one thread per core it counts, and every parallel region waits for all
of them. That is right on an idle machine and ruinous elsewhere: a thread that loses
its core to another process stalls every matrix product, so a 2-core machine with one
busy neighbour trains 5 to 60 times slower with 2 threads than with 1; and a container
limited to 2 CPUs by a cgroup quota still counts all of the host's cores (64, say).

The rule (:func:`thread_count`), in order:

1. an explicit count: the ``override`` argument (``gptcourse train --threads N``),
   else the environment variable ``GPTCOURSE_THREADS``, else ``OMP_NUM_THREADS``;
2. else the usable CPUs (:func:`usable_cpus`): the CPUs of the affinity mask, capped
   by the CPU quota of the process's cgroup (v1 or v2), rounded down, at least 1;
3. and no more than the CPUs of the mask that other processes leave free (the mask
   minus :func:`busy_cpus`, sampled over a tenth of a second, rounded to the nearest
   whole CPU), at least 1.

Step 3 looks at what the machine does now, once, when the threads are set: the
1-minute load average reacts too slowly (Linux updates it every 5 s with weight
1 - exp(-5/60), so a competitor started 5 s earlier adds 0.08), counts this process's own
recent work and, in a container, the whole host's; always leaving one CPU spare would
cost an idle 2-core machine its second thread (the ``one`` rows of
``benchmarks/RESULTS_threads.md``). A competitor that starts later is not seen: on a
machine shared that way, set ``GPTCOURSE_THREADS=1``.

A ``GPTCOURSE_THREADS`` that is not a positive integer is an error (``ValueError``): it
is this package's own setting, and a typo should not pass unnoticed. An invalid
``OMP_NUM_THREADS`` (a list such as ``4,2`` keeps its first entry) is ignored with a
warning: other programs read it too, in their own ways.

This module is self-contained (standard library and torch only) because the build
copies it verbatim into every student notebook.
"""

import math
import os
import time
import warnings
from collections.abc import Mapping

import torch

ENV_VAR = "GPTCOURSE_THREADS"
SAMPLE_SECONDS = 0.1  # how long busy_cpus watches the other processes

_configured: dict = {}  # what configure_threads decided, so that a second call changes nothing


def affinity_cpus() -> int:
    """The number of CPUs this process may run on (its affinity mask; all CPUs where there is none).

    >>> affinity_cpus() >= 1
    True
    """
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:  # missing, unreadable or not a file: no limit known there
        return None


def _unescape(path: str) -> str:
    """Undo mountinfo's octal escapes (a space is written ``\\040``)."""
    out, i = [], 0
    while i < len(path):
        if path[i] == "\\" and path[i + 1 : i + 4].isdigit() and len(path[i + 1 : i + 4]) == 3:
            out.append(chr(int(path[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(path[i])
            i += 1
    return "".join(out)


def _cgroup_dirs(root: str) -> list[tuple[str, str]]:
    """``(version, directory)`` of the CPU controller of this process's cgroups, innermost first.

    Reads ``/proc/self/cgroup`` (which cgroup) and ``/proc/self/mountinfo`` (where each
    hierarchy is mounted), so that it also works in containers whose hierarchy is
    mounted from the middle. Each directory is followed by its parents up to the mount
    point, because a quota on any of them limits this process.
    """
    cgroups = _read(os.path.join(root, "proc/self/cgroup"))
    mounts = _read(os.path.join(root, "proc/self/mountinfo"))
    if cgroups is None or mounts is None:
        return []
    wanted = {}  # version -> the process's cgroup path in that hierarchy
    for line in cgroups.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if hierarchy == "0" and controllers == "":
            wanted["v2"] = path
        elif "cpu" in controllers.split(","):
            wanted["v1"] = path
    found = []
    for line in mounts.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3:
            continue
        fstype, options = tail[0], tail[2].split(",")
        version = "v2" if fstype == "cgroup2" else "v1" if fstype == "cgroup" and "cpu" in options else None
        if version not in wanted:
            continue
        mount_root, mount_point = _unescape(fields[3]), _unescape(fields[4])
        path = wanted[version]
        inside = "/" if mount_root == "/" else mount_root.rstrip("/")
        rel = path[len(inside) :] if path == inside or path.startswith(inside.rstrip("/") + "/") else ""
        top = os.path.join(root, mount_point.lstrip("/"))
        parts = [p for p in rel.split("/") if p]
        for depth in range(len(parts), -1, -1):
            found.append((version, os.path.join(top, *parts[:depth])))
    return found


def _quota_of(version: str, directory: str) -> float | None:
    """The CPUs a cgroup directory's quota allows, or ``None`` for no quota (or no files)."""
    if version == "v2":
        text = _read(os.path.join(directory, "cpu.max"))
        fields = text.split() if text else []
        if len(fields) != 2 or fields[0] == "max":
            return None
        quota, period = fields
    else:
        quota, period = (_read(os.path.join(directory, name)) for name in ("cpu.cfs_quota_us", "cpu.cfs_period_us"))
        if quota is None or period is None:
            return None
    try:
        quota_us, period_us = int(quota), int(period)
    except ValueError:
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None


def cgroup_cpu_quota(root: str = "/") -> float | None:
    """The CPU quota of this process's cgroup (and its parents) in CPUs, ``None`` when unlimited.

    cgroup v2: ``cpu.max`` holds ``"<quota> <period>"`` or ``"max <period>"``; cgroup v1:
    ``cpu.cfs_quota_us`` (``-1`` when unlimited) over ``cpu.cfs_period_us``. Missing or
    unreadable files mean no quota. ``root`` is prepended to every path read (``/proc``
    and the cgroup mounts), so that tests can point it at a fake tree.

    >>> cgroup_cpu_quota(root="/no/such/place") is None
    True
    """
    quotas = [q for q in (_quota_of(v, d) for v, d in _cgroup_dirs(root)) if q is not None]
    return min(quotas) if quotas else None


def usable_cpus(root: str = "/", affinity: int | None = None) -> float:
    """The CPUs this process may really use: its affinity mask, capped by its cgroup's quota.

    Args:
        root: prepended to every file read (see :func:`cgroup_cpu_quota`).
        affinity: the size of the affinity mask (default: this process's, :func:`affinity_cpus`).

    A quota may be fractional (half a CPU is ``0.5``); the count of threads rounds down.

    >>> usable_cpus(root="/no/such/place", affinity=6)
    6.0
    """
    cpus = float(affinity if affinity is not None else affinity_cpus())
    quota = cgroup_cpu_quota(root)
    return min(cpus, quota) if quota is not None else cpus


def _cpu_times(root: str) -> dict[int, tuple[int, int]]:
    """Per CPU number: (busy, total) jiffies from ``/proc/stat``."""
    text = _read(os.path.join(root, "proc/stat")) or ""
    times = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or not name[3:].isdigit():
            continue
        values = [int(v) for v in rest.split()[:8]]
        idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle and waiting for I/O
        times[int(name[3:])] = (sum(values) - idle, sum(values))
    return times


def busy_cpus(seconds: float = SAMPLE_SECONDS, root: str = "/") -> float:
    """How many of this process's CPUs other processes keep busy, watched for ``seconds``.

    Reads ``/proc/stat`` before and after sleeping (this process does nothing meanwhile,
    so all the work seen is someone else's), over the CPUs of the affinity mask. ``0.0``
    where ``/proc/stat`` cannot be read (not Linux).

    >>> 0.0 <= busy_cpus(0.01) <= affinity_cpus()
    True
    """
    before = _cpu_times(root)
    if not before:
        return 0.0
    time.sleep(seconds)
    after = _cpu_times(root)
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(before)
    busy = 0.0
    for cpu in allowed & set(before) & set(after):
        work, total = after[cpu][0] - before[cpu][0], after[cpu][1] - before[cpu][1]
        if total > 0:
            busy += work / total
    return busy


def _explicit(environ: Mapping[str, str]) -> int | None:
    """The count asked for in ``GPTCOURSE_THREADS`` or ``OMP_NUM_THREADS``, if any."""
    text = environ.get(ENV_VAR, "").strip()
    if text:
        if not text.isdigit() or int(text) < 1:
            raise ValueError(f"{ENV_VAR}={text!r}: give a positive whole number of threads, or unset it")
        return int(text)
    text = environ.get("OMP_NUM_THREADS", "").strip()
    if text:
        first = text.split(",")[0].strip()
        if first.isdigit() and int(first) >= 1:
            return int(first)
        warnings.warn(
            f"OMP_NUM_THREADS={text!r} is not a positive number of threads; gptcourse ignores it", stacklevel=3
        )
    return None


def thread_count(
    override: int | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    root: str = "/",
    affinity: int | None = None,
    busy: float | None = None,
) -> int:
    """The number of threads the rule gives (see the module's docstring); changes nothing.

    Args:
        override: an explicit count (``--threads``); wins over everything else.
        environ: where ``GPTCOURSE_THREADS`` and ``OMP_NUM_THREADS`` are read (default: ``os.environ``).
        root, affinity: as for :func:`usable_cpus`.
        busy: CPUs other processes keep busy (default: measured by :func:`busy_cpus`).

    Raises:
        ValueError: for an override or a ``GPTCOURSE_THREADS`` that is not a positive integer.

    >>> thread_count(3)
    3
    >>> thread_count(environ={"GPTCOURSE_THREADS": "2"})
    2
    >>> thread_count(environ={}, root="/no/such/place", affinity=8, busy=0.1)
    8
    >>> thread_count(environ={}, root="/no/such/place", affinity=2, busy=0.9)
    1
    >>> thread_count(environ={}, root="/no/such/place", affinity=64, busy=40.0)
    24
    """
    if override is not None:
        if isinstance(override, bool) or not isinstance(override, int) or override < 1:
            raise ValueError(f"threads: give a positive whole number, got {override!r}")
        return override
    explicit = _explicit(os.environ if environ is None else environ)
    if explicit is not None:
        return explicit
    mask = affinity if affinity is not None else affinity_cpus()
    usable = max(1, math.floor(usable_cpus(root, mask)))
    if usable == 1:
        return 1
    others = busy_cpus(root=root) if busy is None else busy
    return max(1, min(usable, math.floor(mask - others + 0.5)))


def worker_count(environ: Mapping[str, str] | None = None, root: str = "/", affinity: int | None = None) -> int:
    """How many single-threaded grading processes to run at once: ``GPTCOURSE_THREADS``, else the usable CPUs.

    ``OMP_NUM_THREADS`` counts threads within one process, so it does not limit the
    workers, and busy neighbours are not subtracted: separate processes take turns on a
    core without waiting for each other, so extra workers cost little.

    >>> worker_count({"GPTCOURSE_THREADS": "3"})
    3
    >>> worker_count({}, root="/no/such/place", affinity=4)
    4
    """
    env = os.environ if environ is None else environ
    return thread_count(
        environ={ENV_VAR: env[ENV_VAR]} if env.get(ENV_VAR, "").strip() else {}, root=root, affinity=affinity, busy=0.0
    )


def configure_threads(override: int | None = None) -> int:
    """Set torch's threads by the rule (:func:`thread_count`) and return their number.

    Also sets torch's inter-op threads to the same number where torch still allows it
    (only before its first parallel work). Idempotent: a second call with the same
    ``override`` sets what the first one decided, without measuring again.

    >>> configure_threads(1)
    1
    >>> torch.get_num_threads()
    1
    """
    key = (override, os.environ.get(ENV_VAR), os.environ.get("OMP_NUM_THREADS"))
    if key not in _configured:
        _configured[key] = thread_count(override)
    count = _configured[key]
    torch.set_num_threads(count)
    if torch.get_num_interop_threads() != count:
        try:
            torch.set_num_interop_threads(count)
        except RuntimeError:  # torch allows it once, before its first parallel work: keep what it has
            pass
    return count
