"""The CPU thread rule (autograder/threads.py) and where it is used: gptcourse train and
sample, the grader's default workers, the notebooks' harness cell. The cgroup files are
fake trees under tmp_path; the affinity mask and a busy process are real."""

import argparse
import doctest
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from autograder.build.notebooks import harness_module, harness_source
from autograder.course import get_stage
from autograder.kit import threads

ROOT = Path(__file__).resolve().parents[1]
NO_QUOTA = "/no/such/place"  # a root with no /proc and no cgroup files
MOUNTS_V2 = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
MOUNTS_V1 = (
    "25 23 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
    "32 25 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "33 25 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
)


@pytest.fixture(autouse=True)
def keep_torch_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def fake_tree(root: Path, cgroup: str, mountinfo: str, files: dict[str, str]) -> str:
    """Write /proc/self/cgroup, /proc/self/mountinfo and cgroup files under ``root``."""
    for name, text in {"proc/self/cgroup": cgroup, "proc/self/mountinfo": mountinfo, **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(root)


def test_doctests_are_true():
    result = doctest.testmod(threads)
    assert result.attempted >= 10 and result.failed == 0


# ------------------------------------------------------------------ cgroup quotas


def test_v2_quota_of_the_process_cgroup(tmp_path):
    root = fake_tree(
        tmp_path, "0::/user.slice/job\n", MOUNTS_V2, {"sys/fs/cgroup/user.slice/job/cpu.max": "150000 100000\n"}
    )
    assert threads.cgroup_cpu_quota(root) == 1.5
    assert threads.usable_cpus(root, affinity=8) == 1.5
    assert threads.thread_count(environ={}, root=root, affinity=8, busy=0.0) == 1  # floor(1.5)


def test_v2_max_means_no_quota_and_a_parent_quota_still_counts(tmp_path):
    files = {"sys/fs/cgroup/a/b/cpu.max": "max 100000\n", "sys/fs/cgroup/a/cpu.max": "300000 100000\n"}
    root = fake_tree(tmp_path, "0::/a/b\n", MOUNTS_V2, files)
    assert threads.cgroup_cpu_quota(root) == 3.0
    (tmp_path / "sys/fs/cgroup/a/cpu.max").write_text("max 100000\n")
    assert threads.cgroup_cpu_quota(root) is None
    assert threads.usable_cpus(root, affinity=6) == 6.0


def test_v1_quota_with_a_container_mount_root(tmp_path):
    # docker without a cgroup namespace: the cgroup is /docker/abc, mounted as the hierarchy's root
    mounts = MOUNTS_V1.replace("0:29 / /sys/fs/cgroup/cpu,cpuacct", "0:29 /docker/abc /sys/fs/cgroup/cpu,cpuacct")
    files = {
        "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "200000\n",
        "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
    }
    root = fake_tree(tmp_path, "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n", mounts, files)
    assert threads.cgroup_cpu_quota(root) == 2.0
    assert threads.thread_count(environ={}, root=root, affinity=64, busy=0.0) == 2


def test_v1_unlimited_and_half_a_cpu(tmp_path):
    files = {
        "sys/fs/cgroup/cpu,cpuacct/grader/cpu.cfs_quota_us": "-1\n",
        "sys/fs/cgroup/cpu,cpuacct/grader/cpu.cfs_period_us": "100000\n",
    }
    root = fake_tree(tmp_path, "4:cpu,cpuacct:/grader\n", MOUNTS_V1, files)
    assert threads.cgroup_cpu_quota(root) is None
    (tmp_path / "sys/fs/cgroup/cpu,cpuacct/grader/cpu.cfs_quota_us").write_text("50000\n")
    assert threads.cgroup_cpu_quota(root) == 0.5
    assert threads.thread_count(environ={}, root=root, affinity=4, busy=0.0) == 1  # at least 1
    assert threads.worker_count({}, root=root, affinity=4) == 1


def test_hybrid_layout_takes_the_v1_cpu_quota(tmp_path):
    mounts = MOUNTS_V1 + "41 25 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    files = {
        "sys/fs/cgroup/cpu,cpuacct/q/cpu.cfs_quota_us": "100000\n",
        "sys/fs/cgroup/cpu,cpuacct/q/cpu.cfs_period_us": "100000\n",
        "sys/fs/cgroup/unified/cgroup.procs": "",
    }
    root = fake_tree(tmp_path, "4:cpu,cpuacct:/q\n0::/\n", mounts, files)
    assert threads.cgroup_cpu_quota(root) == 1.0


