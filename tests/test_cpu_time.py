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
from autograder.engine.runner import Limits, run_submission

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
