"""The parent side of running a submission: start the child, watch it, restart past failures.

The child loads the notebook's cells and then runs the test probes, announcing each
step. If it hangs, crashes, exits or exhausts memory, the parent kills its whole
process tree and starts a fresh child that skips what failed: a cell that brought the
process down is left out (its names stay undefined), a test case that did so scores
0. Every other case still runs, so one bad question costs only its own points.

The parent follows the child's events against the script it expects (ready, each cell,
each case in order, done) and ignores anything out of turn, so that a forged event
can neither stall grading nor move blame. It sends the hidden tests only when the
script reaches the first of them (see ``child``), and keeps at most
``Limits.output_bytes`` of the child's printing: a child that prints more is stopped
like one that hangs (its output is read and dropped as it comes, never buffered).
"""

import atexit
import json
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder.kit.cases import Case
from autograder.kit.runtime import calibrate

from . import codec, processes, sandbox
from .submission import SubmissionError, code_cells, load_notebook_json, notebook_stage
from .suites import StageTests, SuiteFile

CHILD = Path(__file__).with_name("child.py")
EVENT_LIMIT = 64 * 1024 * 1024  # bytes of events one child may send
OUTPUT_LIMIT = 20_000  # characters of the student's own output that are kept
# -s: no user site-packages; -P: no script folder on sys.path; -B: no bytecode files. Not -I:
# it implies -E, which would ignore PYTHONHASHSEED, and the child's set order must not vary
# from one grading to the next (its environment is built from scratch, see _child_env).
PYTHON_FLAGS = ("-s", "-P", "-B")
ERROR_LIMIT = 1000  # characters of an error the child reports for a cell or a test (the judge bounds it again)


@dataclass
class Limits:
    """Time and resource limits of one submission's grading."""

    cell_timeout: float = 30.0
    case_timeout: float | None = None  # caps every test's own time limit (tests use it)
    total_timeout: float = 600.0  # the whole submission: cells, tests, restarts (see ``container.grading_budget``)
    strike_fraction: float = (
        0.2  # once a test of a question runs out of time, that question's later tests get this share of their limit
    )
    # after this many tests of a question had to be killed (the code caught the time-out), its other tests are not run
    unstoppable_tests: int = 2
    startup_timeout: float = 120.0
    grace: float = 5.0
    memory_bytes: int = 6 * 1024**3
    cpu_seconds: int = 900
    file_bytes: int = 64 * 1024**2
    open_files: int = 256
    max_processes: int = 64
    output_bytes: int = 16 * 1024**2  # a cell or test printing past this is stopped and skipped
    disk_bytes: int = 256 * 1024**2  # the child's private working directory (a tmpfs)
    sandbox: str | None = None  # the strongest isolation to try (see sandbox.LEVELS); None: $GPTCOURSE_SANDBOX or all


@dataclass
class Outcome:
    """What a submission's code did: a raw output or an error per case, and notes."""

    values: dict[str, object] = field(default_factory=dict)  # case key -> decoded output
    errors: dict[str, str] = field(default_factory=dict)  # case key -> what went wrong
    cell_errors: dict[int, str] = field(default_factory=dict)  # cell index -> what went wrong ("raised ...")
    cell_labels: dict[int, str] = field(
        default_factory=dict
    )  # cell index -> how the student names it ("code cell 5 (In [12])")
    left_out: dict[int, tuple[str, ...]] = field(
        default_factory=dict
    )  # cell index -> what of its IPython syntax did not run
    seconds: dict[str, float] = field(default_factory=dict)  # case key -> time measured here
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # timed case key -> the child's CPU time
    # the calibration workload's CPU seconds, measured here while the child waited for its first
    # timed test: the unit of the tests' CPU budgets, and what judges every timed test (judge.judge)
    calibration: float | None = None
    output: str = ""  # the student's own prints, capped
    fatal: str | None = None  # the submission could not be run at all
    wrong_stage: tuple[str, str] | None = None  # (the stage its metadata names, the stage graded) when they differ
    isolation: dict = field(default_factory=dict)  # how the last child was confined (sandbox.enter)
    code: str = ""  # the submission's own code cells, joined: never redacted from its messages (judge.scrub)
    # run_submission(trace=True) only (authoring.reuse): the notebook's functions that ran, as
    # (cell file, qualified name), while the cells ran (RAN_IN_CELLS) and while each case ran (its key);
    # ``traced`` stays True only while every report of the child's tracer arrived intact
    traced: bool = False
    ran: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    # a child failed (was killed, crashed or exited) or a test ran out of time: later tests may
    # have run with shorter limits, or not at all
    interrupted: bool = False


