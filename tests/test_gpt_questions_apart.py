"""Stage 07_gpt: a question whose code is missing costs its own points and no others, with
the notebook's long training cell replaced by code that would wreck the grade if it ran, so
that full marks elsewhere also show that grading never runs it.

(That one question's stubs left empty cost only that question, on every stage, is check-stage's
rule "an empty answer costs only its own question"; here several questions are emptied at once,
beside the sabotaged training cell.) Only ``training_works`` leans on other answers, by design:
it trains the student's ``GPT`` with the student's ``train``.
"""

import pytest

from autograder.authoring.variants import variant_notebook
from autograder.build.fixtures import stage_tests
from autograder.build.notebooks import make_notebook, write_notebook
from autograder.channels.local.folder import grade_into_folder
from autograder.course import get_stage, questions
from autograder.engine.runner import Limits
from autograder.engine.submission import TAG_TRAIN

STAGE = get_stage("07_gpt")

# the stub cells left empty in each submission, and the questions that must then score 0
CASES = {
    "model-params": (["GPT", "num_parameters"], {"model", "params", "training_works"}),
    "device-train": (["get_device", "train_step", "estimate_loss", "train"], {"device", "train", "training_works"}),
}

# if grading ran the long training cell, these names would be gone and every test using them would fail
SABOTAGED_TRAINING_CELL = "GPT = num_parameters = get_device = train = None\n"


def _empty_stubs() -> dict[str, str]:
    stubs = {}
    for cell in make_notebook(STAGE, "student")["cells"]:
        name = cell.get("metadata", {}).get("gptcourse", {}).get("name")
        if name:
            stubs[name] = cell["source"]
    return stubs


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("questions-apart")
    stubs = _empty_stubs()
    paths = []
    for label, (names, _) in CASES.items():
        notebook = variant_notebook(STAGE, {name: stubs[name] for name in names})
        training = [c for c in notebook["cells"] if TAG_TRAIN in c.get("metadata", {}).get("tags", [])]
        assert len(training) == 1
        training[0]["source"] = SABOTAGED_TRAINING_CELL
        write_notebook(notebook, folder / f"{label}.ipynb")
        paths.append(folder / f"{label}.ipynb")
    results = grade_into_folder(paths, stage_tests(STAGE), folder / "out", Limits(), workers=1, progress=False)
    return {g.name: g for g in results}


@pytest.mark.parametrize("label", list(CASES))
def test_an_empty_answer_costs_only_its_own_questions(label, graded):
    emptied, broken = CASES[label]
    scores: dict[str, float] = {}
    for result in graded[label].results:
        scores[result.qid] = scores.get(result.qid, 0.0) + result.score
    maxima = dict(questions(STAGE.id))
    assert {q: s for q, s in scores.items() if q in broken and s > 0} == {}, f"empty {emptied} still earned points"
    lost = {q: f"{s:g}/{maxima[q]:g}" for q, s in scores.items() if q not in broken and s != maxima[q]}
    assert lost == {}, f"leaving {emptied} empty also cost {lost}"
