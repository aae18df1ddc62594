"""Every rule a stage is held to, by name: the single authority on what makes a stage sound.

``gptcourse check-stage`` runs ``RULES`` in order: the static ones on the stage's files
(``--quick`` stops there), then the ones that run the stage's code for seconds
(``run_rules``: its reference notebook, its own tests), then the graded ones on its
catalogue, graded once (``grades.CatalogueGrades``). The project's tests loop over the same list
(``tests/test_rules.py``), and the authoring guide (``assignments/README.md``) lists the
rules by these names. A rule is a function that returns the problems it finds, each
naming the test, mistake, clause or file at fault; none means the stage keeps it.

To add a rule, write the function (static or run: of a ``static_rules.Subject``; graded: of a
``CatalogueGrades``) and add a ``Rule`` here.

Example::

    >>> [rule.name for rule in RULES][:2]
    ['files', 'reference imports']
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import feedback_rules, graded_rules, run_rules, static_rules


@dataclass(frozen=True)
class Rule:
    """One rule: its name, what it asks, and the function that finds where a stage breaks it."""

    name: str
    find: Callable[[Any], list[str]]
    graded: bool = False  # find(grades) on the graded catalogue; else find(subject)
    # find(subject), but it runs the stage's code for seconds: not in --quick; it runs, as the graded
    # rules do, once every static rule but a `last` one holds, and holds back no graded rule
    runs: bool = False
    blocking: bool = False  # the rules after it cannot run until this one holds
    # a static rule run only on a stage every static rule before it that is not last holds (it
    # reads the stage built, which a stage they refuse may not be), whose problems hold back no
    # graded rule
    last: bool = False

    @property
    def static(self) -> bool:
        """Whether ``--quick`` runs it: a rule of the stage's files that neither grades nor runs its code."""
        return not (self.graded or self.runs)

    @property
    def asks(self) -> str:
        """What the rule asks of a stage, in a sentence (its function's docstring)."""
        return " ".join((self.find.__doc__ or "").split())


RULES: tuple[Rule, ...] = (
    Rule("files", static_rules.files, blocking=True),
    Rule("reference imports", static_rules.reference_imports, blocking=True),
    Rule("source parses", static_rules.source_parses, blocking=True),
    Rule("names exist", static_rules.names_exist),
    Rule("notebook opens with its introduction", static_rules.introduction),
    Rule("suites load", static_rules.suites_load, blocking=True),
    Rule("questions complete", static_rules.questions_complete),
    Rule("earlier answers bring no imports", static_rules.answers_bring_no_imports),
    Rule("public suite pasteable", static_rules.pasteable),
    Rule("probes return raw outputs", static_rules.raw_outputs),
    Rule("hidden suite repeats no public helper", static_rules.no_repeated_helpers),
    Rule("tests depend only on what they call", static_rules.reuse_trusted),
    Rule("probe sizes apart", static_rules.sizes_apart),
    Rule("clauses covered by hidden tests", static_rules.clauses_covered),
    Rule("every test serves a clause", static_rules.tests_serve_clauses),
    Rule("nothing points outside the project", static_rules.inside_the_project),
    Rule("the specification covers the stage", static_rules.specified),
    Rule("catalogue loads", static_rules.catalogue_loads, blocking=True),
    Rule("catalogue complete", static_rules.catalogue_complete),
    Rule("catalogue copies no reference", static_rules.no_copied_references),
    Rule("docstring examples run", static_rules.examples_run),
    Rule("stubs give no answer", static_rules.stubs_give_no_answer),
    Rule("stated dtypes tested", static_rules.stated_dtypes_tested),
    Rule("stated exceptions specified", static_rules.exceptions_specified),
    Rule("stated numbers have a source", static_rules.numbers_sourced),
    Rule("rubric figures measured", static_rules.rubric_figures_measured),
    Rule("clauses stated to students", static_rules.clauses_stated, last=True),
    Rule("release keeps the answers", static_rules.release_keeps_secrets, last=True),
    Rule("release up to date", static_rules.release_fresh, last=True),
    Rule("README's figures current", static_rules.readme_current, last=True),
    Rule("reference notebook runs", run_rules.reference_notebook_runs, runs=True),
    Rule("the stage's own tests pass", run_rules.own_tests_pass, runs=True),
    Rule("no suite holds the reference", run_rules.suites_hold_no_reference, runs=True),
    Rule("stated numbers true", run_rules.stated_numbers_true, runs=True),
    Rule("tolerances keep a margin", run_rules.tolerances_keep_a_margin, runs=True),
    Rule("empty release earns nothing", graded_rules.empty_earns_nothing, graded=True),
    Rule("reference full", graded_rules.reference_full, graded=True, blocking=True),
    Rule("mistakes cost their own question", graded_rules.mistakes_cost_their_own_question, graded=True),
    Rule("alternatives earn full marks", graded_rules.alternatives_earn_everything, graded=True),
    Rule("checks never fault", graded_rules.checks_never_fault, graded=True),
    Rule("hints right or absent", feedback_rules.hint_problems, graded=True),
    Rule("public tests catch the catalogue", feedback_rules.public_catch_problems, graded=True),
    Rule("hidden messages reveal nothing", feedback_rules.hidden_value_problems, graded=True),
    Rule("release holds no expected value", graded_rules.release_holds_no_expected_value, graded=True),
    Rule("no-ops earn nothing", graded_rules.noops_earn_nothing, graded=True),
    Rule("building alone earns only structure", graded_rules.building_earns_only_structure, graded=True),
    Rule("dtype slips cost only their clause", graded_rules.dtype_slips_cost_only_their_clause, graded=True),
    Rule(
        "an empty answer costs only its own question", graded_rules.empty_answers_cost_their_own_question, graded=True
    ),
    Rule("every clause has a mistake", graded_rules.every_clause_has_a_mistake, graded=True),
)


def get_rule(name: str) -> Rule:
    """The rule called ``name``."""
    for rule in RULES:
        if rule.name == name:
            return rule
    raise KeyError(f"no rule {name!r}; the rules are: {', '.join(r.name for r in RULES)}")


def apply(rule: Rule, target: Any) -> list[str]:
    """The rule's problems on ``target`` (a ``Subject``, or ``CatalogueGrades`` for a graded rule).

    A static blocking rule loads the author's files (the notebook source, the suites, the
    catalogue): what loading raises is its problem, shown. Any other rule that raises is
    a bug of the rule, and propagates (a graded blocking rule reads grades already made).
    """
    if rule.graded or not rule.blocking:
        return rule.find(target)
    try:
        return rule.find(target)
    except Exception as exc:  # the author's code raised while loading: that is the finding, whatever it was
        return [f"{type(exc).__name__}: {exc}"]