@pytest.mark.parametrize(
    "cgroup, mountinfo, files",
    [
        (None, None, {}),  # no /proc at all (not Linux)
        ("0::/job\n", None, {}),  # no mountinfo
        ("0::/job\n", MOUNTS_V2, {}),  # cgroup v2 without cpu.max (the cpu controller is off)
        (
            "4:cpu,cpuacct:/q\n",
            MOUNTS_V1,
            {"sys/fs/cgroup/cpu,cpuacct/q/cpu.cfs_quota_us": "100000\n"},
        ),  # no period file
        ("0::/job\n", MOUNTS_V2, {"sys/fs/cgroup/job/cpu.max": "lots\n"}),  # unreadable content
        (
            "4:memory:/q\n",
            MOUNTS_V1,
            {"sys/fs/cgroup/cpu,cpuacct/q/cpu.cfs_quota_us": "100000\n"},
        ),  # not in a cpu hierarchy
    ],
)
def test_missing_or_odd_files_mean_no_quota(tmp_path, cgroup, mountinfo, files):
    if cgroup is not None:
        files = {"proc/self/cgroup": cgroup, **({"proc/self/mountinfo": mountinfo} if mountinfo else {}), **files}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert threads.cgroup_cpu_quota(str(tmp_path)) is None
    assert threads.usable_cpus(str(tmp_path), affinity=3) == 3.0


def test_this_machine_quota_is_read_from_the_real_files():
    usable = threads.usable_cpus()
    assert 0 < usable <= threads.affinity_cpus()


# ------------------------------------------------------------------ the rule


def test_overrides_win_in_order():
    env = {"GPTCOURSE_THREADS": "3", "OMP_NUM_THREADS": "5"}
    assert threads.thread_count(7, environ=env, root=NO_QUOTA, affinity=2, busy=0.0) == 7
    assert threads.thread_count(environ=env, root=NO_QUOTA, affinity=2, busy=0.0) == 3
    assert threads.thread_count(environ={"OMP_NUM_THREADS": "5"}, root=NO_QUOTA, affinity=2, busy=0.0) == 5
    assert threads.thread_count(environ={"OMP_NUM_THREADS": "4,2"}, root=NO_QUOTA, affinity=8, busy=0.0) == 4
    assert (
        threads.thread_count(environ={"GPTCOURSE_THREADS": " "}, root=NO_QUOTA, affinity=6, busy=0.0) == 6
    )  # blank: unset


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_an_invalid_gptcourse_threads_is_an_error(value):
    with pytest.raises(ValueError, match="GPTCOURSE_THREADS"):
        threads.thread_count(environ={"GPTCOURSE_THREADS": value}, root=NO_QUOTA, affinity=2, busy=0.0)


@pytest.mark.parametrize("value", [0, -2, True, 1.5])
def test_an_invalid_override_is_an_error(value):
    with pytest.raises(ValueError, match="positive whole number"):
        threads.thread_count(value)


@pytest.mark.parametrize("value", ["0", "auto", "-3"])
def test_an_invalid_omp_num_threads_is_ignored_with_a_warning(value):
    with pytest.warns(UserWarning, match="OMP_NUM_THREADS"):
        count = threads.thread_count(environ={"OMP_NUM_THREADS": value}, root=NO_QUOTA, affinity=3, busy=0.0)
    assert count == 3


@pytest.mark.parametrize(
    "mask, busy, expected",
    [
        (2, 0.0, 2),
        (2, 0.3, 2),
        (2, 0.6, 1),
        (2, 1.0, 1),
        (2, 2.0, 1),
        (8, 1.0, 7),
        (8, 2.4, 6),
        (1, 0.0, 1),
    ],
)
def test_busy_neighbours_take_their_cpus(mask, busy, expected):
    assert threads.thread_count(environ={}, root=NO_QUOTA, affinity=mask, busy=busy) == expected


def test_busy_neighbours_on_a_big_host_leave_a_quota_alone(tmp_path):
    root = fake_tree(tmp_path, "0::/pod\n", MOUNTS_V2, {"sys/fs/cgroup/pod/cpu.max": "200000 100000\n"})
    assert threads.thread_count(environ={}, root=root, affinity=64, busy=40.0) == 2  # 24 CPUs are free, the quota is 2
    assert threads.thread_count(environ={}, root=root, affinity=64, busy=63.0) == 1


