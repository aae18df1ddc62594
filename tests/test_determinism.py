"""The same submission graded ten times gets the same scores and messages, with one worker or two."""

import pytest

from autograder.build.fixtures import stage_tests
from autograder.reports.folder import grade_into_folder
from autograder.authoring.catalogue import catalogue
from autograder.engine.runner import Limits
from autograder.course import get_stage
from autograder.authoring.variants import write_variant

from support import submission

RUNS = 10


def _submission(stage_id: str, folder):
    """A submission whose grading draws random numbers: a get_batch mistake, or the reference (dropout tests)."""
    stage = get_stage(stage_id)
    if stage_id == "01_tokenisation":
        return write_variant(stage, next(m for m in catalogue(stage_id)[0] if m.qid == "get_batch"), folder)
    return submission(stage_id, folder, "reference")


@pytest.mark.parametrize("stage_id", ["01_tokenisation", "05_multihead"])
def test_ten_gradings_agree_whatever_the_number_of_workers(stage_id, tmp_path):
    stage = get_stage(stage_id)
    tests = stage_tests(stage)
    path = _submission(stage_id, tmp_path)
    runs = []
    for workers in (1, 2):
        graded = grade_into_folder([path] * RUNS, tests, tmp_path / f"out{workers}", Limits(), workers=workers, progress=False)
        runs += [[(r.key, r.score, r.message) for r in g.results] for g in graded]
    assert len(runs) == 2 * RUNS
    assert all(run == runs[0] for run in runs)
    assert 0 < sum(score for _, score, _ in runs[0])
