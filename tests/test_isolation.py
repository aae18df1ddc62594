"""What the child running student code can see and do, at each isolation level.

A probe cell (tests/probe_cell.py) reports its user, capabilities, what it can read
and write, its limits and what happens when it pushes them. The strongest level runs
on the real project; the fallbacks run on a copy of the engine (the ``uid`` level
changes file permissions of the project it protects) and, when the tests run as root,
once as an ordinary user, as an instructor without root would.
"""

import ctypes
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import probe_cell
import pytest
from support import submission

from autograder.build.fixtures import DEFAULT_DIR, stage_tests
from autograder.course import ROOT, get_stage
from autograder.engine import processes, sandbox
from autograder.engine.judge import judge_case
from autograder.engine.runner import Limits, run_submission

STAGE = "01_tokenisation"
MB = 1 << 20
LIMITS = Limits(
    case_timeout=5.0, cell_timeout=20.0, grace=1.0, max_processes=16, file_bytes=MB, disk_bytes=8 * MB, open_files=64
)
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")


def _two_cases() -> tuple:
    """The stage's tests and the keys of its first two public cases."""
    tests = get_stage(STAGE).tests()
    return tests, [c.key for c in tests.cases[:2]]


def _secrets(project: Path) -> list[str]:
    return [
        str(project / "assignments" / STAGE / "hidden.py"),
        str(project / "autograder" / "engine" / "judge.py"),
        str(project / "assignments" / STAGE / "reference.py"),
        str(project / "release" / "fixtures" / f"{STAGE}.json"),
        str(project / "autograder"),
    ]


@pytest.fixture(scope="module")
def confined(tmp_path_factory):
    """The probe run at the strongest level the platform allows, on the real project."""
    folder = tmp_path_factory.mktemp("isolation")
    out = folder / "out"
    out.mkdir()
    other = submission(STAGE, folder, "another-student")
    read = _secrets(ROOT) + [str(DEFAULT_DIR), str(other), str(folder), str(out)]
    nb = submission(
        STAGE,
        folder,
        "probe",
        extra_cells=[probe_cell.cell(read, [str(out), str(folder), "/tmp", "."], LIMITS.disk_bytes)],
    )
    tests, keys = _two_cases()
    outcome = run_submission(nb, tests, LIMITS, keys)
    return outcome, probe_cell.facts(outcome.output), read, out


def test_the_child_gets_a_private_user_no_privileges_and_no_network(confined):
    outcome, facts, _, _ = confined
    level = outcome.isolation["level"]
    assert level == sandbox.best_level()
    if level in ("namespaces", "uid"):
        assert facts["uid"] == facts["euid"] == facts["gid"] == outcome.isolation["uid"] >= sandbox.UID_BASE
        assert facts["groups"] == [] and int(facts["cap_eff"], 16) == 0 and facts["no_new_privs"] == "1"
    assert facts["can_chroot"] is (outcome.isolation["level"] == "none" and os.geteuid() == 0)
    if outcome.isolation["offline"]:
        assert facts["network"] is False
    assert facts["cwd"] == outcome.isolation["workdir"]


def test_the_child_reads_nothing_of_value_and_writes_only_its_own_folder(confined):
    outcome, facts, read, out = confined
    if outcome.isolation["level"] in ("namespaces", "userns"):
        assert facts["readable"] == [], facts["readable"]
        assert facts["writable"] == ["/tmp", "."]  # its own, private, size-capped folders
        assert facts["processes_seen"] is None or facts["processes_seen"] <= 3  # itself; no grader, no other submission
    if outcome.isolation["level"] != "none":
        assert not (out / "planted.txt").exists()


def test_the_limits_hold(confined):
    outcome, facts, _, _ = confined
    assert facts["rlimits"]["RLIMIT_NOFILE"] == LIMITS.open_files and facts["open_files"] < LIMITS.open_files
    assert facts["rlimits"]["RLIMIT_FSIZE"] == LIMITS.file_bytes and facts["big_file"] == "OSError"
    assert facts["rlimits"]["RLIMIT_AS"] == LIMITS.memory_bytes and facts["rlimits"]["RLIMIT_CPU"] == LIMITS.cpu_seconds
    assert (
        facts["oom_score_adj"] == 1000 or outcome.isolation["level"] == "userns"
    )  # the first to go when memory runs out
    if outcome.isolation["uid"]:
        assert facts["rlimits"]["RLIMIT_NPROC"] == LIMITS.max_processes and facts["forked"] < LIMITS.max_processes
    if outcome.isolation["level"] in ("namespaces", "userns"):
        assert facts["disk_written"] <= LIMITS.disk_bytes


