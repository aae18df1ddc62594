"""A notebook cell that reports what the child process running student code can do.

It prints one line, ``FACTS {json}``, which tests read from the captured output: who it
runs as, what it can read and write, its limits, and what happens when it pushes them.
"""

import json
import re

SOURCE = r"""
import json, os, resource, socket, sys

def _probe(paths_to_read, paths_to_write, disk_bytes):
    facts = {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "groups": os.getgroups(), "cwd": os.getcwd()}
    try:
        status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
        facts["cap_eff"] = status["CapEff"].strip()
        facts["no_new_privs"] = status["NoNewPrivs"].strip()
    except OSError:
        facts["cap_eff"] = facts["no_new_privs"] = None
    facts["readable"] = []
    for path in paths_to_read:
        try:
            if os.path.isdir(path):
                os.listdir(path)
            else:
                open(path, "rb").read(1)
            facts["readable"].append(path)
        except OSError:
            pass
    facts["writable"] = []
    for path in paths_to_write:
        try:
            with open(os.path.join(path, "planted.txt"), "w") as handle:
                handle.write("planted")
            facts["writable"].append(path)
        except OSError:
            pass
    try:
        facts["processes_seen"] = sum(name.isdigit() for name in os.listdir("/proc"))
    except OSError:
        facts["processes_seen"] = None
    try:
        socket.create_connection(("1.1.1.1", 53), timeout=1).close()
        facts["network"] = True
    except OSError:
        facts["network"] = False
    try:
        facts["oom_score_adj"] = int(open("/proc/self/oom_score_adj").read())
    except OSError:
        facts["oom_score_adj"] = None
    facts["rlimits"] = {name: resource.getrlimit(getattr(resource, name))[0]
                        for name in ("RLIMIT_NPROC", "RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_NOFILE", "RLIMIT_FSIZE")}
    handles = []
    try:
        while len(handles) < 5000:
            handles.append(open(os.devnull))
    except OSError:
        pass
    facts["open_files"] = len(handles)
    for handle in handles:
        handle.close()
    try:
        with open("big.bin", "wb") as handle:
            handle.write(b"x" * (2 * resource.getrlimit(resource.RLIMIT_FSIZE)[0]))
        facts["big_file"] = "written"
    except (OSError, OverflowError, MemoryError, ValueError) as exc:
        facts["big_file"] = type(exc).__name__
    os.remove("big.bin") if os.path.exists("big.bin") else None
    written = 0
    try:
        for index in range(2 * (disk_bytes >> 20) + 2):
            with open(f"fill{index}.bin", "wb") as handle:
                handle.write(b"y" * (1 << 20))
            written += 1 << 20
    except OSError:
        pass
    facts["disk_written"] = written
    for index in range(2 * (disk_bytes >> 20) + 2):
        if os.path.exists(f"fill{index}.bin"):
            os.remove(f"fill{index}.bin")
    pid = os.fork()
    if pid == 0:  # a privileged operation, in a process of its own
        try:
            os.chroot(".")
            os._exit(0)
        except OSError:
            os._exit(1)
    facts["can_chroot"] = os.waitpid(pid, 0)[1] == 0
    forked = 0
    try:
        for _ in range(100):
            if os.fork() == 0:
                import time
                time.sleep(30)
                os._exit(0)
            forked += 1
    except OSError:
        pass
    facts["forked"] = forked
    print("FACTS " + json.dumps(facts), flush=True)

_probe(@READ@, @WRITE@, @DISK@)
"""


def cell(read: list[str], write: list[str], disk_bytes: int) -> str:
    """The probe cell, aimed at these paths."""
    return SOURCE.replace("@READ@", repr(read)).replace("@WRITE@", repr(write)).replace("@DISK@", repr(disk_bytes))


def facts(output: str) -> dict:
    """The facts the probe cell printed."""
    found = re.search(r"^FACTS (\{.*\})$", output, re.MULTILINE)
    if not found:
        raise AssertionError(f"the probe cell printed no facts:\n{output[-3000:]}")
    return json.loads(found.group(1))
