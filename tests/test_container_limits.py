"""The limits the Gradescope entry point reads and keeps: the container's cgroup memory and
CPU limits (v1 and v2), the whole-submission time budget inside Gradescope's timeout, the
watchdog that writes a valid results.json should grading still be running near the
timeout, and the ``timeout_minutes`` setting."""

import json

import pytest

from autograder.build.fixtures import DEFAULT_DIR, stage_tests
from autograder.channels.gradescope.entry import LATE, Watchdog
from autograder.channels.gradescope.settings import GradescopeSettings, settings_from_dict
from autograder.course import get_stage
from autograder.engine.container import ContainerLimits, container_limits, grading_budget


def fake_proc(tmp_path, mountinfo: str, cgroup: str):
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "mountinfo").write_text(mountinfo)
    (proc / "cgroup").write_text(cgroup)
    return proc


def test_cgroup_v1_limits_are_read_at_the_tightest_level(tmp_path):
    memory, cpu = tmp_path / "memory", tmp_path / "cpu"
    (memory / "docker" / "abc").mkdir(parents=True)
    (cpu / "docker" / "abc").mkdir(parents=True)
    (memory / "memory.limit_in_bytes").write_text(str(1 << 62))  # the root: no limit
    (memory / "docker" / "memory.limit_in_bytes").write_text(str(768 * 2**20))
    (memory / "docker" / "abc" / "memory.limit_in_bytes").write_text(str(2 * 2**30))
    (cpu / "docker" / "abc" / "cpu.cfs_quota_us").write_text("50000")
    (cpu / "docker" / "abc" / "cpu.cfs_period_us").write_text("100000")
    (cpu / "cpu.cfs_quota_us").write_text("-1")
    (cpu / "cpu.cfs_period_us").write_text("100000")
    proc = fake_proc(
        tmp_path,
        f"30 25 0:26 / {memory} rw,relatime - cgroup cgroup rw,memory\n31 25 0:27 / {cpu} rw,relatime - cgroup cgroup rw,cpu,cpuacct\n",
        "4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n",
    )
    assert container_limits(proc) == ContainerLimits(768 * 2**20, 0.5)


def test_cgroup_v2_limits_and_none(tmp_path):
    root = tmp_path / "unified"
    (root / "job").mkdir(parents=True)
    (root / "job" / "memory.max").write_text("805306368\n")
    (root / "job" / "cpu.max").write_text("50000 100000\n")
    proc = fake_proc(tmp_path, f"40 25 0:30 / {root} rw - cgroup2 cgroup2 rw\n", "0::/job\n")
    assert container_limits(proc) == ContainerLimits(805306368, 0.5)
    (root / "job" / "memory.max").write_text("max\n")
    (root / "job" / "cpu.max").write_text("max 100000\n")
    assert container_limits(proc) == ContainerLimits(None, None)
    assert container_limits(tmp_path / "nowhere") == ContainerLimits()


def test_the_budget_keeps_time_to_write_results():
    assert grading_budget(600) == 525
    assert grading_budget(600, elapsed=40) == 485
    with pytest.raises(ValueError, match="leaves no time to grade"):
        grading_budget(60, elapsed=10)


def test_timeout_minutes_is_a_setting_within_gradescopes_range():
    assert GradescopeSettings("01_tokenisation").timeout_minutes == 10
    loaded = settings_from_dict("01_tokenisation", {"timeout_minutes": 20})
    assert loaded.timeout_minutes == 20 and json.loads(loaded.to_json())["timeout_minutes"] == 20
    for bad in (1, 41, True, "10"):
        with pytest.raises(ValueError, match="timeout_minutes"):
            settings_from_dict("01_tokenisation", {"timeout_minutes": bad})


def test_the_watchdog_writes_a_valid_zero_and_the_real_results_win(tmp_path):
    tests = stage_tests(get_stage("01_tokenisation"), DEFAULT_DIR)
    target = tmp_path / "results" / "results.json"
    dog = Watchdog(target, tests, GradescopeSettings("01_tokenisation"), 0.0).start()
    dog._timer.join(10)
    late = json.loads(target.read_text())
    assert late["score"] == 0 and [t["name"] for t in late["tests"]] == [c.key for c in tests.cases]
    assert all(LATE in t["output"] for t in late["tests"])
    assert "did not finish within the time Gradescope allows" in late["output"]
    dog.write({"score": 3, "tests": []})
    assert json.loads(target.read_text()) == {"score": 3, "tests": []}
    quiet = Watchdog(tmp_path / "other.json", tests, GradescopeSettings("01_tokenisation"), 30.0).start()
    quiet.write({"score": 1, "tests": []})
    quiet._timer.join(10)  # cancelled: the timer's thread ends without writing
    assert not quiet._timer.is_alive() and json.loads((tmp_path / "other.json").read_text())["score"] == 1
