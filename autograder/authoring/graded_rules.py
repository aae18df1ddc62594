"""The rules read off the graded catalogue (``grades.CatalogueGrades``): every graded question
proven three ways, no test that breaks on an output, no point for a no-op, only structure
points for code that builds and does nothing else, a dtype slip charged to its clause alone,
and a catalogued mistake for every clause.

Each function takes the stage's ``CatalogueGrades`` and returns its problems (empty: the
stage keeps the rule); ``feedback_rules`` holds the rules on hints and messages.
"""

import json

from autograder.build.clauses import Clause
from autograder.build.notebooks import make_notebook, release_folder
from autograder.engine import codec
from autograder.engine.judge import follows_from

from .catalogue import Variant
from .declarations import hidden_declaration
from .grades import CatalogueGrades
from .static_rules import readable

USES = "QUESTIONS_USE"  # in hidden.py: {question: (the questions whose code its tests run by design)}


def empty_earns_nothing(grades: CatalogueGrades) -> list[str]:
    """The empty release earns no point, each of its failures with a message."""
    empty = grades.by_name["empty"]
    problems = []
    if empty.total:
        earned = [r.key for r in empty.results if r.score]
        problems.append(
            f"the empty release earns {empty.total:g} point{'' if empty.total == 1 else 's'}, on {', '.join(earned)}"
        )
    return problems + _silent(grades, "empty", "the empty release")


def reference_full(grades: CatalogueGrades) -> list[str]:
    """The reference earns every point. Every later graded rule compares with it, so they wait until it does."""
    if grades.scores("reference") == grades.maxima:
        return []
    lost = [f"{r.key} ({_shortened(r.message)})" for r in grades.by_name["reference"].results if not r.passed]
    return [
        f"the reference does not earn full marks: it fails {'; '.join(lost)}. The other graded rules compare"
        " every variant with the reference, so they run once it earns full marks"
    ]


def mistakes_cost_their_own_question(grades: CatalogueGrades) -> list[str]:
    """Each catalogued mistake loses points on its own question and on no other, each failure saying why."""
    problems = []
    for variant in grades.mistakes:
        scores = grades.scores(variant.slug)
        if scores[variant.qid] >= grades.maxima[variant.qid]:
            problems.append(f"mistake {variant.slug!r} earns full marks on {variant.qid}")
        others = sorted(q for q, s in scores.items() if q != variant.qid and s < grades.maxima[q])
        if others:
            problems.append(f"mistake {variant.slug!r} also loses points on {', '.join(others)}")
        problems += _silent(grades, variant.slug, f"mistake {variant.slug!r}")
    return problems


def _shortened(message: str, limit: int = 200) -> str:
    """A failure's message on one line, cut at ``limit`` characters.

    >>> _shortened("expected 3\\ngot 4"), _shortened("x" * 300)[-5:]
    ('expected 3 got 4', 'xx...')
    """
    text = " ".join(message.split()) or "no message"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _silent(grades: CatalogueGrades, name: str, who: str) -> list[str]:
    """A problem when submission ``name`` fails a test that says nothing about why."""
    silent = [r.key for r in grades.by_name[name].results if not r.passed and not r.message]
    return [f"{who} fails {', '.join(silent)} without a message"] if silent else []


def alternatives_earn_everything(grades: CatalogueGrades) -> list[str]:
    """Each correct alternative in another style earns full marks."""
    problems = []
    for variant in grades.alternatives:
        lost = [
            f"{r.key} ({r.message.splitlines()[0][:120] if r.message else 'no message'})"
            for r in grades.by_name[variant.slug].results
            if not r.passed
        ]
        if lost:
            problems.append(f"alternative {variant.slug!r} fails {'; '.join(lost)}")
    return problems


def checks_never_fault(grades: CatalogueGrades) -> list[str]:
    """No test's check (or hint) breaks on any graded output: a check that raises is a fault of the course."""
    return [f"{grades.describe(name)}: {fault}" for name, graded in grades.by_name.items() for fault in graded.faults]


def _first_line(text: str, limit: int = 120) -> str:
    """The first line of a message, cut to ``limit`` characters."""
    line = next((x for x in text.strip().splitlines() if x.strip()), "no message")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def noops_earn_nothing(grades: CatalogueGrades) -> list[str]:
    """A notebook whose every stub does nothing (returns None, its first argument, or zeros shaped like
    the reference's answer) earns no point on any question: a test a no-op passes is a guard
    (``guard=True``, or a test of errors or dtypes), counted only when a test of the work passes."""
    problems = []
    guards = grades.tests.guard_tests
    for variant in grades.noops:
        graded = grades.by_name[variant.slug]
        for qid, score in grades.scores(variant.slug).items():
            if score <= 0:
                continue
            earned = [r for r in graded.results if r.qid == qid and r.score > 0]
            passing = [r.key for r in earned if r.key not in guards]
            problems.append(
                f"{variant.what} earns {score:g} of {grades.maxima[qid]:g} points on {qid}: it passes "
                f"{', '.join(repr(k) for k in passing)}, which {'is' if len(passing) == 1 else 'are'} no guard"
                f"{_unlocked([r for r in earned if r.key in guards])}: make such a test check the work, or mark "
                f"it guard=True (it then counts only when a test of {qid}'s work passes)"
            )
    return problems


