"""The parent side of running a submission: start the child, watch it, restart past failures.

The child loads the notebook's cells and then runs the test probes, announcing each
step. If it hangs, crashes, exits or exhausts memory, the parent kills its whole
process tree and starts a fresh child that skips what failed: a cell that brought the
process down is left out (its names stay undefined), a test case that did so scores
0. Every other case still runs, so one bad question costs only its own points.
"""

import json
import os
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import codec, processes
from .harness import Case
from .notebook import code_cells, load_notebook_json

CHILD = Path(__file__).with_name("child.py")
EVENT_LIMIT = 64 * 1024 * 1024  # bytes of events one child may send
OUTPUT_LIMIT = 20_000  # characters of the student's own output that are kept


@dataclass
class Limits:
    """Time and resource limits of one submission's grading."""

    cell_timeout: float = 30.0
    case_timeout: float | None = None  # caps every test's own time limit (tests use it)
    total_timeout: float = 600.0
    startup_timeout: float = 120.0
    grace: float = 5.0
    memory_bytes: int = 6 * 1024**3
    cpu_seconds: int = 900
    file_bytes: int = 64 * 1024**2
    open_files: int = 256
    max_processes: int = 64


@dataclass
class Outcome:
    """What a submission's code did: a raw output or an error per case, and notes."""

    values: dict[str, object] = field(default_factory=dict)  # case key -> decoded output
    errors: dict[str, str] = field(default_factory=dict)  # case key -> what went wrong
    cell_errors: dict[int, str] = field(default_factory=dict)  # cell index -> message
    seconds: dict[str, float] = field(default_factory=dict)  # case key -> time measured here
    output: str = ""  # the student's own prints, capped
    fatal: str | None = None  # the submission could not be run at all


def _child_env(workdir: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "TQDM_DISABLE": "1",
    }
    return env


class ForkServer:
    """A process that has imported torch once and forks a fresh child per job (Linux).

    Starting Python and importing torch costs seconds; a fork costs milliseconds. The
    server runs no student code; if anything kills it, the next job starts a new one.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._workdir = tempfile.mkdtemp(prefix="gptcourse-forkserver-")

    def _start(self) -> None:
        parent, child = socket.socketpair()
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-B", str(CHILD), "--server", str(child.fileno())],
            stdin=subprocess.DEVNULL,
            cwd=self._workdir,
            env=_child_env(self._workdir),
            pass_fds=(child.fileno(),),
            start_new_session=True,
        )
        processes.register(self._proc.pid)
        child.close()
        self._sock = parent

    def launch(self, job: dict, out_fd: int, event_fd: int) -> int:
        """Start a job in a forked child; return its process id."""
        data = json.dumps(job).encode("utf-8")
        with self._lock:
            for attempt in range(2):
                if self._proc is None or self._proc.poll() is not None:
                    if self._proc is not None:
                        processes.unregister(self._proc.pid)
                    self._start()
                try:
                    socket.send_fds(self._sock, [len(data).to_bytes(8, "big")], [out_fd, event_fd])
                    self._sock.sendall(data)
                    reply = b""
                    while len(reply) < 8:
                        chunk = self._sock.recv(8 - len(reply))
                        if not chunk:
                            raise ConnectionError("the fork server closed its socket")
                        reply += chunk
                    return int.from_bytes(reply, "big")
                except OSError:
                    if attempt:
                        raise
                    self.stop()
        raise RuntimeError("unreachable")

    def stop(self) -> None:
        """Stop the server (it is restarted on the next job)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._proc is not None:
            processes.kill_tree(self._proc.pid)
            self._proc.wait()
            processes.unregister(self._proc.pid)
            self._proc = None


_server: ForkServer | None = None
_server_lock = threading.Lock()


def fork_server() -> ForkServer | None:
    """The process-wide fork server, or None where fork is not available or not safe."""
    global _server
    if not sys.platform.startswith("linux") or os.environ.get("GPTCOURSE_NO_FORKSERVER"):
        return None
    with _server_lock:
        if _server is None:
            _server = ForkServer()
        return _server