RAN_IN_CELLS = "(cells)"  # the key of Outcome.ran for what ran while the notebook's cells ran


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


def _message(doc: dict) -> bytes:
    data = json.dumps(doc).encode("utf-8")
    return len(data).to_bytes(8, "big") + data


class _Feeder:
    """Writes messages to the child's control pipe from a thread (a child that never reads
    cannot block the parent); stops when the child is gone."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._queue: list[bytes | None] = []
        self._ready = threading.Condition()
        threading.Thread(target=self._run, daemon=True).start()

    def send(self, data: bytes) -> None:
        with self._ready:
            self._queue.append(data)
            self._ready.notify()

    def close(self) -> None:
        self.send(None)

    def _run(self) -> None:
        try:
            while True:
                with self._ready:
                    while not self._queue:
                        self._ready.wait()
                    data = self._queue.pop(0)
                if data is None:
                    break
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view) :]
        except OSError:
            pass
        finally:
            os.close(self._fd)


class ForkServer:
    """A process that has imported torch once and forks a fresh child per job (Linux).

    Starting Python and importing torch costs seconds; a fork costs milliseconds. The
    server runs no student code and never sees a submission: it receives only a working
    directory, an environment and the child's pipes. If anything kills it, the next
    job starts a new one. Its working directory is removed when the grading process
    exits, and by the server itself when it sees the grading process gone (a grading
    process killed runs no ``atexit``). ``modules`` are imported by the server on top of
    what every job needs (``child.TRAINING`` for jobs whose tests train).
    """

    def __init__(self, modules: tuple[str, ...] = ()) -> None:
        self.modules = tuple(modules)
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._workdir = tempfile.mkdtemp(prefix="gptcourse-forkserver-")
        atexit.register(self.close)

    def _start(self) -> None:
        parent, child = socket.socketpair()
        os.makedirs(self._workdir, exist_ok=True)  # a server that stopped on its own removed it
        self._proc = subprocess.Popen(
            [sys.executable, *PYTHON_FLAGS, str(CHILD), "--server", str(child.fileno()), self._workdir, *self.modules],
            stdin=subprocess.DEVNULL,
            cwd=self._workdir,
            env=_child_env(self._workdir),
            pass_fds=(child.fileno(),),
            start_new_session=True,
        )
        processes.register(self._proc.pid)
        child.close()
        self._sock = parent

    def launch(self, request: dict, fds: list[int]) -> int:
        """Fork a child for ``request`` (workdir, env) with ``fds`` (output, events, control); return its pid."""
        data = json.dumps(request).encode("utf-8")
        with self._lock:
            for attempt in range(2):
                if self._proc is None or self._proc.poll() is not None:
                    if self._proc is not None:
                        processes.unregister(self._proc.pid)
                    self._start()
                try:
                    socket.send_fds(self._sock, [len(data).to_bytes(8, "big")], fds)
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

    def close(self) -> None:
        """Stop the server and remove its working directory (when the grading process exits)."""
        self.stop()
        shutil.rmtree(self._workdir, ignore_errors=True)


_servers: dict[tuple[str, ...], ForkServer] = {}
_server_lock = threading.Lock()
TRAINING = ("torch._dynamo",)  # what the first optimiser step imports (seconds; see child.LAZY)


def server_modules(preload: list[str]) -> tuple[str, ...]:
    """What the fork server of a job importing ``preload`` holds beyond the common modules:
    ``TRAINING`` where the tests train (they import ``torch.optim``), else nothing.

    >>> server_modules(["torch", "torch.optim"]), server_modules(["torch"])
    (('torch._dynamo',), ())
    """
    return TRAINING if any(name.startswith("torch.optim") for name in preload) else ()


def fork_server(modules: tuple[str, ...] = ()) -> ForkServer | None:
    """The process-wide fork server holding ``modules``, or None where fork is not available or not safe.

    A server holding more modules makes every fork slower (torch._dynamo: 12 % measured), so
    jobs whose tests train have a server of their own and the others fork from a lighter one.
    """
    if not sys.platform.startswith("linux") or os.environ.get("GPTCOURSE_NO_FORKSERVER"):
        return None
    with _server_lock:
        if modules not in _servers:
            _servers[modules] = ForkServer(modules)
        return _servers[modules]


class _Child:
    """One child process, its event stream, its control pipe and its captured output."""

    def __init__(self, job: dict, workdir: str, output_bytes: int) -> None:
        read_fd, write_fd = os.pipe()
        out_read, out_write = os.pipe()
        control_read, control_write = os.pipe()
        server = fork_server(server_modules(job.get("preload", [])))
        self.proc: subprocess.Popen | None = None
        try:
            if server is not None:
                env = _child_env(workdir)
                self.pid = server.launch({"workdir": workdir, "env": env}, [out_write, write_fd, control_read])
            else:
                self.proc = subprocess.Popen(
                    [sys.executable, *PYTHON_FLAGS, str(CHILD), "--job", str(write_fd), str(control_read)],
                    stdin=subprocess.DEVNULL,
                    stdout=out_write,
                    stderr=out_write,
                    cwd=workdir,
                    env=_child_env(workdir),
                    start_new_session=True,
                    pass_fds=(write_fd, control_read),
                )
                self.pid = self.proc.pid
                processes.register(self.pid)
        except BaseException:
            os.close(control_write)
            raise
        finally:
            for fd in (write_fd, out_write, control_read):
                os.close(fd)
        self.control = _Feeder(control_write)
        self.control.send(_message(job))
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
        self.output_bytes = output_bytes
        self.output_seen = 0
        self.output_cut = False
        self.open_streams = 2
        self.uid: int | None = None  # the child's private user, once it says so

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
                self._keep_output(chunk)
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

    def _keep_output(self, chunk: bytes) -> None:
        room = OUTPUT_LIMIT * 4 - len(self.output)
        self.output.extend(chunk[: max(room, 0)])
        self.output_seen += len(chunk)
        if self.output_seen > self.output_bytes:
            self.output_cut = True
            raise _Flood()

    def drain(self, seconds: float) -> None:
        """Read what is left of the child's output, for at most ``seconds``."""
        end = time.monotonic() + seconds
        while self.open_streams and time.monotonic() < end:
            if self.poll(end - time.monotonic()) is None:
                break

    def private_uid(self) -> int | None:
        """The child's private user, as it said (``ready``) and only if it is the one made for it."""
        return self.uid if self.uid is not None and self.uid == sandbox.child_uid(self.pid) else None

    def finish(self) -> str:
        """Kill the child and everything it started, reap it and return its captured output."""
        processes.kill_tree(self.pid)
        if self.private_uid() is not None:
            processes.kill_user(self.uid)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            processes.unregister(self.pid)
        else:
            processes.wait_gone(self.pid)
        self.control.close()
        self.selector.close()
        for stream in (self.events, self.stdout):
            try:
                stream.close()
            except OSError:
                pass
        text = self.output.decode("utf-8", "replace")
        if self.output_cut or len(text) > OUTPUT_LIMIT:
            text = text[:OUTPUT_LIMIT] + f"\n[... output cut: the submission printed {self.output_seen} bytes or more]"
        return text


