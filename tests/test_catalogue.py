"""Every graded question proven three ways: reference full, empty stub none, mistakes lose points.

For each stage with a catalogue: the reference earns every point; the empty release
earns none; each realistic mistake loses points on its own question and on no other;
each correct alternative earns full marks.
"""

import pytest

from autograder.authoring.catalogue import catalogue
from autograder.course import all_stages, questions

STAGES = [s.id for s in all_stages()]


def _params(kind: int):
    out = []
    for stage in STAGES:
        for variant in catalogue(stage)[kind]:
            out.append(pytest.param(stage, variant, id=f"{stage}:{variant.slug}"))
    return out


@pytest.mark.parametrize("stage", STAGES)
def test_reference_full_marks_and_empty_zero(stage, graded_catalogue):
    graded = graded_catalogue(stage)
    maxima = dict(questions(stage))
    assert graded.scores("reference") == maxima, [
        r.message for r in graded.by_name["reference"].results if not r.passed
    ]
    assert sum(graded.scores("empty").values()) == 0
    assert all(r.message for r in graded.by_name["empty"].results)


@pytest.mark.parametrize("stage", STAGES)
def test_catalogue_covers_every_question(stage):
    mistakes, alternatives = catalogue(stage)
    for qid, _ in questions(stage):
        assert sum(m.qid == qid for m in mistakes) >= 4, f"{qid} needs at least four mistakes"
        assert any(a.qid == qid for a in alternatives), f"{qid} needs a correct alternative"


@pytest.mark.parametrize("stage,variant", _params(0))
def test_mistake_loses_points_on_its_own_question_only(stage, variant, graded_catalogue):
    graded = graded_catalogue(stage)
    scores = graded.scores(variant.slug)
    maxima = dict(questions(stage))
    assert scores[variant.qid] < maxima[variant.qid], f"{variant.name} earned full marks on {variant.qid}"
    others = {q: s for q, s in scores.items() if q != variant.qid and s != maxima[q]}
    assert not others, f"{variant.name} also lost points on {others}"
    failed = [r for r in graded.by_name[variant.slug].results if not r.passed]
    assert all(r.message for r in failed)


@pytest.mark.parametrize("stage,variant", _params(1))
def test_alternative_style_earns_full_marks(stage, variant, graded_catalogue):
    graded = graded_catalogue(stage)
    failed = [f"{r.key}: {r.message}" for r in graded.by_name[variant.slug].results if not r.passed]
    assert not failed, failed