def test_busy_cpus_from_two_readings_of_proc_stat(tmp_path, monkeypatch):
    stat = tmp_path / "proc" / "stat"
    stat.parent.mkdir(parents=True)
    # user nice system idle iowait irq softirq steal: cpu0 all busy, cpu1 a quarter busy, cpu2 outside the mask
    stat.write_text(
        "cpu  1 1 1 1 1 1 1 1\ncpu0 100 0 0 900 0 0 0 0\ncpu1 0 0 0 1000 0 0 0 0\ncpu2 0 0 0 0 0 0 0 0\nintr 5\n"
    )
    after = "cpu  1 1 1 1 1 1 1 1\ncpu0 150 0 50 900 0 0 0 0\ncpu1 20 0 5 1070 5 0 0 0\ncpu2 100 0 0 0 0 0 0 0\n"
    monkeypatch.setattr(threads.time, "sleep", lambda seconds: stat.write_text(after))
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert threads.busy_cpus(root=str(tmp_path)) == pytest.approx(1.0 + 25 / 100)


def test_busy_cpus_sees_a_real_busy_process():
    cpu = min(os.sched_getaffinity(0))
    loop = subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"])
    try:
        import time

        time.sleep(0.3)
        assert threads.busy_cpus(0.3) >= 0.7  # the loop never lets its CPU idle
    finally:
        loop.kill()
        loop.wait()