class _Overflow(Exception):
    """The child sent more event data than any honest submission needs."""


class _Flood(Exception):
    """The child printed more than ``Limits.output_bytes``: it is stopped like a hang."""


def case_limit(case: Case, limits: Limits, struck: set[str] | frozenset[str] = frozenset()) -> float:
    """The time a test case may take: its own limit, capped by ``limits.case_timeout``, and cut
    to ``limits.strike_fraction`` of that when a test of its question already ran out of time."""
    limit = min(case.timeout, limits.case_timeout) if limits.case_timeout else case.timeout
    return limit * limits.strike_fraction if case.qid in struck else limit


class _Strikes:
    """What running out of time taught about each question, kept across child restarts.

    A question ``struck`` had a test run out of time: a function that hung once is likely
    to hang again, so its later tests get a shorter limit (the child applies the same rule
    on its side). ``kills`` counts the tests of a question whose code ignored the time-out
    and had to be killed with its process: each costs a restart, so after
    ``Limits.unstoppable_tests`` of them the question's other tests are not run.
    """

    def __init__(self) -> None:
        self.struck: set[str] = set()
        self.kills: dict[str, int] = {}


TIMED_OUT = "did not finish within"  # how the child reports a test it stopped at its limit


def run_submission(
    path: Path, tests: StageTests, limits: Limits, keys: list[str] | None = None, trace: bool = False
) -> Outcome:
    """Run the cases of ``tests`` (those named in ``keys``, else all) on the notebook at ``path``
    in child processes and collect their raw outputs; with ``trace``, note which of the
    notebook's functions each case ran (``Outcome.ran``; for authoring, never for a student).

    Each child runs what is left: the cells not yet found to bring a process down, the
    cases not yet answered. A child that fails is blamed on its current step (``_watch``)
    and the next one skips it, until every case is answered or the time is up.
    """
    cases = [c for c in tests.cases if keys is None or c.key in keys]
    outcome = Outcome(traced=trace)
    cells = _read_cells(path, tests, cases, outcome)
    if cells is None:
        return outcome
    by_key = {c.key: c for c in cases}
    skip_cells: set[int] = set()
    outputs: list[str] = []
    strikes = _Strikes()
    deadline = time.monotonic() + limits.total_timeout
    with tempfile.TemporaryDirectory(prefix="gptcourse-run-") as workdir:
        os.chmod(workdir, 0o711)  # a child with its own user reaches its own folder inside, and nothing else
        while True:
            remaining = _remaining(cases, outcome, strikes, limits, deadline)
            if not remaining:
                break
            job = _job(tests, cells, skip_cells, remaining, strikes, limits) | {"trace": trace}
            child = _Child(job, workdir, limits.output_bytes)
            script = _Script(cells, skip_cells, remaining, list(tests.suites))
            progress = _watch(child, script, by_key, limits, deadline, outcome, outputs, strikes)
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
    outcome.interrupted = outcome.interrupted or bool(strikes.struck)
    processes.reap_strays()
    return outcome


