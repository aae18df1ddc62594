"""Every number a notebook states is measured at the size the text names and falls in the
range its words allow (``assignments/<stage>/claims.py``, ``autograder.authoring.claims``)."""

import pytest

from autograder.authoring.claims import Claim, stage_claims, unsourced
from autograder.course import all_stages, get_stage

CLAIMS = [(stage, claim) for stage in all_stages() for claim in stage_claims(stage)]


@pytest.mark.parametrize("stage,claim", CLAIMS, ids=[f"{s.id}:{c.words[:40]}" for s, c in CLAIMS])
def test_a_stated_number_is_what_its_measurement_gives(stage, claim):
    value = claim.measure()
    assert claim.holds(value), f"{stage.id} says {claim.words!r}, but the measurement gives {value:g}"


def test_a_claim_whose_words_left_the_notebook_is_caught():
    stage = get_stage("01")
    gone = Claim("about 7 symbols for Shakespeare", lambda: 65.0, low=6, high=8)
    assert unsourced(stage, [gone]) == [
        "claims.py: the notebook no longer says 'about 7 symbols for Shakespeare': update the claim with the text"
    ]
    assert not gone.holds(65.0)
