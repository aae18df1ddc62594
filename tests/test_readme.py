"""The README's stage table: one row per stage found in assignments/, so that none goes undescribed.

Points are not in the README: they live in each stage's folder (``check-stage --quick``
prints them), so that adding a question touches that folder and the release only.
"""

import re

from autograder.course import ROOT, all_stages

ROW = re.compile(r"^\| `(?P<stage>\d\d_\w+)` \| (?P<what>.+?) \|$")


def test_the_table_describes_every_stage_and_nothing_else():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = {m["stage"]: m["what"] for m in map(ROW.match, text.splitlines()) if m}
    assert sorted(rows) == [s.id for s in all_stages()]
    assert all(len(what) > 20 for what in rows.values())
