"""Trying a Gradescope zip on this machine, as Gradescope runs it: ``gptcourse gradescope-run ZIP NOTEBOOK``.

Lays out a folder like Gradescope's ``/autograder`` (``source/`` the unpacked zip,
``submission/`` the notebook, ``submission_metadata.json``, ``results/``), runs the zip's
own ``run_autograder`` with this Python in place of the image's, and returns
``results/results.json``. An otter zip (``release/otter/<stage>.zip``: it holds
``otter_config.json``) is run as Gradescope and each container of ``otter grade`` run it:
its ``run_autograder`` activates otter's environment and runs ``run_otter.py``, whose one
statement, ``otter.run.run_autograder.main("/autograder")``, runs here with this Python,
the root in place of ``/autograder`` and Python's path as the image has it
(``otter_command``). With ``gradescope_limits`` (root, Linux) it runs inside a cgroup
of Gradescope's default limits: 768 MB of memory (no swap) and half a CPU; where no
cgroup can be made it falls back on ``ulimit -d`` (768 MB of data per process) and
``taskset`` (one CPU), weaker stand-ins, and says so (``Tryout.confined`` tells which).
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from autograder.channels.otter import SUPPORT as OTTER_SUPPORT

MEMORY_BYTES = 768 * 2**20  # Gradescope's default memory limit
CPU_QUOTA = 0.5  # Gradescope's default CPU share
PERIOD_US = 100_000


def make_root(autograder_zip: Path, folder: Path, notebook: Path | None = None, metadata: dict | None = None) -> Path:
    """A folder laid out like Gradescope's /autograder, with the zip unpacked in ``source/``."""
    root = Path(folder) / "autograder"
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extractall(root / "source")
    for name in ("run_autograder", "setup.sh"):
        os.chmod(root / "source" / name, 0o755)
    (root / "submission").mkdir(parents=True)
    (root / "results").mkdir()
    (root / "submission_metadata.json").write_text(json.dumps(metadata or {"previous_submissions": []}))
    if notebook is not None:
        shutil.copy(notebook, root / "submission" / Path(notebook).name)
    return root