def _read_cells(path: Path, tests: StageTests, cases: list[Case], outcome: Outcome) -> list[dict] | None:
    """The notebook's code cells as the child gets them (their labels and what of their IPython
    syntax was left out noted in ``outcome``); None, every case failed, when it cannot be read."""
    try:
        notebook = load_notebook_json(path)
        found = code_cells(notebook, tests.given)
    except SubmissionError as exc:
        outcome.fatal = str(exc)
        for case in cases:
            outcome.errors[case.key] = "the submission could not be read"
        return None
    named = notebook_stage(notebook)
    if named is not None and named != tests.stage_id:  # graded all the same: it earns what its code earns
        outcome.wrong_stage = (named, tests.stage_id)
    outcome.cell_labels = {c.index: c.label for c in found}
    outcome.code = "\n".join(c.source for c in found)
    outcome.left_out = {c.index: c.notes for c in found if c.notes}
    return [{"index": c.index, "source": c.source, "label": c.label, "given": c.given} for c in found]


def _remaining(cases: list[Case], outcome: Outcome, strikes: "_Strikes", limits: Limits, deadline: float) -> list[str]:
    """The keys of the cases still to run. Those of a question with too many unstoppable tests,
    and every case once the time is up, get their error here instead."""
    for case in cases:
        if strikes.kills.get(case.qid, 0) >= limits.unstoppable_tests and case.key not in outcome.values:
            outcome.errors.setdefault(
                case.key,
                f"not run: {strikes.kills[case.qid]} tests of this question "
                "ran out of time and could not be stopped "
                "(does your code catch every exception, even the grader's time-out?)",
            )
    remaining = [c.key for c in cases if c.key not in outcome.values and c.key not in outcome.errors]
    if remaining and time.monotonic() >= deadline:
        for key in remaining:
            outcome.errors[key] = f"not run: the submission used up its {limits.total_timeout:g} s in all"
        return []
    return remaining


