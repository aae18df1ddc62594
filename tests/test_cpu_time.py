"""Timed tests are judged on CPU time, read from outside the student's process.

Stage 02's ``efficiency`` question compares the CPU time ``train_bpe`` used with the
calibration workload's (``engine.judge.judge_case``), so that a busy or shared machine
(other programs' work, CPU quotas) cannot fail fast code. Shown with the reference
learner made to wait (sleeping costs no CPU: it passes, its wall time far above its CPU
time) and made to spin (every CPU second counts).
"""

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


def _run(tmp_path, name, extra, timed):
    tests, cases = timed
    notebook = submission(STAGE, tmp_path, name, extra_cells=[extra])
    return run_submission(notebook, tests, Limits(), keys=[c.key for c in cases])


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
