"""``gptcourse demo --stage S``: the sample mistakes it grades, for every stage."""

import pytest

from autograder.authoring.catalogue import catalogue
from autograder.cli import DEMO_MISTAKES, demo_mistakes, main
from autograder.course import all_stages


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