def _job(
    tests: StageTests, cells: list[dict], skip_cells: set[int], keys: list[str], strikes: "_Strikes", limits: Limits
) -> dict:
    """What one child is told to do (see ``child``): the public suites (the hidden ones follow
    later on the control pipe), the cells, the cases, the limits."""
    suites = tests.suites
    return {
        "suites": [{"label": s.label, "source": s.probes} for s in suites if s.public],
        "deferred": any(not s.public for s in suites),
        "preload": sorted({name for s in suites for name in s.imports}),
        "cases": keys,
        "timed": [c.key for c in tests.cases if c.timed and c.key in keys],  # each waits for a word (child)
        "cells": cells,
        "skip_cells": sorted(skip_cells),
        "cell_timeout": limits.cell_timeout,
        "case_timeout": limits.case_timeout,
        "struck": sorted(strikes.struck),
        "strike_fraction": limits.strike_fraction,
        "memory_bytes": limits.memory_bytes,
        "cpu_seconds": limits.cpu_seconds,
        "file_bytes": limits.file_bytes,
        "open_files": limits.open_files,
        "max_processes": limits.max_processes,
        "disk_bytes": limits.disk_bytes,
        "sandbox": limits.sandbox or os.environ.get("GPTCOURSE_SANDBOX") or "namespaces",
    }


class _Script:
    """The events an honest child sends, in order; the parent accepts nothing else."""

    def __init__(self, cells: list[dict], skip: set[int], keys: list[str], suites: list[SuiteFile]) -> None:
        self.steps: list[tuple[str, object]] = [("ready", None)]
        for cell in cells:
            if cell["index"] not in skip:
                self.steps += [("cell", cell["index"]), ("cell_done", cell["index"])]
        self.steps += [step for key in keys for step in (("case", key), ("result", key))]
        self.steps.append(("done", None))
        self.position = 0
        self.loaded = {k for s in suites if s.public for k in s.keys}
        self.deferred = [s for s in suites if not s.public]
        self.sent = False

    def accepts(self, event: dict) -> bool:
        """Whether ``event`` is the next step; if so, move past it."""
        kind, what = self.steps[self.position]
        if event.get("ev") != kind:
            return False
        if kind in ("cell", "cell_done") and event.get("index") != what:
            return False
        if kind in ("case", "result") and event.get("key") != what:
            return False
        self.position += 1
        return True

    def last(self) -> tuple[str, object]:
        return self.steps[self.position - 1] if self.position else ("start", None)

    def hidden_due(self) -> bool:
        """True once, when the next step is the first case of a suite not yet sent."""
        kind, what = self.steps[self.position]
        if self.sent or kind != "case" or what in self.loaded or not self.deferred:
            return False
        self.sent = True
        return True


