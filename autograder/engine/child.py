"""The child process: runs a submission's code and the test probes, reports raw outputs.

Started by ``runner`` (forked from the fork server, or as ``python -I child.py --job
EVENTS CONTROL``) in its own session. It reads its job from the *control* pipe, sets its
resource limits, imports what the tests need, and confines itself (``sandbox``) before
any student code runs. It never judges anything: it only sends events, one JSON object
per line, on the *events* pipe:

    {"ev": "ready", "isolation": {...}}              limits set, sandbox entered
    {"ev": "cell", "index": i}                       about to run notebook cell i
    {"ev": "cell_done", "index": i, "error": msg}    cell i finished (error or null)
    {"ev": "case", "key": k}                         about to run test case k
    {"ev": "result", "key": k, "value": data}        the probe's raw output (codec)
    {"ev": "result", "key": k, "error": msg}         the probe raised
    {"ev": "done"}

A job with ``"trace": true`` (the catalogue's reference, ``authoring.reuse``; never a
student's grading) also says, in each ``cell_done`` and ``result`` event, which functions of
the notebook's cells ran meanwhile: ``"ran": [[file, qualified name], ...]``, or ``null``
once the tracer was lost (something replaced it), so that the parent trusts none of it.

Each cell is compiled under the name the student knows it by (the job's ``label``, "code
cell 5 (In [12])") with its lines in ``linecache``, so that an error says where it
happened as the student sees it; ``display`` is defined as in a kernel (it prints).

The hidden tests are not in the job: the parent sends them on the control pipe only
once the notebook's cells and the public tests are over, so that nothing a cell or a
public test reports can carry them. The student's prints go to standard output and
error, which the parent caps. The parent treats everything here as untrusted: a forged
event can at most claim an output, and outputs are judged in the parent against data
the child never sees.
"""

import builtins
import importlib
import json
import linecache
import os
import resource
import shutil
import signal
import sys
import threading
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # holds the autograder package
HEADER = 8  # bytes of the length that precedes each control message
_PID: int | None = None  # this child's own process id, noted as its job starts (run_job)


# Modules torch imports on first use, inside whatever test first needs them:
# torch.broadcast_shapes imports torch.fx.experimental.symbolic_shapes and sympy (about 2 s);
# the first optimiser step imports torch._dynamo (hundreds of modules). A test stopped by its
# time limit in the middle of such an import leaves the module half made, and every later
# test that needs it fails. The fork server and each child import LAZY before any test runs;
# torch._dynamo is imported only where the tests train (a suite imports torch.optim): by the
# fork server that serves those jobs alone (runner.server_modules), as held by every server
# it made every fork slower (12 % measured), and by the job itself when it runs without one.
LAZY = ("torch.fx.experimental.symbolic_shapes",)


class CaseTimeout(BaseException):
    """Raised inside student code when its soft time limit is over."""


class OverBudget(BaseException):
    """Raised inside student code when a timed test has used its CPU budget (``Case.budget``)."""


def _on_alarm(signum, frame):  # noqa: ARG001 - signal handler signature
    raise CaseTimeout()


def _on_budget(signum, frame):  # noqa: ARG001 - signal handler signature
    raise OverBudget()


def display(*objs, **kwargs) -> None:  # noqa: ARG001 - the options of IPython's display
    """What a notebook's ``display(x)`` does here, where nothing is shown: print each ``repr``."""
    for obj in objs:
        print(repr(obj))


def _label(cell: dict) -> str:
    """How feedback names a cell ("code cell 5 (In [12])"; the parent says so in the job)."""
    return str(cell.get("label") or f"cell {cell['index'] + 1}")


def _stop_if_clone() -> None:
    """End at once a process that student code forked from this child and that went on running
    the grading loop (a clone): only the child itself reads the parent's words and reports, so
    that a clone cannot take a word meant for the child, nor report in its stead."""
    if _PID is not None and os.getpid() != _PID:
        os._exit(0)