def test_cpu_time_is_capped(tmp_path):
    nb = submission(STAGE, tmp_path, "spin", extra_cells=["import time\nx = 0\nwhile True:\n    x += 1"])
    tests, keys = _two_cases()
    outcome = run_submission(nb, tests, Limits(cpu_seconds=1, cell_timeout=60.0, grace=1.0), keys)
    assert any("ended the process" in m for m in outcome.cell_errors.values()), outcome.cell_errors
    assert not outcome.errors


@ROOT_ONLY
def test_kill_user_kills_every_process_of_a_child_user_and_refuses_root():
    uid = sandbox.UID_BASE + 7
    ready, told = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            if os.fork() == 0:  # a grandchild, detached from the one we know
                os.setsid()
                os.write(told, b"g")
                os.execv("/bin/sleep", ["sleep", "60"])
            os.write(told, b"c")
            os.execv("/bin/sleep", ["sleep", "60"])
        finally:
            os._exit(1)
    os.close(told)
    started = b""
    while len(started) < 2:
        chunk = os.read(ready, 2)
        if not chunk:
            break
        started += chunk
    os.close(ready)
    assert sorted(started) == sorted(b"cg"), "the processes to kill did not start"
    try:
        assert processes.kill_user(uid) >= 2
        os.waitpid(pid, 0)
        assert processes.kill_user(uid) == 0
    finally:
        processes.reap_strays()
    for bad in (0, os.getuid()):
        with pytest.raises(ValueError):
            processes.kill_user(bad)


def test_a_forked_process_becomes_a_subreaper_of_its_own():
    """The flag is not inherited by fork: a process forked from the grader (a subreaper, as
    the tests' session makes it) that asks to become one is made one, not told it is."""
    assert processes.become_subreaper()
    pid = os.fork()
    if pid == 0:
        try:
            made = processes.become_subreaper()
            flag = ctypes.c_int(0)
            ctypes.CDLL(None).prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
            os._exit(0 if made and flag.value == 1 else 1)
        finally:
            os._exit(2)
    assert os.waitpid(pid, 0)[1] == 0


# a process detached from the child (double fork, setsid) that would sleep for ten minutes
SLEEPER = """
import os
if os.fork() == 0:
    try:
        os.setsid()
        if os.fork() == 0:
            print("SLEEPER", os.getpid(), flush=True)
            os.execv("/bin/sleep", ["sleep", "600"])
    finally:
        os._exit(0)
os.wait()
"""


@pytest.mark.parametrize("level", ["none", None])
def test_a_detached_process_is_killed_when_grading_ends(tmp_path, level):
    """The child is a subreaper: the sleeper is re-parented to it and killed with it (at the level
    ``none``, where the child has no user of its own to kill, and at the best level here)."""
    nb = submission(STAGE, tmp_path, "sleeper", extra_cells=[SLEEPER])
    tests, keys = _two_cases()
    outcome = run_submission(nb, tests, Limits(case_timeout=5.0, cell_timeout=20.0, grace=1.0, sandbox=level), keys)
    assert set(outcome.values) == set(keys), outcome.errors
    sleepers = [int(line.split()[1]) for line in outcome.output.splitlines() if line.startswith("SLEEPER")]
    assert len(sleepers) == 1, outcome.output
    fields = processes._stat_fields(sleepers[0])
    assert fields is None or fields[0] == "Z", f"the detached sleeper survived grading: {fields}"


# a cell forking a clone of the child that goes on into the grading loop (no os._exit), with an
# answer of its own; the child itself waits for the clone to end before it goes on
CLONE = """
import os
_clone = os.fork()
if _clone:
    os.waitpid(_clone, 0)
else:
    def build_vocab(text):
        return {}, {}
"""


def test_a_clone_of_the_child_neither_reports_nor_takes_the_parents_words(tmp_path):
    """The clone ends as soon as it would report (or read the control pipe): the child's own
    answers are graded, a public test's and a hidden test's (whose suite comes on the control
    pipe), and not the clone's."""
    tests = stage_tests(get_stage(STAGE))
    cases = [next(c for c in tests.cases if c.qid == "build_vocab" and c.public is public) for public in (True, False)]
    nb = submission(STAGE, tmp_path, "clone", extra_cells=[CLONE])
    outcome = run_submission(nb, tests, LIMITS, [c.key for c in cases])
    for case in cases:
        verdict = judge_case(case, outcome, tests.fixtures)
        assert verdict.passed, (verdict.message, outcome.errors, outcome.cell_errors)


