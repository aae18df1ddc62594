"""A catalogue graded with the reference's outputs where a variant's change cannot reach a test
(``autograder.authoring.reuse``) is the catalogue graded on every test.

- What a change is: a function's or a method's body (a unit), or anything else (every test runs).
- The facts the reuse rests on: no suite reads a function's source, docstring,
  annotations or code without calling it; no reference runs its functions in another
  process, where the tracer cannot see them; and the grades are the same, test by test, message
  by message, as grading every variant on every test (stage 04, 68 submissions).
- Where the time goes: 07's two training tests are taken from the reference for a mistake
  of sampling, and run for a mistake of train.
- A variant whose run on the tests its change reaches runs out of time is graded again on
  every test (a time-out shortens the limits of the question's later tests).
- A variant that takes every timed test's CPU time from the reference takes the calibration
  it was judged against too; one that runs a timed test measures its own.
"""

import dataclasses
import tempfile
from pathlib import Path

import pytest

from autograder.authoring.grades import CatalogueGrades
from autograder.authoring.reuse import READS_CODE, changes, differing, grade_catalogue, unit_of
from autograder.authoring.variants import variant_notebook
from autograder.build.fixtures import stage_tests
from autograder.build.notebooks import make_notebook, write_notebook
from autograder.build.stubs import reference_source
from autograder.course import ROOT, get_stage
from autograder.engine import judge, runner
from autograder.engine.pipeline import grade_batch
from autograder.engine.runner import Limits

F = "def f(x: int) -> int:\n    return x\n"


@pytest.mark.parametrize(
    ("after", "want"),
    [
        (F, set()),
        ("def f(x):\n    return x\n", set()),  # annotations aside
        ("def f(x: int) -> int:\n    return x + 1\n", {"f"}),
        ('def f(x: int) -> int:\n    """Now documented."""\n    return x\n', set()),  # docstrings aside
        ("def f(x=1):\n    return x\n", None),  # a default: the signature changed
        ("@cache\ndef f(x):\n    return x\n", None),  # a decorator
        ("def f(x):\n    return x\n\n\nN = f(2)\n", None),  # code outside any function
        ("def f(x):\n    return x\n\n\ndef g():\n    pass\n", None),  # a function added
        ("def f(x):\n    return x +\n", None),  # no longer parses
    ],
)
def test_a_change_is_a_units_body_and_anything_else_runs_every_test(after, want):
    # the second code cell changes: units are named by their cell's position
    assert changes(["import torch\n", F], ["import torch\n", after]) == (
        None if want is None else {(1, u) for u in want}
    )


def test_classes_methods_and_cells():
    before = "class A:\n    k = 1\n\n    def m(self):\n        return self.k\n\n    def n(self):\n        return 0\n"
    assert changes([before], [before.replace("return self.k", "return -self.k")]) == {(0, "A.m")}
    assert changes([before], [before.replace("k = 1", "k = 2")]) is None  # a class attribute
    assert changes([before], [before.replace("class A:", 'class A:\n    """An A."""')]) == set()
    assert changes([before], [before, "x = 1\n"]) is None  # another number of code cells
    assert unit_of("A.m.<locals>.<listcomp>", {"A"}) == "A.m"
    assert unit_of("A", {"A"}) == "A"  # the class body: code outside any unit
    assert unit_of("f.<locals>.g", {"A"}) == "f"


# That no suite reads a function's code without calling it, and no reference runs its functions
# in another process, is check-stage's rule "tests depend only on what they call" (test_rules.py).


def test_the_kit_reads_no_student_functions_code():
    found = {
        (path.name, m.group(0))
        for path in (ROOT / "autograder" / "kit").glob("*.py")
        for m in READS_CODE.finditer(path.read_text())
    }
    assert found <= {("cases.py", "__code__")}  # cases.names_used: what a test's own probe calls


@pytest.mark.slow
def test_a_catalogue_graded_with_reuse_equals_one_graded_on_every_test(graded_catalogue):
    reused = graded_catalogue("04_masking")
    assert sum(map(len, reused.reused.values())) > len(reused.tests.cases) * len(reused.reused) / 2
    with tempfile.TemporaryDirectory() as tmp:
        every = CatalogueGrades(get_stage("04_masking"), Path(tmp), reuse=False)
    assert every.reused == {} and set(every.by_name) == set(reused.by_name)
    assert differing(every.by_name, reused.by_name) == []


