"""The same submission graded ten times gets the same scores and messages, with one worker or two."""

import pytest
from support import submission

from autograder.authoring.catalogue import catalogue
from autograder.authoring.variants import write_variant
from autograder.build.fixtures import stage_tests
from autograder.channels.local.folder import grade_into_folder
from autograder.course import get_stage
from autograder.engine.runner import Limits

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
        graded = grade_into_folder(
            [path] * RUNS, tests, tmp_path / f"out{workers}", Limits(), workers=workers, progress=False
        )
        runs += [[(r.key, r.score, r.message) for r in g.results] for g in graded]
    assert len(runs) == 2 * RUNS
    assert all(run == runs[0] for run in runs)
    assert 0 < sum(score for _, score, _ in runs[0])


def test_set_order_does_not_change_from_one_grading_to_the_next(tmp_path):
    """A submission whose answer depends on the order of a set gets the same grade in two
    separate grading runs: the child's hash seed is fixed (PYTHONHASHSEED), not random."""
    import json
    import subprocess
    import sys

    vocab = "def build_vocab(text):\n    chars = list(set(text))\n    return {c: i for i, c in enumerate(chars)}, dict(enumerate(chars))\n"
    path = submission("01_tokenisation", tmp_path, "set-order", replace={"build_vocab": vocab})
    outputs = []
    for run in range(2):
        out = tmp_path / f"run{run}"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "autograder.cli",
                "grade",
                "--stage",
                "01",
                "--quiet",
                "--workers",
                "1",
                "--out",
                str(out),
                str(path),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        doc = json.loads((out / "set-order" / "results.json").read_text())
        outputs.append(
            [(t["name"], t["score"], t["output"]) for t in doc["tests"] if t["name"].startswith("build_vocab")]
        )
    assert outputs[0] == outputs[1]