def test_a_real_affinity_mask_of_one_cpu_gives_one_thread():
    code = textwrap.dedent("""
        import os, sys
        sys.path.insert(0, sys.argv[1])
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        from autograder.kit import threads
        print(threads.affinity_cpus(), threads.usable_cpus(), threads.thread_count(environ={}), threads.configure_threads())
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", threads.ENV_VAR)}
    done = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.split() == ["1", "1.0", "1", "1"]


def test_configure_threads_sets_torch_and_decides_once(monkeypatch):
    calls = []
    monkeypatch.setattr(threads, "_configured", {})
    monkeypatch.setattr(threads, "busy_cpus", lambda seconds=0.1, root="/": calls.append(1) or 0.0)
    monkeypatch.setattr(threads, "affinity_cpus", lambda: 3)
    monkeypatch.setattr(threads, "cgroup_cpu_quota", lambda root="/": None)
    for name in ("GPTCOURSE_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    assert threads.configure_threads() == 3 and torch.get_num_threads() == 3
    torch.set_num_threads(1)
    assert threads.configure_threads() == 3 and torch.get_num_threads() == 3
    assert len(calls) == 1
    monkeypatch.setenv("GPTCOURSE_THREADS", "2")
    assert threads.configure_threads() == 2 and torch.get_num_threads() == 2
    assert threads.configure_threads(1) == 1 and torch.get_num_threads() == 1


# ------------------------------------------------------------------ where the rule is used


def test_the_training_loop_applies_the_preset_threads_on_cpu():
    from training import loop
    from training.data import prepare
    from training.presets import TINY

    corpus = prepare("default", text=(ROOT / "README.md").read_text(encoding="utf-8") * 3)
    preset = TINY.replace(n_layer=1, n_embd=16, n_head=2, block_size=8, batch_size=2, steps=1, eval_iters=1, threads=3)
    torch.set_num_threads(1)
    loop.run(preset, corpus, torch.device("cpu"), None, progress=False)
    assert torch.get_num_threads() == 3


@pytest.fixture
def corpus_file(tmp_path):
    from solutions.data import load_corpus

    path = tmp_path / "docs.txt"
    path.write_text(load_corpus("default")[:20_000], encoding="utf-8")
    return path


def _train(corpus_file: Path, out: Path, *extra: str):
    """The arguments of a 2-step run of the tiny preset, and gptcourse's entry point."""
    from autograder.cli import main

    return [
        "train",
        "--corpus",
        str(corpus_file),
        "--preset",
        "tiny",
        "--steps",
        "2",
        "--eval-interval",
        "2",
        "--out",
        str(out),
        "--quiet",
        "--sample-tokens",
        "0",
        "--device",
        "cpu",
        *extra,
    ], main


def test_train_threads_option_and_env_reach_torch(corpus_file, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("GPTCOURSE_THREADS", "2")
    args, main = _train(corpus_file, tmp_path / "a", "--threads", "3")
    assert main(args) == 0
    assert torch.get_num_threads() == 3 and "on cpu, 3 threads" in capsys.readouterr().out
    args, main = _train(corpus_file, tmp_path / "b")
    assert main(args) == 0
    assert torch.get_num_threads() == 2 and "on cpu, 2 threads" in capsys.readouterr().out
    monkeypatch.setenv("GPTCOURSE_THREADS", "none")
    assert main(args) == 2 and "GPTCOURSE_THREADS='none'" in capsys.readouterr().err


def test_sample_threads_option_reaches_torch(corpus_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GPTCOURSE_THREADS", "1")
    args, main = _train(corpus_file, tmp_path / "run")
    assert main(args) == 0
    assert (
        main(
            [
                "sample",
                "--checkpoint",
                str(tmp_path / "run" / "ckpt.pt"),
                "--tokens",
                "3",
                "--device",
                "cpu",
                "--threads",
                "3",
            ]
        )
        == 0
    )
    assert torch.get_num_threads() == 3


def test_grade_default_workers_follow_the_rule(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from autograder import cli
    from autograder.build import fixtures

    seen = []
    monkeypatch.setattr(
        cli,
        "grade_folder",
        lambda paths, tests, limits, out, args, roster=None, written=(): (
            seen.append(args.workers) or SimpleNamespace(graded=[])
        ),
    )
    monkeypatch.setattr(fixtures, "stage_tests", lambda *a, **k: None)
    monkeypatch.setattr(threads, "affinity_cpus", lambda: 6)
    monkeypatch.setattr(threads, "cgroup_cpu_quota", lambda root="/": 2.5)
    monkeypatch.delenv("GPTCOURSE_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # threads per process: not the number of workers
    notebook = tmp_path / "a.ipynb"
    notebook.write_text("{}")
    args = ["grade", "--stage", "01", "--out", str(tmp_path / "g"), "--quiet", str(notebook)]
    assert cli.main(args) == 0 and seen == [2]  # floor(min(6, 2.5))
    assert torch.get_num_threads() == 1  # the grading process only compares outputs
    assert cli.main([*args, "--workers", "5"]) == 0 and seen[-1] == 5
    monkeypatch.setenv("GPTCOURSE_THREADS", "4")
    assert cli.main(args) == 0 and seen[-1] == 4


def test_the_harness_cell_carries_the_rule_and_applies_it(tmp_path):
    source = harness_source(get_stage("07_gpt"))
    assert (
        "def configure_threads(" in harness_module(get_stage("07_gpt"))
        and "\n_gptcourse.configure_threads()\n" in source
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env["GPTCOURSE_THREADS"] = "7"  # torch's own default here is the number of cores
    script = tmp_path / "harness.py"  # the packed harness is longer than a command line may be
    script.write_text(source + "\nimport torch\nprint('THREADS', torch.get_num_threads())\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-2:] == ["THREADS", "7"]


def test_the_07_notebook_states_the_rule_where_training_starts():
    text = (ROOT / "assignments" / "07_gpt" / "notebook.md").read_text(encoding="utf-8")
    note = text.index("**CPU threads.**")
    assert text.index("## 8. The real run") < note < text.index("```python train")
    assert "GPTCOURSE_THREADS" in text[note : note + 400]


# ------------------------------------------------------------------ the benchmark, tiny


def test_thread_benchmark_at_tiny_size(tmp_path):
    from benchmarks import bench_threads

    train = bench_threads.work_train("one", 2, "default")
    assert train["threads"] == 1 and train["tokens_per_s"] > 0
    kv = bench_threads.work_kv("rule", 3)
    assert kv["generate"] > 0 and kv["generate_cached"] > 0 and kv["threads"] >= 1
    args = argparse.Namespace(steps=2, tokens=3, corpus="default", limit=120)
    with bench_threads.busy_process() as loop:
        measured = bench_threads.measure("kv", "one", [], args)
        fields = Path(f"/proc/{loop.pid}/stat").read_text().rsplit(")", 1)[1].split()
        loop_cpu_s = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    assert measured["threads"] == 1 and measured["seconds"] > 0 and "error" not in measured, measured
    assert loop_cpu_s > 0.2  # the competitor really competed (a process that does nothing uses about 0.02 s)
    row = {
        "load": 1.0,
        "busy": 0.1,
        "threads": 1,
        "seconds": 2.0,
        "tokens_per_s": 1000.0,
        "generate": 1.5,
        "generate_cached": 0.5,
    }
    data = {
        "command": "x",
        "machine": "m",
        "date": "d",
        "took_s": 60,
        "load_before": 1.0,
        "load_after": 1.5,
        "quota_how": "cgroup v1",
        "args": {"repeats": 1, "steps": 2, "tokens": 3},
        "situations": ["idle"],
        "results": {
            w: {"idle": {m: {**row, "seconds": 2.0 * (i + 1)} for i, m in enumerate(bench_threads.MODES)}}
            for w in ("train", "kv")
        },
        "grading": {
            "quota_cpus": 0.5,
            "quota_how": "cgroup v1",
            "rows": [
                {
                    "copies": 1,
                    "with": {"load": 1.0, "wall": 10.0, "scores": [93.0], "max": 93.0},
                    "without": {"load": 1.0, "error": "stopped after 600 s"},
                }
            ],
        },
    }
    text = bench_threads.render(json.loads(json.dumps(data)))
    assert "| idle | torch | 1 | 1,000 | 4.00 | 0.67x the time |" in text
    assert "| 1 x reference | 10.0 s | stopped after 600 s | 93 of 93 | - |" in text