def _watch(
    child: _Child,
    script: _Script,
    by_key: dict[str, Case],
    limits: Limits,
    deadline: float,
    outcome: Outcome,
    outputs: list[str],
    strikes: _Strikes,
):
    """Follow one child until it finishes or fails; say what to skip in the next one:
    "done", or ``(kind, what)`` from ``_blame``."""
    try:
        reason = _follow(child, script, by_key, limits, deadline, outcome, strikes)
    except _Overflow:
        reason = "overflow"
    except _Flood:
        reason = "flood"
    if reason == "done":
        child.drain(1.0)
        outputs.append(child.finish())
        return "done"
    outputs.append(child.finish())
    return _blame(reason, child, script, by_key, limits, deadline, outcome, strikes)


def _follow(child, script, by_key, limits, deadline, outcome, strikes) -> str:
    """Read the child's events, accepting only the next step of ``script``, until it is
    "done", or stops with a "timeout" (its step's limit or the submission's) or an "exit"."""
    timer = _StepTimer(limits)
    while True:
        now = time.monotonic()
        limit = min(timer.deadline, deadline)
        if now >= limit:
            return "timeout"
        events = child.poll(min(limit - now, 1.0))
        if events is None:
            return "exit"
        for event in events:
            if not script.accepts(event):
                continue
            kind, what = script.last()
            if kind == "done":
                return "done"
            _take(kind, what, event, child, by_key, outcome, strikes, timer)
            if script.hidden_due():
                child.control.send(
                    _message({"suites": [{"label": s.label, "source": s.probes} for s in script.deferred]})
                )


