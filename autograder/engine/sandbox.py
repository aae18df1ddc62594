"""Confining the child process that runs student code (Linux; no-op elsewhere).

``enter`` runs in the child after it has imported everything the grader needs and
before any student code runs. What it achieves depends on what the platform allows,
best first:

- **namespaces** (the grader runs as root): a new mount, network and IPC namespace.
  The child's filesystem is rebuilt from scratch: the system folders, the Python
  installation and the virtual environment, read-only; a fresh ``/proc`` that shows
  only the child's own processes; a few device nodes; and an empty, size-capped
  temporary working directory. The project (engine, hidden tests, fixtures, reference
  solutions), the results folder and every other submission are simply not there.
  Then the child becomes a user of its own (``child_uid``), with no capabilities and
  ``no_new_privs``, so that it cannot undo any of this and the kernel enforces its
  process limit.
- **uid** (root, but mount namespaces refused, as in a container without
  ``CAP_SYS_ADMIN``): the same unprivileged user and limits in a private working
  directory; the files of the project are made unreadable to other users
  (``protect_project``), the folders above the Python installation passable
  (``open_python_path``); no network where a network namespace can still be made.
  Anything else that other users may read (other submissions, for one) stays readable.
- **userns** (an ordinary user, unprivileged user namespaces allowed): the same
  filesystem as *namespaces*, without ``/proc``, inside a user namespace whose
  capabilities are dropped before student code runs.
- **none** (an ordinary user, no user namespaces): a private working directory and a
  clean environment only; the child can read what the grading user can read.

``GPTCOURSE_SANDBOX`` (``namespaces``, ``uid``, ``userns`` or ``none``) asks for a
level at most; tests use it to exercise the fallbacks.
"""

import ctypes
import errno
import os
import platform
import stat
import sys
from pathlib import Path

LEVELS = ("namespaces", "uid", "userns", "none")
UID_BASE = 0x40000000  # child_uid(pid) = UID_BASE + pid: unique among living processes
NOBODY = 65534

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
MNT_DETACH = 0x2
MS_RELATIME, MS_NOATIME, MS_NODIRATIME = 0x200000, 0x400, 0x800
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 4, 24, 38
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41, "riscv64": 41}
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
DEVICES = ("null", "zero", "full", "random", "urandom")


class SandboxError(OSError):
    """A step of building the sandbox failed (the caller falls back to a weaker level)."""


def child_uid(pid: int) -> int:
    """The private user id of the child with process id ``pid``."""
    return UID_BASE + pid


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _call(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise SandboxError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(text: str | None) -> bytes | None:
        return text.encode() if text is not None else None

    _call(_libc().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def _unshare(flags: int) -> bool:
    try:
        return _libc().unshare(flags) == 0
    except (OSError, AttributeError):
        return False


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def readable_paths(project: str) -> list[str]:
    """Folders the child may read: the system's, and Python's outside ``project`` (plus its venv)."""
    project = os.path.realpath(project)
    wanted = [p for p in SYSTEM_DIRS if os.path.isdir(p) and not os.path.islink(p)]
    python = {os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix)}
    python |= {os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)}
    for path in sorted(python, key=len):
        if _within(path, project) and not _within(path, os.path.realpath(sys.prefix)):
            continue  # the engine and the tests: never
        if not any(_within(path, w) for w in wanted):
            wanted.append(path)
    return wanted


def _kept_flags(path: str) -> int:
    """The flags of the mount holding ``path`` that a user namespace may not clear."""
    have = os.statvfs(path).f_flag
    flags = 0
    for st_flag, ms_flag in (
        (os.ST_NOSUID, MS_NOSUID),
        (os.ST_NODEV, MS_NODEV),
        (os.ST_NOEXEC, MS_NOEXEC),
        (os.ST_RDONLY, MS_RDONLY),
    ):
        if have & st_flag:
            flags |= ms_flag
    for st_flag, ms_flag in (
        (os.ST_NOATIME, MS_NOATIME),
        (os.ST_NODIRATIME, MS_NODIRATIME),
        (os.ST_RELATIME, MS_RELATIME),
    ):
        if have & st_flag:
            flags |= ms_flag
    return flags


def _bind(source: str, root: str, writable: bool = False, flags: int = MS_NOSUID | MS_NODEV) -> None:
    target = root + source
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "a"):
            pass
    _mount(source, target, None, MS_BIND | MS_REC)
    flags |= _kept_flags(target) | (0 if writable else MS_RDONLY)
    _mount(None, target, None, MS_REMOUNT | MS_BIND | flags)