def read_message(fd: int) -> dict:
    """One length-prefixed JSON message from the control pipe (a clone of the child ends instead)."""
    _stop_if_clone()

    def exactly(size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = os.read(fd, size - len(data))
            if not chunk:
                raise EOFError("the control pipe closed")
            data += chunk
        return data

    return json.loads(exactly(int.from_bytes(exactly(HEADER), "big")))


def _set_limits(job: dict) -> None:
    try:  # when memory runs out (a container's limit, say), the kernel kills this process first
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write("1000")
    except OSError:
        pass
    limits = [
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_AS, job.get("memory_bytes")),
        (resource.RLIMIT_CPU, job.get("cpu_seconds")),
        (resource.RLIMIT_FSIZE, job.get("file_bytes")),
        (resource.RLIMIT_NOFILE, job.get("open_files")),
    ]
    for which, value in limits:
        if value is None:
            continue
        soft, hard = resource.getrlimit(which)
        value = int(value) if hard == resource.RLIM_INFINITY else min(int(value), hard)
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass


def _count_processes(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += 1
            except OSError:
                pass
    return count


def _limit_processes(job: dict, isolation: dict) -> None:
    """Cap the processes (and threads) student code may start (``RLIMIT_NPROC``).

    The kernel counts every process of the user and never applies the cap to root:
    with a private user the cap is exact; as an ordinary user it is added to the
    processes that user already has (counted before the sandbox hid them).
    """
    cap = job.get("max_processes")
    if not cap or os.geteuid() == 0:
        return
    limit = cap if isolation.get("uid") else job.get("existing_processes", 0) + cap
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
    except (ValueError, OSError):
        pass


def _load_probes(suite: dict, index: int, public: types.ModuleType | None = None) -> dict:
    """Run a suite's source as a module (``public``: its stage's public suite, which a hidden
    suite imports from); return its cases by key, without expected values or checks."""
    from autograder.engine.suites import exec_suite  # imported before the sandbox is entered (run_job)

    cases = exec_suite(suite["source"], f"<{suite['label']} tests>", f"gptcourse_suite_{index}", public).cases
    for case in cases:  # the child needs the probes only: no expected value, no check
        case.expected = None
        case.check = None
    return {case.key: case for case in cases}


def run_job(job: dict, events_fd: int, control_fd: int) -> None:
    """Run one submission's job in this (fresh) process, then exit without cleanup hooks.

    The process notes its id (a clone forked by student code ends, ``_stop_if_clone``) and
    becomes a subreaper, so that whatever the submission detaches stays in its subtree: the
    parent counts its CPU time and kills it (``processes``)."""
    global _PID
    _PID = os.getpid()
    events = os.fdopen(events_fd, "w", buffering=1, encoding="utf-8")

    def emit(**event) -> None:
        _stop_if_clone()
        events.write(json.dumps(event, allow_nan=False) + "\n")
        events.flush()

    sys.path.insert(0, ROOT)
    from autograder.engine import processes

    processes.become_subreaper()
    _set_limits(job)
    tools = _import_what_the_tests_need(job)
    isolation = _confine(job, tools)
    cases = _load_suites(job["suites"], start=0)
    public = sys.modules.get("gptcourse_suite_0")  # the public suite, which the hidden ones import from
    engine = dict(sys.modules)  # every module loaded so far, as the tests expect to find them
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.signal(signal.SIGPROF, _on_budget)
    emit(ev="ready", isolation=isolation)
    cell_of = _cell_names(job["cells"])
    if job.get("trace"):
        emit = _Tracer(job["cells"]).emitting(emit)
    submission = _run_cells(job, tools, cell_of, emit)
    names = tools.Namespace(submission.__dict__)
    _run_cases(job, tools, cases, names, cell_of, (engine, public), control_fd, emit)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # the student may have replaced or closed them
            pass
    emit(ev="done")
    events.close()
    os._exit(0)


class _Tracer:
    """Which functions of the notebook's cells run (``job["trace"]``): a global trace function
    that notes each call's code (its cell's file and its qualified name) and traces no line.

    >>> tracer = _Tracer([{"index": 0, "label": "code cell 1"}])
    >>> tracer.files
    {'<code cell 1>'}
    """

    def __init__(self, cells: list[dict]) -> None:
        self.files = {f"<{_label(cell)}>" for cell in cells}
        self.ran: set[tuple[str, str]] = set()

    def __call__(self, frame, event, arg):  # noqa: ARG002 - sys.settrace's signature
        code = frame.f_code
        if code.co_filename in self.files:
            self.ran.add((code.co_filename, code.co_qualname))

    def take(self) -> list[list[str]] | None:
        """What ran since the last call; None when this tracer is no longer the one installed."""
        ran, self.ran = sorted(self.ran), set()
        return [list(r) for r in ran] if sys.gettrace() is self else None

    def emitting(self, emit):
        """Start tracing; return ``emit`` adding what ran to each ``cell_done`` and ``result`` event."""
        sys.settrace(self)
        threading.settrace(self)

        def traced(**event) -> None:
            if event.get("ev") in ("cell_done", "result"):
                event["ran"] = self.take()
            emit(**event)

        return traced


def _import_what_the_tests_need(job: dict) -> types.SimpleNamespace:
    """Import, while the engine is still readable, every module a test will need: the lazy
    parts of torch, the engine and the kit, the suites' own imports; one thread, seeded.

    Returns the engine's own tools, bound here: what the student's code later puts in
    ``sys.modules`` cannot replace them.
    """
    for name in LAZY:
        importlib.import_module(name)
    from autograder.engine import codec, sandbox, suites  # noqa: F401 - suites: for _load_probes, while readable
    from autograder.kit import runtime, threads
    from autograder.kit.cases import Namespace

    preload = list(job.get("preload", []))
    if any(name.startswith("torch.optim") for name in preload):
        # tests that train: the first optimiser made imports torch._dynamo (seconds); a test's time
        # limit interrupting that import would leave it half-loaded for every later test
        preload.append("torch._dynamo")
    for name in preload:
        try:
            importlib.import_module(name)
        except Exception:  # a test that needs it will say so
            pass
    threads.configure_threads(1)  # one thread per submission: the parent runs one child per usable CPU
    runtime.reseed(0)  # imports the random generators' modules while they are readable
    return types.SimpleNamespace(codec=codec, sandbox=sandbox, runtime=runtime, Namespace=Namespace)


def _confine(job: dict, tools: types.SimpleNamespace) -> dict:
    """Enter the sandbox (its private working directory becomes home and temp) and cap the
    processes; return how this process is confined."""
    job["existing_processes"] = _count_processes(os.getuid()) if os.geteuid() != 0 else 0
    isolation = tools.sandbox.enter(
        job["workdir"], ROOT, int(job.get("disk_bytes") or 256 * 1024**2), job.get("sandbox") or "namespaces"
    )
    os.environ.update(HOME=isolation["workdir"], TMPDIR=isolation["workdir"])
    import tempfile

    tempfile.tempdir = None
    _limit_processes(job, isolation)
    return isolation


def _load_suites(suites: list[dict], start: int, public: types.ModuleType | None = None) -> dict:
    """The probes of ``suites`` by case key (the suites numbered from ``start``)."""
    cases = {}
    for index, suite in enumerate(suites, start=start):
        cases.update(_load_probes(suite, index, public))
    return cases


def _run_cells(job: dict, tools: types.SimpleNamespace, cell_of, emit) -> types.ModuleType:
    """Run the notebook's cells (all but ``skip_cells``) in a fresh ``submission`` module,
    announcing each, each within ``cell_timeout``; a failing cell is noted and the next runs."""
    submission = types.ModuleType("submission")
    submission.__dict__["__builtins__"] = builtins
    submission.__dict__["display"] = display
    sys.modules["submission"] = submission
    tools.runtime.reseed(0)
    skip = set(job.get("skip_cells", []))
    for cell in job["cells"]:
        if cell["index"] in skip:
            continue
        emit(ev="cell", index=cell["index"])
        error = None
        try:
            signal.setitimer(signal.ITIMER_REAL, job["cell_timeout"])
            try:
                code = _compiled(cell)
            except SyntaxError as exc:  # IndentationError too
                line = (exc.text or "").strip()
                error = f"has a syntax error at line {exc.lineno}: {exc.msg}" + (f": `{line[:80]}`" if line else "")
            else:
                exec(code, submission.__dict__)
        except CaseTimeout:
            error = f"did not finish within {job['cell_timeout']:g} s and was stopped"
        except BaseException as exc:  # the student's cell failed: note it and go on
            error = tools.runtime.describe_error(exc, cell_of, current=_label(cell))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        emit(ev="cell_done", index=cell["index"], error=error)
    return submission


def _compiled(cell: dict) -> types.CodeType:
    """A cell's code. The course's code of an earlier answer (``given``) is compiled without its
    docstrings and its text is dropped from the job: the student's code, which can read this
    process's memory, finds only its compiled form (``assignments/SPEC.md`` § Earlier answers)."""
    if not cell.get("given"):
        return compile(cell["source"], f"<{_label(cell)}>", "exec")
    code = compile(cell["source"], f"<{_label(cell)}>", "exec", optimize=2)
    cell["source"] = ""
    return code


def _cell_names(cells: list[dict]):
    """Put each cell's lines in ``linecache`` (tracebacks and error messages show the line of
    code) and return the function that names a cell by its file name, as the student knows it."""
    labels = {f"<{_label(cell)}>": _label(cell) for cell in cells}
    for cell in cells:
        if cell.get("given"):  # the course's code of an earlier answer: no line of it is shown
            continue
        filename = f"<{_label(cell)}>"
        linecache.cache[filename] = (len(cell["source"]), None, cell["source"].splitlines(True), filename)
    return labels.get


def _run_cases(job: dict, tools, cases: dict, names, cell_of, loaded: tuple, control_fd: int, emit) -> None:
    """Run each case of ``job["cases"]`` on the submission's names and send its raw output.

    The hidden suites arrive on the control pipe once the first case not yet loaded is due
    (``deferred``); ``sys.modules`` is put back as the engine left it before they load
    (``loaded``: those modules, and the public suite the hidden ones import from).
    A question that ran out of time (``struck``) gets ``strike_fraction`` of its later tests' limits.
    A timed test waits for the parent's word before it starts and before the next step, so
    that the CPU time the parent reads around it is the test's alone.
    """
    deferred, unloaded = bool(job.get("deferred")), "this test could not be loaded"
    struck = set(job.get("struck") or ())
    timed_keys = set(job.get("timed") or ())
    engine, public = loaded
    for key in job["cases"]:
        if key not in cases and deferred:
            deferred = False
            sys.modules.update(engine)  # modules a cell replaced in sys.modules are put back
            try:
                hidden = read_message(control_fd)["suites"]
                cases.update(_load_suites(hidden, start=len(job["suites"]), public=public))
            except Exception:  # the notebook broke what the tests need (it patched torch or the engine, say)
                unloaded = (
                    "the tests could not be loaded in your notebook's process (did "
                    "it replace or patch a module the tests use?)"
                )
        emit(ev="case", key=key)
        timed = key in timed_keys
        # the parent reads this process's CPU time before the test and after it; its word
        # before the test may carry the CPU seconds the test may use (runner._go_word)
        word = read_message(control_fd) if timed else {}
        case = cases.get(key)
        if case is None:
            emit(ev="result", key=key, error=unloaded)
        else:
            emit(ev="result", key=key, **_run_case(case, job, tools, struck, names, cell_of, word.get("cpu_limit")))
        if timed:
            read_message(control_fd)


def _stop_timers() -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.setitimer(signal.ITIMER_PROF, 0)


def _run_case(case, job: dict, tools, struck: set[str], names, cell_of, cpu_limit=None) -> dict:
    """One probe within its time limit, and within ``cpu_limit`` CPU seconds (this process's,
    all its threads) where the parent gave one: ``{"value": raw output}`` or ``{"error": message}``."""
    strike = job.get("strike_fraction")
    timeout = min(case.timeout, job["case_timeout"]) if job.get("case_timeout") else case.timeout
    shortened = bool(strike) and case.qid in struck
    timeout = timeout * strike if shortened else timeout
    try:
        signal.setitimer(signal.ITIMER_REAL, timeout)
        if cpu_limit:
            signal.setitimer(signal.ITIMER_PROF, cpu_limit)
        value, error, _ = tools.runtime.run_probe(case, names, cell_of)
        _stop_timers()
        payload = tools.codec.encode(value) if error is None else None
    except CaseTimeout:
        _stop_timers()
        struck.add(case.qid)
        note = "; a shorter limit, as an earlier test of this question ran out of time" if shortened else ""
        return {"error": f"did not finish within {timeout:g} s (an endless loop, or far too slow{note})"}
    except OverBudget:
        _stop_timers()
        return {
            "error": f"used more CPU time than this test allows, {case.budget:g} times the calibration "
            f"workload ({cpu_limit:.2f} s here), and was stopped there (far too slow)"
        }
    except BaseException as exc:  # sys.exit and the like, or an output the codec cannot carry
        _stop_timers()
        return {"error": tools.runtime.describe_error(exc, cell_of)}
    return {"error": error} if error is not None else {"value": payload}


def _start_job(request: dict, out_fd: int, events_fd: int, control_fd: int) -> None:
    """In a freshly forked process: take the pipes, a new session and the job; run it."""
    os.setsid()
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    os.close(out_fd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.chdir(request["workdir"])
    os.environ.clear()
    os.environ.update(request["env"])
    job = read_message(control_fd)
    job["workdir"] = request["workdir"]
    run_job(job, events_fd, control_fd)


def serve(sock_fd: int, workdir: str, modules: tuple[str, ...] = ()) -> None:
    """Fork server: import the heavy libraries once, then fork a fresh process per job.

    Each request is an 8-byte length, a small JSON request (working directory and
    environment) and three file descriptors passed alongside: the student's output
    pipe, the event pipe and the control pipe. The job itself (the notebook's code,
    the tests) goes straight to the forked process on its control pipe, so that no
    submission's code ever passes through, or stays in the memory of, the server that
    later forks other submissions. The server answers with the process id. ``modules``
    are imported on top of the common ones (``runner.server_modules``). When its socket
    closes (the grading process stopped it, or died without a word), the server removes
    ``workdir``, the temporary folder the runner made for it, and exits.
    """
    import socket

    sys.path.insert(0, ROOT)
    import numpy  # noqa: F401 - imported once here, shared by every forked job
    import torch  # noqa: F401

    for name in (*LAZY, *modules):
        importlib.import_module(name)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401

    from autograder.engine import codec, sandbox, suites  # noqa: F401
    from autograder.kit import runtime, threads  # noqa: F401

    threads.configure_threads(1)  # the server and every job forked from it: one thread each
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forked jobs are reaped automatically
    sock = socket.socket(fileno=sock_fd)
    try:
        _serve_requests(sock)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _serve_requests(sock) -> None:
    """Fork a job for each request on ``sock`` until it closes or sends something else."""
    import socket

    while True:
        try:
            header, fds, _, _ = socket.recv_fds(sock, HEADER, 3)
            if not header:
                break
            while len(header) < HEADER:
                more = sock.recv(HEADER - len(header))
                if not more:
                    raise EOFError
                header += more
            size, body = int.from_bytes(header, "big"), b""
            while len(body) < size:
                more = sock.recv(size - len(body))
                if not more:
                    raise EOFError
                body += more
            request = json.loads(body)
        except (EOFError, OSError, ValueError):
            break
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            break
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                _start_job(request, *fds)
            finally:
                os._exit(70)
        for fd in fds:
            os.close(fd)
        sock.sendall(pid.to_bytes(8, "big"))


def main() -> None:
    if len(sys.argv) >= 4 and sys.argv[1] == "--server":
        serve(int(sys.argv[2]), sys.argv[3], tuple(sys.argv[4:]))
    elif len(sys.argv) == 4 and sys.argv[1] == "--job":
        control_fd = int(sys.argv[3])
        job = read_message(control_fd)
        job["workdir"] = os.getcwd()
        run_job(job, int(sys.argv[2]), control_fd)
    else:
        sys.exit("usage: child.py --server SOCKET_FD WORKDIR [MODULE ...] | --job EVENTS_FD CONTROL_FD")


if __name__ == "__main__":
    main()