class _Child:
    """One child process, its event stream and its captured output."""

    def __init__(self, job: dict, workdir: str) -> None:
        read_fd, write_fd = os.pipe()
        out_read, out_write = os.pipe()
        server = fork_server()
        self.proc: subprocess.Popen | None = None
        try:
            if server is not None:
                env = _child_env(workdir)
                self.pid = server.launch(dict(job, workdir=workdir, env={k: env[k] for k in ("HOME", "TMPDIR")}), out_write, write_fd)
            else:
                self.proc = subprocess.Popen(
                    [sys.executable, "-I", "-B", str(CHILD)],
                    stdin=subprocess.PIPE,
                    stdout=out_write,
                    stderr=out_write,
                    cwd=workdir,
                    env=_child_env(workdir),
                    start_new_session=True,
                    pass_fds=(write_fd,),
                )
                self.pid = self.proc.pid
                processes.register(self.pid)
                assert self.proc.stdin is not None
                try:
                    self.proc.stdin.write(json.dumps(dict(job, event_fd=write_fd)).encode("utf-8"))
                    self.proc.stdin.close()
                except BrokenPipeError:
                    pass
        finally:
            os.close(write_fd)
            os.close(out_write)
        self.events = os.fdopen(read_fd, "rb", buffering=0)
        self.stdout = os.fdopen(out_read, "rb", buffering=0)
        os.set_blocking(self.events.fileno(), False)
        os.set_blocking(self.stdout.fileno(), False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.events, selectors.EVENT_READ, "events")
        self.selector.register(self.stdout, selectors.EVENT_READ, "stdout")
        self.buffer = b""
        self.event_bytes = 0
        self.output = bytearray()
        self.output_dropped = 0
        self.open_streams = 2

    def poll(self, timeout: float) -> list[dict] | None:
        """Events that arrived within ``timeout`` seconds; None once the child closed its stream."""
        events: list[dict] = []
        if self.open_streams == 0:
            return None
        for key, _ in self.selector.select(max(timeout, 0.0)):
            chunk = os.read(key.fileobj.fileno(), 65536)
            if not chunk:
                self.selector.unregister(key.fileobj)
                # the event stream closing means the child is gone, whatever stdout does
                self.open_streams = 0 if key.data == "events" else max(self.open_streams - 1, 0)
                continue
            if key.data == "stdout":
                room = OUTPUT_LIMIT * 4 - len(self.output)
                self.output.extend(chunk[: max(room, 0)])
                self.output_dropped += max(len(chunk) - max(room, 0), 0)
                continue
            self.event_bytes += len(chunk)
            if self.event_bytes > EVENT_LIMIT:
                raise _Overflow()
            self.buffer += chunk
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if isinstance(event, dict):
                    events.append(event)
        if self.open_streams == 0 and not events:
            return None
        return events

    def drain(self, seconds: float) -> None:
        """Read what is left of the child's output, for at most ``seconds``."""
        end = time.monotonic() + seconds
        while self.open_streams and time.monotonic() < end:
            if self.poll(end - time.monotonic()) is None:
                break

    def finish(self) -> str:
        """Kill the child's whole tree, reap it and return its captured output."""
        processes.kill_tree(self.pid)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            processes.unregister(self.pid)
        else:
            processes.wait_gone(self.pid)
        self.selector.close()
        for stream in (self.events, self.stdout):
            try:
                stream.close()
            except OSError:
                pass
        text = self.output.decode("utf-8", "replace")
        if self.output_dropped or len(text) > OUTPUT_LIMIT:
            text = text[:OUTPUT_LIMIT] + f"\n[... output cut: the submission printed more than {OUTPUT_LIMIT} characters]"
        return text


class _Overflow(Exception):
    """The child sent more event data than any honest submission needs."""


def case_limit(case: Case, limits: Limits) -> float:
    """The time a test case may take: its own limit, capped by ``limits.case_timeout``."""
    return min(case.timeout, limits.case_timeout) if limits.case_timeout else case.timeout


def run_submission(path: Path, suite_files: list[Path], cases: list[Case], limits: Limits) -> Outcome:
    """Run ``cases`` on the notebook at ``path`` in child processes and collect raw outputs."""
    outcome = Outcome()
    try:
        notebook = load_notebook_json(path)
        cells = [{"index": c.index, "source": c.source} for c in code_cells(notebook)]
    except ValueError as exc:
        outcome.fatal = str(exc)
        for case in cases:
            outcome.errors[case.key] = "the submission could not be read"
        return outcome

    by_key = {c.key: c for c in cases}
    skip_cells: set[int] = set()
    outputs: list[str] = []
    deadline = time.monotonic() + limits.total_timeout
    with tempfile.TemporaryDirectory(prefix="gptcourse-run-") as workdir:
        while True:
            remaining = [c.key for c in cases if c.key not in outcome.values and c.key not in outcome.errors]
            if not remaining:
                break
            if time.monotonic() >= deadline:
                for key in remaining:
                    outcome.errors[key] = f"not run: the submission used up its {limits.total_timeout:g} s in all"
                break
            job = {
                "suite_files": [str(p) for p in suite_files],
                "cases": remaining,
                "cells": cells,
                "skip_cells": sorted(skip_cells),
                "cell_timeout": limits.cell_timeout,
                "case_timeout": limits.case_timeout,
                "memory_bytes": limits.memory_bytes,
                "cpu_seconds": limits.cpu_seconds,
                "file_bytes": limits.file_bytes,
                "open_files": limits.open_files,
                "max_processes": limits.max_processes,
            }
            progress = _watch(_Child(job, workdir), by_key, remaining, limits, deadline, outcome, outputs)
            if progress == "done":
                break
            kind, what = progress
            if kind == "cell":
                skip_cells.add(what)
            elif kind == "startup":
                outcome.fatal = what
                for key in remaining:
                    outcome.errors.setdefault(key, "not run: " + what)
                break
    outcome.output = "\n".join(o for o in outputs if o)[: OUTPUT_LIMIT + 200]
    processes.reap_strays()
    return outcome