class _StepTimer:
    """The time the child's current step may take: start-up, a cell, a case (with ``grace``)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.case_started = time.monotonic()
        self.case_cpu: float | None = None  # the child's CPU time when a timed case started
        self.deadline = time.monotonic() + limits.startup_timeout

    def between_steps(self) -> None:
        self.deadline = time.monotonic() + self.limits.startup_timeout

    def cell(self) -> None:
        self.deadline = time.monotonic() + self.limits.cell_timeout + self.limits.grace

    def case(self, limit: float) -> None:
        self.case_started = time.monotonic()
        self.deadline = self.case_started + limit + self.limits.grace


def _cpu_time_between(child: "_Child", word: dict | None = None) -> float | None:
    """The child's CPU time now, read while it waits (before a timed test starts, and after it
    ends, ``child._run_cases``), with every process it started (``processes.cpu_seconds``);
    then the word that lets it go on (``_go_word``)."""
    cpu = processes.cpu_seconds(child.pid, child.private_uid()) if child.pid else None
    child.control.send(_message(word or {"go": True}))
    return cpu


def _go_word(case: Case, outcome: Outcome) -> dict:
    """The word that starts a timed test: go on and, for a test with a CPU budget, the CPU
    seconds after which the child stops it (``budget`` calibration workloads). The calibration
    is measured once per submission, here, while the child waits for this word: the child's
    process then uses no CPU, and the judge compares the test's seconds with the same number.

    >>> from autograder.kit.cases import Suite
    >>> suite = Suite(public=True)
    >>> _ = suite.case("q", "fast", points=1, check=None, timed=True, budget=20)(lambda ns: 0)
    >>> _go_word(suite.cases[0], Outcome(calibration=0.1))
    {'go': True, 'cpu_limit': 2.0}
    """
    if outcome.calibration is None:
        outcome.calibration = calibrate()
    if case.budget is None:
        return {"go": True}
    return {"go": True, "cpu_limit": case.budget * outcome.calibration}


def _take(kind, what, event: dict, child: _Child, by_key, outcome: Outcome, strikes: _Strikes, timer: _StepTimer):
    """Note what an accepted event says (isolation, a cell's error, a case's output) and time the next step."""
    if kind == "ready":
        isolation = event.get("isolation")
        outcome.isolation = isolation if isinstance(isolation, dict) else {}
        uid = outcome.isolation.get("uid")
        child.uid = uid if isinstance(uid, int) and not isinstance(uid, bool) else None
        timer.between_steps()
    elif kind == "cell":
        timer.cell()
    elif kind == "cell_done":
        if event.get("error"):
            outcome.cell_errors[what] = str(event["error"])[:ERROR_LIMIT]
        _note_ran(event, RAN_IN_CELLS, outcome)
        timer.between_steps()
    elif kind == "case":
        timer.case(case_limit(by_key[what], timer.limits, strikes.struck))
        timer.case_cpu = _cpu_time_between(child, _go_word(by_key[what], outcome)) if by_key[what].timed else None
    elif kind == "result":
        outcome.seconds.setdefault(what, time.monotonic() - timer.case_started)
        if by_key[what].timed:
            cpu = _cpu_time_between(child)
            if cpu is not None and timer.case_cpu is not None:
                outcome.cpu_seconds.setdefault(what, cpu - timer.case_cpu)
        if str(event.get("error", "")).startswith(TIMED_OUT):
            strikes.struck.add(by_key[what].qid)
        _record(event, outcome)
        _note_ran(event, what, outcome)
        timer.between_steps()


def _note_ran(event: dict, key: str, outcome: Outcome) -> None:
    """Add what the child's tracer says ran to ``outcome.ran[key]``; a report missing or out of
    shape makes the whole trace untrusted (``traced`` False)."""
    if not outcome.traced:
        return
    ran = event.get("ran")
    if not isinstance(ran, list) or not all(
        isinstance(r, list) and len(r) == 2 and all(isinstance(x, str) for x in r) for r in ran
    ):
        outcome.traced = False
        return
    outcome.ran.setdefault(key, set()).update((file, name) for file, name in ran)


FAILED = {
    "timeout": "did not finish in time and was stopped",
    "overflow": "sent far more data than expected and was stopped",
    "exit": "ended the process running it (sys.exit, os._exit, a crash or running out of memory)",
}


def _blame(reason: str, child: _Child, script, by_key, limits: Limits, deadline: float, outcome, strikes):
    """Blame a failed child on its step: the case or cell it was in, the cell that ran last
    (something it started in the background), or, once the tests have begun, the next test
    to run, so that every restart makes progress. Returns what the next child skips."""
    outcome.interrupted = True
    what = (
        f"printed more than {limits.output_bytes / 2**20:g} MB and was stopped" if reason == "flood" else FAILED[reason]
    )
    kind, where = script.last()
    if kind == "case":
        if reason == "timeout" and time.monotonic() < deadline:
            qid = by_key[where].qid
            strikes.struck.add(qid)
            strikes.kills[qid] = strikes.kills.get(qid, 0) + 1
        outcome.errors.setdefault(where, f"this test {what}")
        return ("case", where)
    if kind == "cell":
        outcome.cell_errors[where] = f"{what}; it was skipped"
        return ("cell", where)
    if kind == "cell_done":
        outcome.cell_errors[where] = f"started something that {what}; the cell was skipped"
        return ("cell", where)
    if kind in ("ready", "result"):
        pending = [w for k, w in script.steps[script.position :] if k == "case"]
        if pending:
            outcome.errors[pending[0]] = f"the process running your code {what} before this test began"
            return ("case", pending[0])
        return "done"
    return (
        "startup",
        f"the grading process could not start ({what}); output: {child.output[:300].decode('utf-8', 'replace')}",
    )


def _record(event: dict, outcome: Outcome) -> None:
    key = event["key"]
    if key in outcome.values or key in outcome.errors:
        return  # the first report of a case counts; later ones are ignored
    if "error" in event:
        outcome.errors[key] = str(event["error"])[:ERROR_LIMIT]
        return
    try:
        outcome.values[key] = codec.decode(event.get("value"))
    except (codec.DecodeError, RecursionError) as exc:
        outcome.errors[key] = f"the output could not be read back ({exc})"
