"""``gptcourse check-stage``: every rule of ``rules.RULES`` on a stage, in seconds.

The static rules read the stage's files (``--quick`` runs only those); the run rules then
run its code (its reference notebook, its own tests, the scan of its suites, the measurement
of its claims and of its tolerances' margins: seconds each, in child processes), and the
graded rules read its catalogue graded once: the reference, the empty release and every
catalogued variant in one batch. Each problem is printed under its rule's name.

Example (from the repository's root)::

    $ gptcourse check-stage 03 --quick
    03_attention: OK (static rules; 4 questions, 49 points, 27 mistakes, 5 alternatives, 11 docstring examples;
    3 written questions, 7 points, graded by hand)
"""

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from autograder.course import Stage

from .grades import CatalogueGrades
from .rules import RULES, Rule, apply, get_rule
from .static_rules import Subject, summary


@dataclass
class LintReport:
    """What ``lint_stage`` found: each broken rule with its problems, and a summary."""

    stage: str
    broken: dict[str, list[str]] = field(default_factory=dict)  # rule name -> its problems
    summary: str = ""
    graded: bool = False

    @property
    def ok(self) -> bool:
        return not self.broken

    @property
    def problems(self) -> list[str]:
        """Every problem, prefixed by the rule it breaks."""
        return [f"[{rule}] {problem}" for rule, problems in self.broken.items() for problem in problems]

    def render(self) -> str:
        what = "static, run and graded rules" if self.graded else "static rules"
        if self.ok:
            return f"{self.stage}: OK ({what}; {self.summary})"
        count = sum(map(len, self.broken.values()))
        return "\n".join([f"{self.stage}: {count} problem(s) ({what})", *(f"  - {p}" for p in self.problems)])


def run_rules(rules: list[Rule], target, report: LintReport) -> bool:
    """Apply ``rules`` in order, recording what they find; False when a blocking rule failed.
    A ``last`` rule runs only when every rule before it that is not ``last`` holds."""
    for rule in rules:
        if rule.last and not _gradable(report):
            continue
        found = apply(rule, target)
        if found:
            report.broken[rule.name] = found
            if rule.blocking:
                return False
    return True


def lint_stage(
    stage: Stage,
    grade: bool = True,
    workers: int = 2,
    grades: CatalogueGrades | None = None,
    reuse: bool = True,
) -> LintReport:
    """Check a stage folder by every rule; with ``grade``, run its code and grade its catalogue too (or
    read ``grades``), taking the reference's outputs for the tests a variant's change cannot reach unless
    ``reuse`` is off."""
    subject = Subject(stage)
    report = LintReport(stage.id)
    if not run_rules([r for r in RULES if r.static], subject, report) or not _gradable(report):
        return report  # the summary reads what a broken rule may have found unreadable (a written question)
    report.summary = summary(subject)
    if not (grade or grades is not None):
        return report
    run_rules([r for r in RULES if r.runs], subject, report)
    graded_rules = [r for r in RULES if r.graded]
    if grades is None:
        with tempfile.TemporaryDirectory(prefix=f"gptcourse-check-{stage.id}-") as tmp:
            run_rules(graded_rules, CatalogueGrades(stage, Path(tmp), workers, reuse=reuse), report)
    else:
        run_rules(graded_rules, grades, report)
    report.graded = True
    return report


def _gradable(report: LintReport) -> bool:
    """Whether the graded rules may run: no static rule is broken but a ``last`` one."""
    return all(get_rule(name).last for name in report.broken)


def static_problems(stage: Stage) -> list[str]:
    """The problems the static rules find (``--quick``), each prefixed by its rule."""
    report = LintReport(stage.id)
    run_rules([r for r in RULES if r.static], Subject(stage), report)
    return report.problems
