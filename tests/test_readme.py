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


def test_the_hostile_catalogue_is_counted_as_it_is():
    # (the catalogued mistakes and written questions in all, and each stage's row of the table of
    # what it asks: check-stage's rule "README's figures current", run for every stage in test_rules.py)
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    import attacks

    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    hostile = {s.id: len(attacks.catalogue(s.id)) for s in all_stages()}
    whole = re.search(r"the hostile catalogue \((\d+) submissions on stage 01 and (\d+) on stage 05", text)
    assert whole and (int(whole[1]), int(whole[2])) == (hostile["01_tokenisation"], hostile["05_multihead"])
    others = re.search(r"on every other stage the (\d+) or (\d+) of them", text)
    rest = {n for s, n in hostile.items() if s[:2] not in ("01", "05")}
    assert others and rest == {int(others[1]), int(others[2])}