def _watch(
    child: _Child,
    by_key: dict[str, Case],
    order: list[str],
    limits: Limits,
    deadline: float,
    outcome: Outcome,
    outputs: list[str],
):
    """Follow one child until it finishes or fails; say what to skip in the next one.

    A failure between steps is blamed on the cell that ran last (something it started
    in the background), or, once the tests have begun, on the next test to run, so
    that every restart makes progress.
    """
    phase: tuple[str, object] = ("startup", None)
    last_cell: int | None = None
    case_started = time.monotonic()
    phase_deadline = time.monotonic() + limits.startup_timeout
    reason = None
    try:
        while True:
            now = time.monotonic()
            limit = min(phase_deadline, deadline)
            if now >= limit:
                reason = "timeout"
                break
            events = child.poll(min(limit - now, 1.0))
            if events is None:
                reason = "exit"
                break
            for event in events:
                kind = event.get("ev")
                if kind == "ready":
                    phase, phase_deadline = ("between", None), time.monotonic() + limits.startup_timeout
                elif kind == "cell" and isinstance(event.get("index"), int):
                    phase = ("cell", event["index"])
                    phase_deadline = time.monotonic() + limits.cell_timeout + limits.grace
                elif kind == "cell_done" and isinstance(event.get("index"), int):
                    last_cell = event["index"]
                    if event.get("error"):
                        outcome.cell_errors[event["index"]] = str(event["error"])[:500]
                    phase, phase_deadline = ("between", None), time.monotonic() + limits.startup_timeout
                elif kind == "case" and event.get("key") in by_key:
                    last_cell = None
                    phase = ("case", event["key"])
                    case_started = time.monotonic()
                    phase_deadline = time.monotonic() + case_limit(by_key[event["key"]], limits) + limits.grace
                elif kind == "result" and event.get("key") in by_key:
                    if phase == ("case", event["key"]):
                        outcome.seconds.setdefault(event["key"], time.monotonic() - case_started)
                    _record(event, outcome)
                    phase, phase_deadline = ("between", None), time.monotonic() + limits.startup_timeout
                elif kind == "done":
                    child.drain(1.0)
                    outputs.append(child.finish())
                    return "done"
    except _Overflow:
        reason = "overflow"
    outputs.append(child.finish())
    what = {
        "timeout": "did not finish in time and was stopped",
        "overflow": "sent far more data than expected and was stopped",
        "exit": "ended the process running it (sys.exit, os._exit, a crash or running out of memory)",
    }[reason]
    kind, where = phase
    if kind == "case":
        outcome.errors.setdefault(where, f"this test {what}")
        return ("case", where)
    if kind == "cell":
        outcome.cell_errors[where] = f"this cell {what}; it was skipped"
        return ("cell", where)
    if kind == "between" and last_cell is not None:
        outcome.cell_errors[last_cell] = f"something this cell started {what}; the cell was skipped"
        return ("cell", last_cell)
    if kind == "between":
        pending = [k for k in order if k not in outcome.values and k not in outcome.errors]
        if pending:
            outcome.errors[pending[0]] = f"the process running your code {what} before this test began"
            return ("case", pending[0])
        return "done"
    return ("startup", f"the grading process could not start ({what}); output: {child.output[:300].decode('utf-8', 'replace')}")


def _record(event: dict, outcome: Outcome) -> None:
    key = event["key"]
    if key in outcome.values or key in outcome.errors:
        return  # the first report of a case counts; later ones are ignored
    if "error" in event:
        outcome.errors[key] = str(event["error"])[:1000]
        return
    try:
        outcome.values[key] = codec.decode(event.get("value"))
    except (codec.DecodeError, RecursionError) as exc:
        outcome.errors[key] = f"the output could not be read back ({exc})"
