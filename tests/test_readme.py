"""The README's stage table: one row per stage found in assignments/, with its real points."""

import re

import pytest

from autograder.course import ROOT, all_stages
from autograder.engine.suites import StageTests

ROW = re.compile(r"^\| `(?P<stage>\d\d_\w+)` \| (?P<what>.+?) \| (?P<points>\d+(?:\.5)?) \|$")


def _table() -> dict[str, int]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return {m["stage"]: float(m["points"]) for m in map(ROW.match, text.splitlines()) if m}


def test_the_table_lists_every_stage_and_nothing_else():
    assert sorted(_table()) == [s.id for s in all_stages()]


@pytest.mark.parametrize("stage", all_stages(), ids=lambda s: s.id)
def test_each_stage_shows_its_total_points(stage):
    tests = StageTests.load(stage.id, stage.public, stage.hidden)
    assert _table()[stage.id] == sum(c.points for c in tests.cases)