@pytest.mark.slow
def test_07s_training_tests_are_taken_for_a_parameter_count_mistake_and_run_for_a_training_one(graded_catalogue):
    grades = graded_catalogue("07_gpt")
    training = {c.key for c in grades.tests.cases if c.qid == "training_works"}
    assert len(training) == 2
    by_question = {}
    for variant in grades.mistakes:
        by_question.setdefault(variant.qid, []).append(set(grades.reused[variant.slug]))
    # a mistake whose change is a function's body only (a changed default, for one, runs every test)
    params = [taken for taken in by_question["params"] if taken]
    assert len(params) >= len(by_question["params"]) - 2 and all(training <= taken for taken in params)
    assert all(not training & taken for taken in by_question["train"] + by_question["model"])
    assert any(by_question["model"])  # a model mistake takes the tests of train, which runs a stand-in model


@pytest.mark.slow
def test_a_variant_whose_reduced_run_runs_out_of_time_is_graded_on_every_test(tmp_path):
    """04's shift_right made to hang, and made wrong: the wrong one takes the tests it cannot
    reach from the reference; the hanging one takes none, and is graded as on every test."""
    stage, tests, limits = get_stage("04_masking"), stage_tests(get_stage("04_masking")), Limits(case_timeout=1.0)
    bodies = {"hangs": "    while True:\n        pass\n", "wrong": "    return tokens\n"}
    paths = [tmp_path / "reference.ipynb"]
    write_notebook(make_notebook(stage, "reference"), paths[0])
    for name, body in bodies.items():
        paths.append(tmp_path / f"{name}.ipynb")
        write_notebook(
            variant_notebook(stage, {"shift_right": f"def shift_right(tokens, start_id):\n{body}"}), paths[-1]
        )
    graded, taken = grade_catalogue(paths[0], paths[1:], tests, limits)
    assert taken["wrong"] and taken["hangs"] == []
    assert any("time" in (r.message or "") for r in graded[1].results)  # it did run out of time
    every = grade_batch(paths[1:2], ["hangs"], tests, limits, progress=False)
    assert differing({"hangs": graded[1]}, {"hangs": every[0]}) == []


@pytest.mark.slow
def test_a_variant_that_takes_the_timed_tests_takes_their_calibration(tmp_path, monkeypatch):
    """02's timed efficiency test and byte_bpe_decode's tests: the reference measures the
    calibration workload once; a decode variant takes the timed output and that calibration,
    a train_bpe variant (the same code, a statement added) measures again."""
    stage = get_stage("02_bpe")
    full = stage_tests(stage)
    cases = [c for c in full.cases if (c.qid == "efficiency" and c.public) or c.name.startswith("byte_bpe_decode")]
    assert [c.timed for c in cases] == [True, False]
    tests = dataclasses.replace(full, cases=tuple(cases))
    calls = []
    measure = judge.calibrate
    for module in (judge, runner):  # the runner measures it before a timed test; the judge, where none ran
        monkeypatch.setattr(module, "calibrate", lambda: calls.append(1) or measure())
    decode, train = (reference_source(stage.module, name) for name in ("byte_bpe_decode", "train_bpe"))
    variants = {
        "decode": {"byte_bpe_decode": decode.replace('"""\n', '"""\n    ids = list(ids)\n', 1)},
        "train": {"train_bpe": train.replace('"""\n', '"""\n    text = str(text)\n', 1)},
    }
    paths = [tmp_path / "reference.ipynb"]
    write_notebook(make_notebook(stage, "reference"), paths[0])
    for name, cells in variants.items():
        paths.append(tmp_path / f"{name}.ipynb")
        write_notebook(variant_notebook(stage, cells), paths[-1])
    graded, taken = grade_catalogue(paths[0], paths[1:], tests, Limits(), workers=1)
    timed = next(c.key for c in cases if c.timed)
    assert timed in taken["decode"] and timed not in taken["train"]
    assert len(calls) == 2  # the reference's and train's; decode judged against the reference's
    # every test passed; the public efficiency test's points wait for a hidden test of the work,
    # which this selection leaves out (judge._public_points_need_hidden_work)
    assert all(r.passed or r.awaits_hidden for g in graded for r in g.results)
