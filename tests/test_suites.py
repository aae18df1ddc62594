"""How the engine runs a suite file as a module (``autograder.engine.suites.exec_suite``): a hidden
suite imports its public one as ``public``, which must be handed over, never found on ``sys.path``
(pytest puts every stage's folder there, so a plain import finds whichever stage's comes first)."""

import sys
import types

import pytest

from autograder.build.fixtures import stage_tests
from autograder.course import all_stages
from autograder.engine.probe_text import probe_text
from autograder.engine.suites import exec_suite

PUBLIC = "from autograder.kit import Suite\n\nsuite = Suite(public=True)\n_ROWS = [1, 2, 3]\n"
HIDDEN = "from autograder.kit import Suite\nfrom public import _ROWS\n\nsuite = Suite(public=False)\nROWS = _ROWS\n"


def test_a_hidden_suite_reads_the_public_suite_it_is_given_and_leaves_sys_modules_as_it_was():
    before = sys.modules.get("public")
    exec_suite(PUBLIC, "<scratch public>", "test_suites_public")
    exec_suite(HIDDEN, "<scratch hidden>", "test_suites_hidden", sys.modules["test_suites_public"])
    assert sys.modules["test_suites_hidden"].ROWS == [1, 2, 3]
    assert sys.modules.get("public") is before


def test_a_suite_that_imports_public_without_it_is_refused_before_it_runs():
    with pytest.raises(ValueError, match=r"<scratch hidden> imports 'public': pass its stage's public suite"):
        exec_suite(HIDDEN, "<scratch hidden>", "test_suites_refused")
    assert "test_suites_refused" not in sys.modules


@pytest.mark.parametrize("stage", all_stages(), ids=lambda s: s.id)
def test_the_child_gets_each_hidden_suite_with_its_probes_and_nothing_that_judges_them(stage):
    """The text a grading child runs a hidden suite from (``SuiteFile.probes``) gives the same tests
    (names, points, limits, order) on the same lines, with no expected value and no check, and
    keeps no top-level table or helper that only those used."""
    tests = stage_tests(stage)
    public, hidden = tests.suites
    assert public.probes == public.source  # pasted into the notebook anyway
    assert hidden.probes == probe_text(hidden.source) != hidden.source
    assert len(hidden.probes.splitlines()) == len(hidden.source.splitlines())
    assert probe_text(hidden.probes) == hidden.probes  # nothing left that only the judging used
    exec_suite(public.source, "<public>", f"test_probes_{stage.id}_public")
    child = exec_suite(
        hidden.probes, "<hidden>", f"test_probes_{stage.id}", sys.modules[f"test_probes_{stage.id}_public"]
    )
    full = [c for c in tests.cases if not c.public]
    fields = ("key", "points", "timeout", "timed", "builds_on", "guard", "budget")
    assert [[getattr(c, f) for f in fields] for c in child.cases] == [[getattr(c, f) for f in fields] for c in full]
    assert all(c.expected is None and c.check is None for c in child.cases)


def test_a_table_that_only_an_expected_value_used_is_gone_and_one_a_probe_uses_stays():
    text = (
        "from autograder.kit import Suite, equal\n"
        "suite = Suite(public=False)\n"
        "INPUT = [3, 1, 2]\n"
        "ANSWER = [1, 2, 3]  # only the expected value reads it\n"
        "def _sorted_check():\n"
        "    return equal()\n"
        "@suite.case('q', 'sorts', points=1, check=_sorted_check(), expected=ANSWER)\n"
        "def _(ns):\n"
        "    return ns.sort(INPUT)\n"
    )
    probes = probe_text(text)
    assert "INPUT = [3, 1, 2]" in probes and "ANSWER" not in probes and "_sorted_check" not in probes
    case = exec_suite(probes, "<scratch probes>", "test_suites_probes").cases[0]
    assert (case.key, case.expected, case.check) == ("q: sorts", None, None)
    assert case.probe(types.SimpleNamespace(sort=sorted)) == [1, 2, 3]
