"""The child process: runs a submission's code and the test probes, reports raw outputs.

Started by ``runner`` as ``python -I child.py`` in its own session, with a job (JSON)
on standard input. It never judges anything: it only sends events, one JSON object
per line, on the pipe whose descriptor the job names:

    {"ev": "ready"}                                  suites loaded, limits set
    {"ev": "cell", "index": i}                       about to run notebook cell i
    {"ev": "cell_done", "index": i, "error": msg}    cell i finished (error or null)
    {"ev": "case", "key": k}                         about to run test case k
    {"ev": "result", "key": k, "value": data}        the probe's raw output (codec)
    {"ev": "result", "key": k, "error": msg}         the probe raised
    {"ev": "done"}

The student's prints go to standard output and error, which the parent caps. The
parent treats everything here as untrusted: a forged event can at most claim an
output, and outputs are judged in the parent against data the child never sees.
"""

import builtins
import json
import os
import resource
import signal
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class CaseTimeout(BaseException):
    """Raised inside student code when its soft time limit is over."""


def _on_alarm(signum, frame):  # noqa: ARG001 - signal handler signature
    raise CaseTimeout()


def _set_limits(job: dict) -> None:
    limits = [
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_AS, job.get("memory_bytes")),
        (resource.RLIMIT_CPU, job.get("cpu_seconds")),
        (resource.RLIMIT_FSIZE, job.get("file_bytes")),
        (resource.RLIMIT_NOFILE, job.get("open_files")),
    ]
    for which, value in limits:
        if not value:
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


def _confine(job: dict) -> None:
    """Give up what student code must not have: the network and unbounded processes.

    As root the child moves to a new network namespace with no interfaces up. The
    process cap (``RLIMIT_NPROC``) counts the user's existing processes; the kernel
    does not apply it to root, for whom the grader's process sweep is the only bound.
    """
    if os.geteuid() == 0:
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).unshare(0x40000000)  # CLONE_NEWNET
        except (OSError, AttributeError):
            pass
    processes = job.get("max_processes")
    if processes and os.geteuid() != 0:
        limit = _count_processes(os.getuid()) + processes
        soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
        except (ValueError, OSError):
            pass


def run_job(job: dict) -> None:
    """Run one submission's job in this (fresh) process, then exit without cleanup hooks."""
    events = os.fdopen(job["event_fd"], "w", buffering=1, encoding="utf-8")

    def emit(**event) -> None:
        events.write(json.dumps(event, allow_nan=False) + "\n")
        events.flush()

    sys.path.insert(0, ROOT)
    _set_limits(job)
    import torch

    from autograder import codec, harness

    torch.set_num_threads(1)
    cases = []
    for index, path in enumerate(job["suite_files"]):
        cases.extend(harness.load_suite(path, f"gptcourse_suite_{index}").cases)
    wanted = set(job["cases"])
    cases = [c for c in cases if c.key in wanted]
    for case in cases:  # the child needs the probes only: no expected value, no check
        case.expected = None
        case.check = None
    signal.signal(signal.SIGALRM, _on_alarm)
    _confine(job)
    emit(ev="ready")

    submission = types.ModuleType("submission")
    submission.__dict__["__builtins__"] = builtins
    sys.modules["submission"] = submission
    harness.reseed(0)
    skip = set(job.get("skip_cells", []))
    for cell in job["cells"]:
        if cell["index"] in skip:
            continue
        emit(ev="cell", index=cell["index"])
        error = None
        try:
            signal.setitimer(signal.ITIMER_REAL, job["cell_timeout"])
            code = compile(cell["source"], f"<cell {cell['index']}>", "exec")
            exec(code, submission.__dict__)
        except CaseTimeout:
            error = f"did not finish within {job['cell_timeout']:g} s and was stopped"
        except BaseException as exc:  # the student's cell failed: note it and go on
            error = harness.describe_error(exc)
            if isinstance(exc, SyntaxError):
                error = f"has a syntax error on line {exc.lineno}: {exc.msg}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        emit(ev="cell_done", index=cell["index"], error=error)

    names = harness.Namespace(submission.__dict__)
    for case in cases:
        emit(ev="case", key=case.key)
        harness.reseed(harness.CASE_SEED)
        timeout = min(case.timeout, job["case_timeout"]) if job.get("case_timeout") else case.timeout
        try:
            signal.setitimer(signal.ITIMER_REAL, timeout)
            value = case.probe(names)
            signal.setitimer(signal.ITIMER_REAL, 0)
            payload = codec.encode(value)
        except CaseTimeout:
            emit(ev="result", key=case.key, error=f"did not finish within {timeout:g} s (an endless loop, or far too slow)")
            continue
        except BaseException as exc:  # a failure of the student's code is this case's failure
            signal.setitimer(signal.ITIMER_REAL, 0)
            emit(ev="result", key=case.key, error=harness.describe_error(exc))
            continue
        emit(ev="result", key=case.key, value=payload)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # the student may have replaced or closed them
            pass
    emit(ev="done")
    events.close()
    os._exit(0)


def _recv_exactly(sock, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def serve(sock_fd: int) -> None:
    """Fork server: import the heavy libraries once, then fork a fresh process per job.

    Each request is an 8-byte length, the job as JSON, and two file descriptors (the
    student's output pipe and the event pipe) passed alongside. The forked process
    starts its own session, takes those pipes as its output and event stream, and runs
    the job; the server answers with its process id. The server runs no student code.
    """
    import socket

    sys.path.insert(0, ROOT)
    import numpy  # noqa: F401 - imported once here, shared by every forked job
    import torch

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401

    from autograder import codec, harness  # noqa: F401

    torch.set_num_threads(1)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forked jobs are reaped automatically
    sock = socket.socket(fileno=sock_fd)
    while True:
        try:
            header, fds, _, _ = socket.recv_fds(sock, 8, 2)
            if not header:
                break
            header += _recv_exactly(sock, 8 - len(header))
            job = json.loads(_recv_exactly(sock, int.from_bytes(header, "big")))
        except (EOFError, OSError, ValueError):
            break
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                os.setsid()
                out_fd, event_fd = fds
                os.dup2(out_fd, 1)
                os.dup2(out_fd, 2)
                os.close(out_fd)
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                os.close(null)
                os.chdir(job["workdir"])
                os.environ.update(job["env"])
                import tempfile

                tempfile.tempdir = None
                job["event_fd"] = event_fd
                run_job(job)
            finally:
                os._exit(70)
        for fd in fds:
            os.close(fd)
        sock.sendall(pid.to_bytes(8, "big"))


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--server":
        serve(int(sys.argv[2]))
    else:
        run_job(json.loads(sys.stdin.read()))


if __name__ == "__main__":
    main()