def _hide(path: str, root: str, keep: str) -> None:
    """Cover ``path`` (which a bound folder holds) with an empty folder, ``keep`` bound back in."""
    _mount("tmpfs", root + path, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755")
    if _within(keep, path):
        _bind(keep, root)
    _mount(None, root + path, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _pivot(root: str) -> None:
    number = PIVOT_ROOT.get(platform.machine())
    old = root + "/.old-root"
    os.makedirs(old)
    if number is not None and _libc().syscall(number, root.encode(), old.encode()) == 0:
        os.chdir("/")
        _call(_libc().umount2(b"/.old-root", MNT_DETACH), "umount the old root")
        os.rmdir("/.old-root")
    else:
        os.chroot(root)
        os.chdir("/")


def _mount_proc(target: str) -> None:
    """A /proc that shows the child's own processes only, else the grader's (other users' are closed to it)."""
    for options in ("hidepid=invisible", "hidepid=2"):
        try:
            return _mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, options)
        except SandboxError:
            pass
    _mount("/proc", target, None, MS_BIND | MS_REC)


def build_root(workdir: str, project: str, uid: int, gid: int, disk_bytes: int, with_proc: bool) -> None:
    """Replace this mount namespace's filesystem by the child's (see the module docstring)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    root = workdir  # an empty folder the parent made: the new root is mounted on it
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=2m,mode=0755")
    # /tmp first: a project or venv under /tmp (a fresh clone, CI) is bound on top of it, not hidden by it
    os.makedirs(root + "/tmp")
    _mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={disk_bytes // 4},mode=1777")
    readable = readable_paths(project)
    for path in readable:
        _bind(path, root)
    project = os.path.realpath(project)
    if any(_within(project, p) for p in readable):
        _hide(project, root, keep=os.path.realpath(sys.prefix))
    for link in SYSTEM_DIRS:
        if os.path.islink(link):
            os.symlink(os.readlink(link), root + link)
    os.makedirs(root + "/dev")
    _mount("tmpfs", root + "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755")
    for name in DEVICES:
        _bind("/dev/" + name, root, writable=True, flags=MS_NOSUID | MS_NOEXEC)
    os.makedirs(root + "/dev/shm")
    _mount("tmpfs", root + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"size={disk_bytes // 4},mode=1777")
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        os.symlink(target, f"{root}/dev/{name}")
    _mount(None, root + "/dev", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
    os.makedirs(root + "/proc")
    if with_proc:
        _mount_proc(root + "/proc")
    else:  # no process table (it would open other processes of this user), only what libraries read
        for name in ("cpuinfo", "meminfo", "stat"):
            _bind("/proc/" + name, root, flags=MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.makedirs(root + workdir, exist_ok=True)
    _mount("tmpfs", root + workdir, "tmpfs", MS_NOSUID | MS_NODEV, f"size={disk_bytes},mode=0700,uid={uid},gid={gid}")
    _pivot(root)
    _mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _drop_bounding_set() -> None:
    libc = _libc()
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == errno.EINVAL:
            break  # past the last capability this kernel knows


def _drop_capabilities() -> None:
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)  # this process
    data = (ctypes.c_uint32 * 6)()
    _call(_libc().capset(header, data), "capset")


def _no_new_privileges() -> None:
    libc = _libc()
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)


def protect(paths: list[Path | str]) -> None:
    """Make files and folders readable by their owner only (the permission-based fallback).

    Gradescope's entry point may call it on ``/autograder/source`` and
    ``/autograder/submission_metadata.json`` before grading; the child does it for the
    project when it has to run without a mount namespace.
    """
    for path in map(str, paths):
        if not os.path.lexists(path) or os.path.islink(path):
            continue
        os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) & 0o700)


def protect_project(project: str) -> None:
    """``protect`` every top-level entry of ``project`` except the one holding the venv."""
    venv = os.path.realpath(sys.prefix)
    for entry in os.scandir(project):
        if not _within(venv, os.path.realpath(entry.path)):
            protect([entry.path])


def open_python_path() -> list[str]:
    """Let other users pass through (never list) the folders above the Python installation.

    Without a mount namespace the child reaches Python's files through the real
    filesystem; an installation under ``/root`` (Miniforge on Gradescope, pyenv) is
    otherwise out of its reach. Returns the folders that were changed.
    """
    changed = []
    for prefix in {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix)}:
        folder = os.path.dirname(prefix)
        while folder not in ("/", ""):
            mode = stat.S_IMODE(os.stat(folder).st_mode)
            if not mode & 0o001:
                os.chmod(folder, mode | 0o001)
                changed.append(folder)
            folder = os.path.dirname(folder)
    return changed


def _private_workdir(workdir: str, uid: int) -> str:
    own = os.path.join(workdir, f"child-{os.getpid()}")
    os.mkdir(own, 0o700)
    os.chown(own, uid, uid)
    return own


def _become(uid: int) -> int:
    """Drop root for ``uid`` (or ``nobody`` where the platform maps no such user); return the uid."""
    _drop_bounding_set()
    os.setgroups([])
    for candidate in (uid, NOBODY):
        try:
            os.setresgid(candidate, candidate, candidate)
            os.setresuid(candidate, candidate, candidate)
            break
        except OSError:
            if candidate == NOBODY:
                raise
    _no_new_privileges()
    return os.getuid()


def _detach(path: str) -> None:
    try:
        _libc().umount2(path.encode(), MNT_DETACH)
    except OSError:
        pass


def _as_root(workdir: str, project: str, disk_bytes: int, ceiling: str) -> dict:
    uid = child_uid(os.getpid())
    offline = _unshare(CLONE_NEWNET)
    fallback = None
    if ceiling == "namespaces" and _unshare(CLONE_NEWNS | CLONE_NEWIPC):
        try:
            build_root(workdir, project, uid, uid, disk_bytes, with_proc=True)
            os.chdir(workdir)
            return {"level": "namespaces", "uid": _become(uid), "offline": offline, "workdir": workdir}
        except (OSError, ValueError) as exc:  # kept: the report says why the child got a weaker level
            fallback = f"namespaces failed: {type(exc).__name__}: {exc}"
            _detach(workdir)
    protect_project(project)
    open_python_path()
    own = _private_workdir(workdir, uid)
    os.chdir(own)
    return _level("uid", _become(uid), offline, own, fallback)


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def _as_user(workdir: str, project: str, disk_bytes: int) -> dict:
    uid, gid = os.getuid(), os.getgid()
    if not _unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC):
        os.chdir(workdir)
        _no_new_privileges()
        return {"level": "none", "uid": None, "offline": False, "workdir": workdir}
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    level, fallback = "userns", None
    try:
        build_root(workdir, project, uid, gid, disk_bytes, with_proc=False)
    except (OSError, ValueError) as exc:  # kept: the report says why the child got a weaker level
        fallback = f"userns failed: {type(exc).__name__}: {exc}"
        _detach(workdir)
        level = "none"
    os.chdir(workdir)
    _drop_bounding_set()
    _drop_capabilities()
    _no_new_privileges()
    return _level(level, None, True, workdir, fallback)


def _level(level: str, uid: int | None, offline: bool, workdir: str, fallback: str | None) -> dict:
    """What ``enter`` reports; ``fallback`` says why a stronger level failed, when one did."""
    doc = {"level": level, "uid": uid, "offline": offline, "workdir": workdir}
    if fallback:
        doc["fallback"] = fallback
    return doc


def best_level() -> str:
    """The level ``enter`` reaches here (tried in a throwaway process): what tests and reports expect."""
    if not sys.platform.startswith("linux"):
        return "none"
    flags = CLONE_NEWNS | CLONE_NEWNET if os.geteuid() == 0 else CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET
    pid = os.fork()
    if pid == 0:
        os._exit(0 if _unshare(flags) else 1)
    allowed = os.waitpid(pid, 0)[1] == 0
    if os.geteuid() == 0:
        return "namespaces" if allowed else "uid"
    return "userns" if allowed else "none"


def enter(workdir: str, project: str, disk_bytes: int, ceiling: str = "namespaces") -> dict:
    """Confine this process as well as the platform allows, ``ceiling`` at most; say how.

    Returns ``{"level", "uid" (the user the child now runs as, None when unchanged),
    "offline" (True when the child has no network), "workdir" (where to work)}``, and
    ``"fallback"`` (why a stronger level failed) when one was tried and failed.
    """
    if ceiling not in LEVELS:
        raise ValueError(f"unknown sandbox level {ceiling!r}; choose one of {', '.join(LEVELS)}")
    if not sys.platform.startswith("linux") or ceiling == "none":
        os.chdir(workdir)
        return {"level": "none", "uid": None, "offline": False, "workdir": workdir}
    if os.geteuid() == 0 and ceiling in ("namespaces", "uid"):
        return _as_root(workdir, project, disk_bytes, ceiling)
    return _as_user(workdir, project, disk_bytes)
