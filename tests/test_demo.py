"""``gptcourse demo --stage S``: the sample mistakes it grades, for every stage."""

import json
from pathlib import Path

import pytest

from autograder.authoring.catalogue import catalogue
from autograder.build.notebooks import make_notebook, write_notebook
from autograder.cli import DEMO_MISTAKES, demo_folder, demo_mistakes, main
from autograder.course import all_stages, get_stage


@pytest.mark.parametrize("stage", all_stages(), ids=lambda s: s.id)
def test_the_demo_grades_up_to_three_mistakes_each_of_its_own_question(stage):
    mistakes = catalogue(stage)[0]
    chosen = demo_mistakes(mistakes)
    assert len(chosen) == min(3, len({m.qid for m in mistakes})) == len({m.qid for m in chosen})
    if stage.id == "01_tokenisation":
        assert sorted(m.slug for m in chosen) == sorted(DEMO_MISTAKES)


def test_the_demo_refuses_an_unknown_stage(capsys):
    assert main(["demo", "--stage", "42"]) != 0
    assert "42" in capsys.readouterr().err


def test_each_stage_has_its_own_default_demo_folder_and_01_keeps_make_demos():
    assert demo_folder(get_stage("01")) == Path("grades/demo")
    assert demo_folder(get_stage("9")) == Path("grades/demo-09_rnn")
    assert len({demo_folder(stage) for stage in all_stages()}) == len(all_stages())


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("graded", [True, False], ids=["graded", "notebooks-only"])
def test_the_demo_of_another_stage_writes_nothing_into_a_folder_that_holds_one(tmp_path, capsys, graded):
    """A folder with 01's demo (its results, or only its sample notebooks) is refused before the
    demo of 09 writes anything: nothing of 01's is overwritten, nothing of 09's is added."""
    out = tmp_path / "demo"
    stage = get_stage("01")
    write_notebook(make_notebook(stage, "reference"), out / "submissions" / "reference.ipynb")
    write_notebook(make_notebook(stage, "student"), out / "submissions" / "empty-release.ipynb")
    if graded:
        (out / "reference").mkdir()
        (out / "reference" / "results.json").write_text(json.dumps({"score": 1, "tests": []}))
        (out / "reference" / "graded.json").write_text(json.dumps({"stage": stage.id}))
    before = _files(out)
    assert main(["demo", "--stage", "09", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{out} holds the demo of 01_tokenisation; nothing was written" in err
    assert "leave out --out: the demo of 09_rnn goes to grades/demo-09_rnn" in err
    assert _files(out) == before