class Cgroup:
    """A memory and a CPU cgroup (v1 or v2) made below this process's own, removed on ``close``.

    Raises ``OSError`` (with the reason) where they cannot be made: not root, no writable
    cgroup hierarchy with the memory and cpu controllers.
    """

    def __init__(self, memory_bytes: int = MEMORY_BYTES, cpus: float = CPU_QUOTA) -> None:
        self.folders: list[Path] = []
        self.peak_file: Path | None = None
        own = _own_cgroups()
        name = f"gptcourse-tryout-{os.getpid()}-{time.monotonic_ns()}"
        try:
            if "memory" in own and "cpu" in own:  # cgroup v1
                memory, cpu = own["memory"] / name, own["cpu"] / name
                memory.mkdir()
                self.folders.append(memory)
                cpu.mkdir()
                self.folders.append(cpu)
                (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
                if (memory / "memory.memsw.limit_in_bytes").exists():
                    (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
                (cpu / "cpu.cfs_period_us").write_text(str(PERIOD_US))
                (cpu / "cpu.cfs_quota_us").write_text(str(int(cpus * PERIOD_US)))
                self.peak_file = memory / "memory.max_usage_in_bytes"
                self.how = (
                    f"cgroup v1 ({memory} and {cpu}): memory.limit_in_bytes {memory_bytes}, "
                    f"cpu.cfs_quota_us {int(cpus * PERIOD_US)}/{PERIOD_US}"
                )
            elif "" in own:  # cgroup v2
                folder = own[""] / name
                folder.mkdir()
                self.folders.append(folder)
                (folder / "memory.max").write_text(str(memory_bytes))
                if (folder / "memory.swap.max").exists():
                    (folder / "memory.swap.max").write_text("0")
                (folder / "cpu.max").write_text(f"{int(cpus * PERIOD_US)} {PERIOD_US}")
                self.peak_file = folder / "memory.peak"
                self.how = (
                    f"cgroup v2 ({folder}): memory.max {memory_bytes}, cpu.max {int(cpus * PERIOD_US)} {PERIOD_US}"
                )
            else:
                raise OSError("no cgroup hierarchy with the memory and cpu controllers is mounted")
        except OSError:
            self.close()
            raise

    def enter_command(self) -> str:
        """Shell words that move the shell running them into these cgroups."""
        return "; ".join(f"echo $$ > {folder / 'cgroup.procs'}" for folder in self.folders)

    def peak_bytes(self) -> int | None:
        """The most memory the cgroup held (page cache included), where the kernel says."""
        try:
            return int(self.peak_file.read_text()) if self.peak_file else None
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        for folder in reversed(self.folders):
            for _ in range(100):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # processes still leaving
                    time.sleep(0.1)
        self.folders = []


def _own_cgroups() -> dict[str, Path]:
    """This process's writable cgroup folders: ``{"memory": ..., "cpu": ...}`` (v1) or ``{"": ...}`` (v2)."""
    if os.geteuid() != 0:
        raise OSError("making cgroups needs root")
    mounts: dict[str, Path] = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(tail) >= 3 and tail[0] == "cgroup2":
            mounts.setdefault("", Path(fields[4]))
        elif len(tail) >= 3 and tail[0] == "cgroup":
            for option in tail[2].split(","):
                if option in ("memory", "cpu"):
                    mounts.setdefault(option, Path(fields[4]))
    own: dict[str, Path] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            if controller in mounts and controller in ("memory", "cpu", ""):
                folder = mounts[controller] / path.lstrip("/")
                if folder.is_dir() and os.access(folder, os.W_OK):
                    own[controller] = folder
    if "" in own and not ({"memory", "cpu"} <= set(own)):
        controllers = (
            (own[""] / "cgroup.controllers").read_text().split() if (own[""] / "cgroup.controllers").exists() else []
        )
        if not {"memory", "cpu"} <= set(controllers):
            raise OSError(f"the cgroup v2 folder {own['']} does not offer the memory and cpu controllers")
        return {"": own[""]}
    return {k: v for k, v in own.items() if k in ("memory", "cpu")}


@dataclass
class Tryout:
    """One run of a zip's ``run_autograder``."""

    results: dict
    returncode: int
    seconds: float  # wall-clock time of run_autograder
    stdout: str
    stderr: str
    confined: str  # how it was confined: a cgroup's description, or why it was not
    peak_memory: int | None = None  # bytes, where the cgroup says


def run_zip(
    autograder_zip: Path,
    notebook: Path,
    gradescope_limits: bool = False,
    python: str = sys.executable,
    timeout: float = 3600.0,
) -> Tryout:
    """Grade ``notebook`` with the zip's ``run_autograder`` in a fresh Gradescope-like root."""
    with tempfile.TemporaryDirectory(prefix="gptcourse-tryout-") as tmp:
        root = make_root(autograder_zip, Path(tmp), notebook)
        return run_root(root, gradescope_limits, python, timeout)


def is_otter_root(root: Path) -> bool:
    """Whether ``root/source`` holds an otter autograder (otter's ``otter_config.json``)."""
    return (Path(root) / "source" / "otter_config.json").is_file()


def otter_command(root: Path, python: str = sys.executable) -> str:
    """The shell command that runs an otter zip's ``run_otter.py`` on ``root`` as otter's image runs it.

    Python's path: ``run_otter.py``'s folder first (``source/``), the site's packages, then
    ``source/files/gptcourse``, which the zip's ``setup.sh`` adds with a ``.pth`` file;
    ``-P`` keeps the working folder off it, as running a script does.
    """
    source = Path(root) / "source"
    code = (
        f"import sys; sys.path.insert(0, {str(source)!r}); sys.path.append({str(source / OTTER_SUPPORT)!r}); "
        f"from otter.run.run_autograder import main; main({str(root)!r})"
    )
    return f"cd {shlex.quote(str(root))} && exec {shlex.quote(python)} -P -c {shlex.quote(code)}"


def run_root(
    root: Path, gradescope_limits: bool = False, python: str = sys.executable, timeout: float = 3600.0
) -> Tryout:
    """Run the zip in ``root/source`` on ``root`` (see ``make_root``), confined if asked: its own
    ``run_autograder``, or for an otter zip ``run_otter.py``'s statement (``otter_command``)."""
    env = dict(os.environ, GRADESCOPE_ROOT=str(root), GPTCOURSE_PYTHON=python)
    command = otter_command(root, python) if is_otter_root(root) else f'exec "{root / "source" / "run_autograder"}"'
    cgroup, confined = None, "unconfined"
    if gradescope_limits:
        try:
            cgroup = Cgroup()
            command = f"{cgroup.enter_command()}; {command}"
            confined = cgroup.how
        except OSError as exc:
            command = f"ulimit -d {MEMORY_BYTES // 1024}; exec taskset -c 0 bash -c {shlex.quote(command)}"
            confined = (
                f"ulimit -d {MEMORY_BYTES // 1024} (768 MB of data per process, not in all) and taskset -c 0 "
                f"(one whole CPU, not half): no cgroup could be made ({exc})"
            )
    try:
        start = time.monotonic()
        done = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=timeout)
        seconds = time.monotonic() - start
        peak = cgroup.peak_bytes() if cgroup else None
    finally:
        if cgroup is not None:
            cgroup.close()
    try:
        results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        results = {}
    return Tryout(results, done.returncode, seconds, done.stdout, done.stderr, confined, peak)