# ---------------------------------------------------------------- fallbacks, on a copy of the engine

SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from autograder.engine.runner import Limits, run_submission
from autograder.engine.suites import StageTests
folder = Path(sys.argv[1]) / "assignments" / sys.argv[2]
tests = StageTests.load(sys.argv[2], folder / "public.py", folder / "hidden.py")
keys = [c.key for c in tests.cases[:2]]
for level in sys.argv[4:]:  # one grading process (one fork server) for every level asked
    limits = Limits(case_timeout=5.0, cell_timeout=20.0, grace=1.0, max_processes=16, file_bytes=2**20, disk_bytes=8 * 2**20, sandbox=level)
    outcome = run_submission(Path(sys.argv[3]), tests, limits, keys)
    print(json.dumps({"isolation": outcome.isolation, "output": outcome.output, "errors": outcome.errors, "cells": outcome.cell_errors}))
"""


@pytest.fixture
def engine_copy():
    """Makes world-readable copies of the engine, with a fixture and a solution beside it, and a probe notebook."""
    made: list[Path] = []
    root_mode = stat.S_IMODE(os.stat("/root").st_mode) if os.path.isdir("/root") else None

    def make() -> tuple[Path, Path]:
        base = Path(tempfile.mkdtemp(prefix="gptcourse-engine-copy-"))
        made.append(base)
        project = base / "project"
        shutil.copytree(ROOT / "autograder", project / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(ROOT / "solutions", project / "solutions", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(
            ROOT / "assignments" / STAGE, project / "assignments" / STAGE, ignore=shutil.ignore_patterns("__pycache__")
        )
        (project / "release" / "fixtures").mkdir(parents=True)
        shutil.copy(DEFAULT_DIR / f"{STAGE}.json", project / "release" / "fixtures")
        notebooks = base / "notebooks"
        notebooks.mkdir()
        nb = submission(
            STAGE, notebooks, "probe", extra_cells=[probe_cell.cell(_secrets(project), [str(project), "."], 8 * MB)]
        )
        for path in [base, *base.rglob("*")]:
            path.chmod(stat.S_IMODE(path.stat().st_mode) | 0o755 if path.is_dir() else 0o644)
        return project, nb

    yield make
    if root_mode is not None:
        os.chmod("/root", root_mode)  # the uid fallback lets others pass through the folders above Python
    for base in made:
        shutil.rmtree(base, ignore_errors=True)


def _run_copy(project: Path, nb: Path, levels: list[str], user: int | None = None) -> list[tuple[dict, dict]]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(project.parent), "LANG": "C.UTF-8"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(project), STAGE, str(nb), *levels],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(project.parent),
        user=user,
        group=user,
        extra_groups=[] if user else None,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reports = [json.loads(line) for line in done.stdout.strip().splitlines()[-len(levels) :]]
    return [(report, probe_cell.facts(report["output"])) for report in reports]


def _user_namespaces_allowed() -> bool:
    pid = os.fork()
    if pid == 0:
        os._exit(0 if sandbox._unshare(sandbox.CLONE_NEWUSER | sandbox.CLONE_NEWNS) else 1)
    return os.waitpid(pid, 0)[1] == 0


@ROOT_ONLY
def test_fallbacks_for_root_without_mount_namespaces(engine_copy):
    project, nb = engine_copy()
    (userns, userns_facts), (uid, uid_facts) = _run_copy(
        project, nb, ["userns", "uid"]
    )  # uid last: it changes the copy
    if _user_namespaces_allowed():
        assert userns["isolation"]["level"] == "userns" and userns["isolation"]["offline"]
        assert (
            userns_facts["readable"] == [] and userns_facts["network"] is False and userns_facts["can_chroot"] is False
        )
    else:
        assert userns["isolation"]["level"] == "none"
    assert (
        uid["isolation"]["level"] == "uid"
        and uid_facts["uid"] >= sandbox.UID_BASE
        and int(uid_facts["cap_eff"], 16) == 0
    )
    assert uid_facts["readable"] == [] and uid_facts["writable"] == ["."] and uid_facts["can_chroot"] is False
    assert uid_facts["rlimits"]["RLIMIT_NPROC"] == 16 and uid_facts["forked"] < 16
    assert not userns["errors"] and not uid["errors"], (userns["errors"], uid["errors"])
    assert all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in project.iterdir())


@ROOT_ONLY
def test_an_ordinary_user_gets_the_best_the_platform_allows(engine_copy):
    project, nb = engine_copy()
    python_dirs = [d for d in Path(os.path.realpath(sys.base_prefix)).parents if d != Path("/")]
    blocked = [d for d in python_dirs if not stat.S_IMODE(d.stat().st_mode) & 0o001]
    for folder in blocked:
        folder.chmod(stat.S_IMODE(folder.stat().st_mode) | 0o001)  # let the ordinary user run this Python
    try:
        (best, facts), (plain, plain_facts) = _run_copy(project, nb, ["namespaces", "none"], user=sandbox.NOBODY)
    finally:
        for folder in blocked:
            folder.chmod(stat.S_IMODE(folder.stat().st_mode) & ~0o001)
    assert facts["uid"] == plain_facts["uid"] == sandbox.NOBODY and best["isolation"]["level"] in ("userns", "none"), (
        best["isolation"]
    )
    if best["isolation"]["level"] == "userns":
        assert facts["readable"] == [] and facts["network"] is False
    assert not best["errors"] and not plain["errors"], (best["errors"], plain["errors"])
    assert plain["isolation"]["level"] == "none" and plain_facts["cwd"] == plain["isolation"]["workdir"]
    assert facts["forked"] < 100 and plain_facts["forked"] < 100  # the cap holds for an ordinary user too


def test_results_are_written_atomically_and_never_through_a_planted_link(tmp_path):
    from autograder.engine.results import write_atomic

    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    target = tmp_path / "out" / "results.json"
    target.parent.mkdir()
    target.symlink_to(victim)
    write_atomic(target, '{"score": 1}\n')
    assert victim.read_text() == "untouched"
    assert not target.is_symlink() and target.read_text() == '{"score": 1}\n'
    assert [p.name for p in target.parent.iterdir()] == ["results.json"]  # no temporary file left behind


@ROOT_ONLY
def test_a_python_environment_under_tmp_stays_importable(engine_copy):
    """A fresh clone (as on CI) has its venv under /tmp, where the child gets a tmpfs of its own:
    the venv is bound on top of that tmpfs, so what the child imports late (``tqdm.auto``,
    ``torch._dynamo`` on the first optimiser step) is still there."""
    project, _ = engine_copy()
    base = Path(tempfile.mkdtemp(prefix="gptcourse-venv-", dir="/tmp"))
    try:
        venv = base / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        site = next(venv.glob("lib/python*/site-packages"))
        (site / "outer_env.pth").write_text("".join(p + "\n" for p in sys.path if p.endswith("site-packages")))
        (site / "gptcourse_late_import.py").write_text("VALUE = 42\n")
        late = "import gptcourse_late_import\nprint('LATE IMPORT', gptcourse_late_import.VALUE)\n"
        nb = submission(STAGE, project.parent / "notebooks", "late", extra_cells=[late])
        nb.chmod(0o644)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(project.parent), "LANG": "C.UTF-8"}
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-c", SCRIPT, str(project), STAGE, str(nb), "namespaces"],
            capture_output=True,
            text=True,
            env=env,
            cwd=str(project.parent),
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads(done.stdout.strip().splitlines()[-1])
        assert "LATE IMPORT 42" in report["output"], (report["cells"], report["output"][-2000:])
        assert not report["cells"] and not report["errors"], (report["cells"], report["errors"])
    finally:
        shutil.rmtree(base, ignore_errors=True)


_GRADING_PROCESS = """
import os, sys
from autograder.engine.runner import fork_server
server = fork_server()
out, events, control = os.pipe(), os.pipe(), os.pipe()
server.launch({"workdir": sys.argv[1], "env": {}}, [out[1], events[1], control[0]])
os.close(control[1])  # the job reads no message and ends
print(server._workdir, flush=True)
sys.stdin.read()  # until the test has seen the folder: it then closes stdin (this process exits) or kills it
"""


@pytest.mark.parametrize("end", ["exits", "killed"])
def test_the_fork_servers_folder_goes_with_the_grading_process(end, tmp_path):
    # a grading process that exits removes the folder (atexit); one that is killed runs no atexit,
    # and the server, seeing its socket closed, removes the folder itself
    grading = subprocess.Popen(
        [sys.executable, "-c", _GRADING_PROCESS, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    folder = Path(grading.stdout.readline().strip())
    assert folder.name.startswith("gptcourse-forkserver-") and folder.is_dir()
    if end == "killed":
        grading.kill()
    else:
        grading.stdin.close()
    grading.wait(timeout=60)
    for _ in range(600):
        if not folder.exists():
            break
        time.sleep(0.1)
    assert not folder.exists(), f"{folder} outlived the grading process that {end}"
