"""The limits the grader runs under: the container's memory and CPU (cgroups v1 and v2), and
the whole-submission time budget that leaves room to write results before the platform's
own timeout.

Gradescope runs each submission in a container with a memory limit (768 MB by default),
a CPU share (half a vCPU by default) and a timeout (10 minutes by default, up to 40). The
timeout is not visible from inside; the memory and CPU limits are, as cgroup files
(``memory.max`` and ``cpu.max`` under cgroup v2; ``memory.limit_in_bytes`` and
``cpu.cfs_quota_us``/``cpu.cfs_period_us`` under v1), at the process's own cgroup or any
cgroup above it, the tightest counting. Standard library only (shipped in the zip).
"""

import os
from dataclasses import dataclass
from pathlib import Path

UNLIMITED = 1 << 60  # cgroup v1 writes a huge number for "no limit"
RESERVE = 75.0  # seconds kept from the platform's timeout: starting, judging and writing results


@dataclass(frozen=True)
class ContainerLimits:
    """Memory (bytes) and CPUs this process may use; None where nothing limits them."""

    memory_bytes: int | None = None
    cpus: float | None = None

    def describe(self) -> str:
        """A short line for logs.

        >>> ContainerLimits(768 * 2**20, 0.5).describe()
        '768 MB memory, 0.5 CPU'
        >>> ContainerLimits().describe()
        'no memory limit, no CPU limit'
        """
        memory = f"{self.memory_bytes / 2**20:g} MB memory" if self.memory_bytes else "no memory limit"
        cpus = f"{self.cpus:g} CPU" if self.cpus else "no CPU limit"
        return f"{memory}, {cpus}"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _mounts(mountinfo: str) -> dict[str, Path]:
    """Mount points of the cgroup hierarchies: ``{"": v2 root, "memory": v1 root, "cpu": ...}``."""
    found: dict[str, Path] = {}
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        if tail[0] == "cgroup2":
            found.setdefault("", Path(fields[4]))
        elif tail[0] == "cgroup":
            for option in tail[2].split(","):
                if option in ("memory", "cpu"):
                    found.setdefault(option, Path(fields[4]))
    return found


def _own_paths(proc_cgroup: str) -> dict[str, str]:
    """This process's cgroup path per hierarchy: ``{"": v2 path, "memory": ..., "cpu": ...}``."""
    paths: dict[str, str] = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            if controller in ("", "memory", "cpu"):
                paths.setdefault(controller, parts[2])
    return paths


def _candidates(mount: Path, own: str) -> list[Path]:
    """The process's cgroup folder and every folder above it up to the mount (and the mount itself,
    which is the container's own cgroup where the path seen from inside names the host's)."""
    folder = mount / own.lstrip("/")
    found = [mount]
    while True:
        if folder != mount and folder.is_dir():
            found.append(folder)
        if folder == mount or mount not in folder.parents:
            break
        folder = folder.parent
    return found


def _memory(folders_v2: list[Path], folders_v1: list[Path]) -> int | None:
    values = []
    for folder in folders_v2:
        text = _read(folder / "memory.max")
        if text and text != "max" and text.isdigit():
            values.append(int(text))
    for folder in folders_v1:
        text = _read(folder / "memory.limit_in_bytes")
        if text and text.isdigit() and int(text) < UNLIMITED:
            values.append(int(text))
    return min(values) if values else None


def _cpus(folders_v2: list[Path], folders_v1: list[Path]) -> float | None:
    values = []
    for folder in folders_v2:
        text = _read(folder / "cpu.max")
        if text:
            quota, _, period = text.partition(" ")
            if quota.isdigit() and period.isdigit() and int(period):
                values.append(int(quota) / int(period))
    for folder in folders_v1:
        quota, period = _read(folder / "cpu.cfs_quota_us"), _read(folder / "cpu.cfs_period_us")
        if quota and period and quota.isdigit() and period.isdigit() and int(period):
            values.append(int(quota) / int(period))
    return min(values) if values else None


def container_limits(proc: Path = Path("/proc/self")) -> ContainerLimits:
    """The memory and CPU limits of the cgroups this process runs in (Linux; none elsewhere)."""
    mountinfo, own = _read(proc / "mountinfo"), _read(proc / "cgroup")
    if not mountinfo or not own:
        return ContainerLimits()
    mounts, paths = _mounts(mountinfo), _own_paths(own)
    v2 = _candidates(mounts[""], paths.get("", "/")) if "" in mounts else []
    memory_v1 = _candidates(mounts["memory"], paths.get("memory", "/")) if "memory" in mounts else []
    cpu_v1 = _candidates(mounts["cpu"], paths.get("cpu", "/")) if "cpu" in mounts else []
    return ContainerLimits(_memory(v2, memory_v1), _cpus(v2, cpu_v1))


def grading_budget(platform_timeout: float, elapsed: float = 0.0, reserve: float = RESERVE) -> float:
    """Seconds a submission's code may run in all, so that results are written before the
    platform's timeout: the timeout less the time already spent and ``reserve``.

    >>> grading_budget(600)
    525.0
    >>> grading_budget(600, elapsed=30)
    495.0
    """
    budget = platform_timeout - elapsed - reserve
    if budget <= 0:
        raise ValueError(
            f"a timeout of {platform_timeout:g} s leaves no time to grade (after "
            f"{elapsed:.0f} s spent and {reserve:g} s kept)"
        )
    return budget


def process_seconds(pid: int | str = "self") -> float:
    """Seconds since this process (or process ``pid``) started (Linux), 0 where unknown: the entry
    point's own start-up counts against the budget."""
    try:
        ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))
