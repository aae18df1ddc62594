"""Timed tests are judged on CPU time, read from outside the student's process.

Stage 02's ``efficiency`` question compares the CPU time ``train_bpe`` used with the
calibration workload's (``engine.judge.judge_case``), so that a busy or shared machine
(other programs' work, CPU quotas) cannot fail fast code. Shown with the reference
learner made to wait (sleeping costs no CPU: it passes, its wall time far above its CPU
time) and made to spin (every CPU second counts).
"""

import os

import pytest
from support import submission

from autograder.build.fixtures import stage_tests
from autograder.course import get_stage
from autograder.engine.judge import judge_case
from autograder.engine.runner import TIMED_OUT, Limits, run_submission

STAGE = "02_bpe"
WAITS = """
import time as _time
_fast_train_bpe = train_bpe


def train_bpe(text, num_merges, eow="</w>"):
    _time.sleep(3)
    return _fast_train_bpe(text, num_merges, eow)
"""
SPINS = """
import time as _time
_fast_train_bpe = train_bpe


def train_bpe(text, num_merges, eow="</w>"):
    end = _time.process_time() + 1.0
    while _time.process_time() < end:
        pass
    return _fast_train_bpe(text, num_merges, eow)
"""


@pytest.fixture(scope="module")
def timed():
    tests = stage_tests(get_stage(STAGE))
    return tests, [c for c in tests.cases if c.timed]


def _run(tmp_path, name, extra, timed, limits=None):
    tests, cases = timed
    notebook = submission(STAGE, tmp_path, name, extra_cells=[extra])
    return run_submission(notebook, tests, limits or Limits(), keys=[c.key for c in cases])


def test_waiting_costs_no_cpu_time_and_passes(tmp_path, timed):
    tests, cases = timed
    outcome = _run(tmp_path, "waits", WAITS, timed)
    for case in cases:
        assert outcome.seconds[case.key] >= 3.0
        assert outcome.cpu_seconds[case.key] < outcome.seconds[case.key] - 2.5, "the sleep was counted"
        verdict = judge_case(case, outcome, tests.fixtures)
        assert verdict.passed, verdict.message


def test_every_cpu_second_counts(tmp_path, timed):
    _, cases = timed
    outcome = _run(tmp_path, "spins", SPINS, timed)
    for case in cases:
        assert outcome.cpu_seconds[case.key] >= 1.0


# the same spin, done in a grandchild that detaches itself (double fork, setsid) while the
# grading child waits on a pipe, using no CPU; PRELUDE runs first in the child
DETACHED = """
import os as _os
import pickle as _pickle
import time as _time
_fast_train_bpe = train_bpe


def train_bpe(text, num_merges, eow="</w>"):
    PRELUDE
    read, write = _os.pipe()
    pid = _os.fork()
    if pid == 0:
        try:
            if _os.fork() == 0:
                _os.setsid()
                end = _time.process_time() + 1.0
                while _time.process_time() < end:
                    pass
                _os.write(write, _pickle.dumps(_fast_train_bpe(text, num_merges, eow)))
        finally:
            _os._exit(0)
    _os.close(write)
    _os.waitpid(pid, 0)
    with _os.fdopen(read, "rb") as pipe:
        return _pickle.loads(pipe.read())
"""
# student code turning off the child's subreaper flag (prctl PR_SET_CHILD_SUBREAPER, 0)
UNREAPER = "__import__('ctypes').CDLL(None).prctl(36, 0, 0, 0, 0)"


@pytest.mark.parametrize("level", ["none", None])
def test_cpu_time_of_a_detached_grandchild_counts(tmp_path, timed, level):
    """The grading child is a subreaper, so that the grandchild stays in its subtree rather than
    being re-parented to the grader; it has exited (a zombie of the child) by the time the parent
    reads the CPU time after the test, and its second still counts. At the level ``none`` (no
    private user) and at the best level here."""
    _, cases = timed
    outcome = _run(tmp_path, "detached", DETACHED.replace("PRELUDE", "pass"), timed, Limits(sandbox=level))
    assert level is None or outcome.isolation["level"] == level
    for case in cases:
        assert case.key in outcome.values, outcome.errors
        assert outcome.cpu_seconds[case.key] >= 1.0


@pytest.mark.skipif(os.geteuid() != 0, reason="a private user for the child needs root")
def test_cpu_time_of_a_grandchild_detached_past_the_child_counts_by_its_user(tmp_path, timed):
    """Student code can turn the child's subreaper flag off: the grandchild is then re-parented to
    the grader, out of the child's subtree, but it runs as the child's private user, and counts."""
    _, cases = timed
    outcome = _run(tmp_path, "unreaped", DETACHED.replace("PRELUDE", UNREAPER), timed)
    assert outcome.isolation["uid"], outcome.isolation
    for case in cases:
        assert case.key in outcome.values, outcome.errors
        assert outcome.cpu_seconds[case.key] >= 1.0


FOREVER = """
def train_bpe(text, num_merges, eow="</w>"):
    while True:
        pass
"""


def test_a_learner_over_its_cpu_budget_is_stopped_there_not_at_its_time_limit(tmp_path, timed):
    """A timed test with a budget (``Case.budget``) is stopped once the child has used that many
    calibration workloads of CPU time (the verdict the check would give anyway), by the budget
    and not by its time limit; the judge compares with the calibration the child was stopped at."""
    tests, cases = timed
    assert all(c.budget == 20 for c in cases)
    outcome = _run(tmp_path, "forever", FOREVER, timed)
    limit = {c.key: c.budget * outcome.calibration for c in cases}
    for case in cases:
        # the budget's own message, not the time limit's (the wall time is no witness: on a busy
        # host 20 calibrations of CPU once took 15.3 s of the 15 s limit, and the budget still stopped it)
        assert "more CPU time than this test allows, 20 times the calibration workload" in outcome.errors[case.key]
        assert TIMED_OUT not in outcome.errors[case.key]
        # the child's timer counts its CPU time exactly, /proc in clock ticks: within a tenth of the limit
        assert limit[case.key] * 0.9 <= outcome.cpu_seconds[case.key] < limit[case.key] * 1.5 + 0.5
        verdict = judge_case(case, outcome, tests.fixtures)
        assert not verdict.passed and "stopped there (far too slow)" in verdict.message


def test_a_budget_needs_a_timed_test():
    from autograder.kit.cases import Suite

    suite = Suite(public=True)
    with pytest.raises(ValueError, match="a CPU budget needs timed=True"):
        suite.case("q", "untimed", points=1, check=None, budget=20)
    with pytest.raises(ValueError, match="a CPU budget needs timed=True"):
        suite.case("q", "no budget", points=1, check=None, timed=True, budget=0)
