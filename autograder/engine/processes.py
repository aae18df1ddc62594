"""Making sure no process a submission started outlives its grading, or uses CPU time
unseen (Linux).

The grader makes itself a *child subreaper*, and so does each grading child before any
student code runs (``child.run_job``): a process that a submission detaches (double fork,
``setsid``) is re-parented to the child instead of to init, so it stays in the child's
subtree, where ``cpu_seconds`` counts its CPU time and ``kill_tree`` kills it; where the
child is gone (or student code turned the flag off) it is re-parented to the grader, which
kills it too. On systems without ``prctl`` only the child's own process group is killed;
that fallback is stated in the README.
"""

import ctypes
import os
import signal
import threading

PR_SET_CHILD_SUBREAPER = 36
_lock = threading.Lock()
_known: set[int] = set()
_subreaper = 0  # the process id that became a subreaper: a forked process does not inherit it


def become_subreaper() -> bool:
    """Ask Linux to re-parent orphaned descendants to this process; True when it worked."""
    global _subreaper
    if _subreaper == os.getpid():
        return True
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        done = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        done = False
    _subreaper = os.getpid() if done else 0
    return done


def register(pid: int) -> None:
    """Note a child the grader started on purpose (it is not a stray)."""
    with _lock:
        _known.add(pid)


def unregister(pid: int) -> None:
    with _lock:
        _known.discard(pid)


def _children_map() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return tree
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read().decode("utf-8", "replace")
        except OSError:
            continue
        # the command name is in parentheses and may hold spaces: parse after the last ')'
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1:
            tree.setdefault(int(fields[1]), []).append(int(entry))
    return tree


def _subtree(root: int, tree: dict[int, list[int]]) -> list[int]:
    out, stack = [], [root]
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(tree.get(pid, []))
    return out


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first); None when unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    # the command name is in parentheses and may hold spaces: parse after the last ')'
    return stat[stat.rfind(")") + 2 :].split()


def _status(pid: int | str) -> dict[bytes, bytes]:
    """The fields of ``/proc/<pid>/status`` by name (``b"Uid"``: four user ids, ...); empty when unreadable.

    >>> _status(os.getpid())[b"State"].split()[0]
    b'R'
    """
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            return dict(line.rstrip(b"\n").split(b":", 1) for line in handle if b":" in line)
    except OSError:
        return {}


def _uid_of(pid: int) -> int | None:
    """The real user id of process ``pid``, a zombie's too; None when unreadable."""
    uids = _status(pid).get(b"Uid", b"").split()
    return int(uids[0]) if uids else None


def cpu_seconds(pid: int, uid: int | None = None) -> float | None:
    """The CPU time (user and system, every thread) that process ``pid`` and its descendants
    have used, with the children they waited for, and with every process of user ``uid`` (the
    child's private user, where it has one); None when ``/proc`` cannot tell (not Linux, or
    the process is gone).

    A descendant that exited counts while it is a zombie (its own times) and once its parent
    waited for it (in the parent's). The child is a subreaper (``child.run_job``), so that a
    descendant detaching itself stays in its subtree; one re-parented to the grader all the
    same (student code can turn the child's flag off) still runs as ``uid``. Not counted: a
    descendant reaped without a wait, where its parent ignores ``SIGCHLD`` (the kernel drops
    its times); measuring that needs a cgroup of the child's own.

    Read from outside the process, so that the code it runs cannot change it; timed tests
    compare it with the calibration workload's CPU time, which a busy machine does not
    inflate as it does wall time.

    Example::

        before = cpu_seconds(child_pid)
        ...  # the child runs a test
        used = cpu_seconds(child_pid) - before
    """
    ticks = os.sysconf("SC_CLK_TCK")
    own = _stat_fields(pid)
    if own is None or len(own) < 15:
        return None
    tree = _children_map()
    members = set(_subtree(pid, tree))
    if uid is not None:
        members.update(p for kids in tree.values() for p in kids if _uid_of(p) == uid)
    total = 0
    for member in members:
        fields = own if member == pid else _stat_fields(member)
        if fields is not None and len(fields) >= 15:
            total += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return total / ticks


def _freeze_then_kill(victims: list[int], group: int | None = None) -> None:
    """SIGSTOP every victim (and process ``group``), then SIGKILL them: a frozen process cannot fork away meanwhile."""
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        for victim in victims:
            try:
                os.kill(victim, sig)
            except (ProcessLookupError, PermissionError):
                pass
        if group is not None:
            try:
                os.killpg(group, sig)
            except (ProcessLookupError, PermissionError):
                pass


def kill_tree(pid: int) -> None:
    """Kill a child, its process group and every descendant still attached to it."""
    _freeze_then_kill(_subtree(pid, _children_map()), group=pid)


def reap_strays(rounds: int = 20) -> int:
    """Kill every process re-parented to the grader that it did not start; return how many.

    Strays are frozen (SIGSTOP) before they are killed, so that a fork bomb cannot
    outrun the sweep; the sweep repeats until a round finds none.
    """
    me = os.getpid()
    killed = 0
    for _ in range(rounds):
        tree = _children_map()
        with _lock:
            known = set(_known)
        strays = [p for p in tree.get(me, []) if p not in known]
        victims = [v for s in strays for v in _subtree(s, tree)]
        if not victims:
            break
        _freeze_then_kill(victims)
        for stray in strays:
            try:
                os.waitpid(stray, 0)
            except ChildProcessError:
                pass
        killed += len(victims)
    return killed


def wait_gone(pid: int, seconds: float = 5.0) -> bool:
    """Wait until ``pid`` has exited (or is a zombie awaiting its parent); True when it has."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                state = handle.read().decode("utf-8", "replace").rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.01)
    return False


def _live_uids(pid: str) -> set[int]:
    """The user ids (real, effective, saved, file system) of a process that is still running
    (not a zombie); empty otherwise."""
    fields = _status(pid)
    if fields.get(b"State", b"").split()[:1] in ([], [b"Z"], [b"X"]):
        return set()
    return {int(x) for x in fields.get(b"Uid", b"").split()}


def kill_user(uid: int, rounds: int = 20) -> int:
    """Kill every process running as ``uid`` (a child's private user); return how many.

    Nothing but the child and what it started ever runs as that user, so this reaches
    every one of them, however it detached itself. The processes are frozen first, so
    that none can start another between two sweeps.
    """
    if uid <= 0 or uid in (os.getuid(), os.geteuid()):
        raise ValueError(f"refusing to kill every process of user {uid}")
    killed = 0
    for _ in range(rounds):
        try:
            entries = [e for e in os.listdir("/proc") if e.isdigit()]
        except OSError:
            return killed
        victims = [int(e) for e in entries if uid in _live_uids(e)]
        if not victims:
            break
        _freeze_then_kill(victims)
        killed += len(victims)
    return killed