def _unlocked(guards: list) -> str:
    """What the guards whose points a wrong pass unlocked cost, for a problem's text ("" for none).

    >>> from types import SimpleNamespace as R
    >>> _unlocked([R(key="q: raises", score=2.0)])
    " (and so unlocks 2 points of the guard 'q: raises')"
    """
    if not guards:
        return ""
    points = sum(r.score for r in guards)
    names = ", ".join(repr(r.key) for r in guards)
    plural = "s" if len(guards) > 1 else ""
    return f" (and so unlocks {points:g} point{'' if points == 1 else 's'} of the guard{plural} {names})"


def building_earns_only_structure(grades: CatalogueGrades) -> list[str]:
    """A notebook whose every function stub raises ``ValueError`` on every call, and whose every class stub
    keeps the reference's ``__init__`` and raises ``ValueError`` from its other methods, earns only the points
    of tests marked ``structure=True`` (the right parts exist), and passes each of them: a test of structure
    unlocks no guard, so such code earns no error test."""
    roles = {case.key: case.role for case in grades.tests.cases}
    problems = []
    for variant in grades.builders:
        graded = grades.by_name[variant.slug]
        for qid in grades.maxima:
            mine = [r for r in graded.results if r.qid == qid]
            earned = [r for r in mine if r.score > 0 and roles[r.key] != "structure"]
            passing = [r.key for r in earned if roles[r.key] == "work"]
            if passing:
                problems.append(
                    f"{variant.what} passes {', '.join(repr(k) for k in passing)} of {qid}"
                    f"{_unlocked([r for r in earned if roles[r.key] == 'guard'])}: mark "
                    f"{'it' if len(passing) == 1 else 'each'} structure=True, or make "
                    f"{'it' if len(passing) == 1 else 'each'} check behaviour"
                )
            failed = [r.key for r in mine if not r.passed and roles[r.key] == "structure"]
            if failed:
                problems.append(
                    f"{variant.what} fails {', '.join(repr(k) for k in failed)} of {qid}, marked structure=True: "
                    "a test that the reference's __init__ alone does not pass checks behaviour; drop the mark"
                )
    return problems


def dtype_slips_cost_only_their_clause(grades: CatalogueGrades) -> list[str]:
    """Each question's code returning every tensor in another dtype (floats in float64, integers in int32)
    fails only tests that a dtype or device clause of that question cites (``clauses.md`` ids starting
    with ``dtype`` or ``device``): value tests compare values (``dtype=None``), each dtype clause has its own test."""
    problems = []
    clauses = grades.clauses
    for variant in grades.audits:
        allowed = {name for clause in clauses.get(variant.qid, []) if clause.about_dtype for name in clause.tests}
        for result in grades.by_name[variant.slug].results:
            if result.passed or result.withheld or result.key in allowed:
                continue
            where = "" if result.qid == variant.qid else f" (a test of another question, {result.qid})"
            problems.append(
                f"{variant.what} fails {result.key!r}{where}, which no dtype or device clause of "
                f"{variant.qid} cites: {_first_line(result.message)}"
            )
    return problems


def empty_answers_cost_their_own_question(grades: CatalogueGrades) -> list[str]:
    """A notebook with one question's stubs left as the release has them loses every point of that
    question and none of another (a student who skipped a question keeps the others), unless the
    hidden suite's ``QUESTIONS_USE`` says the other question's tests run that code by design (it
    must then lose points there: a declaration that nothing needs is stale)."""
    uses = hidden_declaration(grades.tests, USES)
    problems = [
        f"{USES} names {qid!r}, which is not a question of the stage"
        for qid in sorted(set(uses).union(*uses.values()) - set(grades.maxima))
    ]
    for variant in grades.empties:
        scores = grades.scores(variant.slug)
        if scores[variant.qid] > 0:
            problems.append(f"{variant.what} earns {scores[variant.qid]:g} points on {variant.qid}")
        for qid, score in scores.items():
            declared = variant.qid in uses.get(qid, ())
            if qid == variant.qid or declared != (score >= grades.maxima[qid]):
                continue
            if declared:
                problems.append(
                    f"{variant.what} loses nothing on {qid}, which {USES} says runs {variant.qid}'s code: drop it there"
                )
                continue
            failed = next(r for r in grades.by_name[variant.slug].results if r.qid == qid and not r.passed)
            problems.append(
                f"{variant.what} also loses {grades.maxima[qid] - score:g} points on {qid} ({failed.key!r}: "
                f"{_first_line(failed.message)}): give its tests a stand-in for the student's {variant.qid}, or, "
                f"if they run it by design, say so in hidden.py ({USES} = {{{qid!r}: ({variant.qid!r},)}})"
            )
    return problems


