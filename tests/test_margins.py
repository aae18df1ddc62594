"""The tolerances of every stage keep their margin (the rule "tolerances keep a margin", which
``tests/test_rules.py`` leaves to this file), the tolerance-margin benchmark runs and finds
every tolerance kept, and its device mode runs every probe."""

import subprocess
import sys

import pytest

from autograder.authoring import margins
from autograder.authoring.rules import apply, get_rule
from autograder.authoring.static_rules import Subject
from autograder.course import ROOT, all_stages, get_stage

STAGES = all_stages()


@pytest.mark.parametrize("stage", STAGES, ids=[s.id for s in STAGES])
def test_every_stage_keeps_a_margin_on_its_tolerances(stage):
    assert apply(get_rule("tolerances keep a margin"), Subject(stage)) == []


def test_the_benchmark_reports_margins_above_one():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "tolerance_margins.py"), "--stages", "01", "05"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "mha: fixed weights, 4 heads of width 6, no mask: output" in done.stdout
    assert "Smallest margin per stage and perturbation" in done.stdout and "not run" not in done.stdout


def test_every_probe_runs_under_the_device_mode():
    """The mode that moves every operation to CUDA, pointed at the CPU: nothing breaks, nothing changes."""
    perturbations = [
        margins.Perturbation("baseline", lambda: None),
        margins.Perturbation("device", lambda: margins.OnDevice("cpu")),
    ]
    rows, flips, _ = margins.measure_stage(get_stage("05_multihead"), perturbations)
    moved = [r for r in rows if r.perturbation == "device"]
    assert moved and all(r.margin is not None and r.margin >= 1 and not r.note for r in moved)
    assert flips == []
