"""How the engine runs a suite file as a module (``autograder.engine.suites.exec_suite``): a hidden
suite imports its public one as ``public``, which must be handed over, never found on ``sys.path``
(pytest puts every stage's folder there, so a plain import finds whichever stage's comes first)."""

import sys

import pytest

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