MIN_VALUE = 24  # characters of an expected value's JSON from which its text in a release is no chance


def release_holds_no_expected_value(grades: CatalogueGrades) -> list[str]:
    """No expected value a test compares with (the reference's output, as its JSON in the fixtures,
    ``MIN_VALUE`` characters or more) is in the student notebook as built (the check harness read
    unpacked) or in a file released beside it: students would read the answer."""
    values = {key: json.dumps(codec.encode(value), sort_keys=True) for key, value in grades.fixtures.items()}
    released = [readable(cell) for cell in make_notebook(grades.stage, "student")["cells"]]
    beside = release_folder(grades.stage) / "student" / grades.stage.id
    if beside.is_dir():
        released += [p.read_text(encoding="utf-8", errors="replace") for p in sorted(beside.rglob("*")) if p.is_file()]
    text = "\n".join(released)
    return [
        f"the release holds the expected value of {key!r} ({_first_line(value, 60)})"
        for key, value in values.items()
        if len(value) >= MIN_VALUE and value in text
    ]


def every_clause_has_a_mistake(grades: CatalogueGrades) -> list[str]:
    """Every clause of ``clauses.md`` (each row, by its id) is broken by a catalogued mistake that declares it
    alone (``Variant(..., clauses=("id",))``), fails a test the clause cites and loses points on its question;
    each mistake declares the clauses it breaks, and fails no test of its question that none of them explains."""
    clauses = grades.clauses
    problems = _clauses_without_ids(clauses)
    covered: set[tuple[str, str]] = set()
    for variant in grades.mistakes:
        problems += _declaration_problems(grades, variant, clauses.get(variant.qid, []), covered)
    for qid, rows in clauses.items():
        problems += [
            f"no catalogued mistake breaks {clause.label} of {qid} alone: add one that fails one of "
            f"{', '.join(repr(t) for t in clause.tests)} (Variant(..., clauses=({clause.id!r},)))"
            for clause in rows
            if clause.id and (qid, clause.id) not in covered
        ]
    return problems


def _clauses_without_ids(clauses: dict[str, list[Clause]]) -> list[str]:
    """A problem per question whose clause table has rows without an id (no mistake can declare them)."""
    problems = []
    for qid, rows in clauses.items():
        missing = [c.text for c in rows if not c.id]
        if missing:
            problems.append(
                f"{qid}: {len(missing)} clause(s) have no id (a table | id | clause | tests |), e.g. {missing[0]!r}"
            )
    return problems


def _declaration_problems(
    grades: CatalogueGrades, variant: Variant, rows: list[Clause], covered: set[tuple[str, str]]
) -> list[str]:
    """What is wrong with the clauses one mistake declares; the ``(question, id)`` it covers (a clause
    it declares alone and breaks) are added to ``covered``."""
    if not variant.clauses:
        return [f"mistake {variant.slug!r} declares no clause it breaks (clauses=(...) of {variant.qid})"]
    problems = []
    graded = grades.by_name[variant.slug]
    failed = {r.key for r in graded.results if r.qid == variant.qid and not r.passed and not r.withheld}
    if grades.scores(variant.slug)[variant.qid] >= grades.maxima[variant.qid]:
        problems.append(f"mistake {variant.slug!r} loses no point on {variant.qid}")
    by_id = {c.id: c for c in rows if c.id}
    declared = [by_id[i] for i in variant.clauses if i in by_id]  # an unknown id: the rule "catalogue complete"
    cited = {name for clause in declared for name in clause.tests}
    for clause in declared:
        if not failed & set(clause.tests):
            problems.append(
                f"mistake {variant.slug!r} declares it breaks {clause.label} of {variant.qid}, "
                f"but passes every test citing it ({', '.join(repr(t) for t in clause.tests)})"
            )
        elif len(variant.clauses) == 1:
            covered.add((variant.qid, clause.id))
    roots = follows_from(graded.results)
    problems += [
        f"mistake {variant.slug!r} fails {key!r}, which no clause it declares cites (declares "
        f"{', '.join(variant.clauses)}): declare the clause it breaks there too, or cite the test under a "
        "declared clause"
        for key in sorted(failed - cited)
        if not roots.get(key) or not set(roots[key]) <= cited
    ]
    return problems
