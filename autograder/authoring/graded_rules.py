"""The rules read off the graded catalogue (``grades.CatalogueGrades``): every graded question
proven three ways, and no test that breaks on an output.

Each function takes the stage's ``CatalogueGrades`` and returns its problems (empty: the
stage keeps the rule); ``feedback_rules`` holds the rules on hints and messages.
"""

from .grades import CatalogueGrades


def reference_and_empty(grades: CatalogueGrades) -> list[str]:
    """The reference earns every point; the empty release none, each failure with a message."""
    problems = []
    if grades.scores("reference") != grades.maxima:
        lost = [r.key for r in grades.by_name["reference"].results if not r.passed]
        problems.append(f"the reference does not earn full marks: it fails {', '.join(lost)}")
    empty = grades.by_name["empty"]
    if empty.total:
        earned = [r.key for r in empty.results if r.score]
        problems.append(f"the empty release earns {empty.total:g} points, on {', '.join(earned)}")
    return problems + _silent(grades, "empty", "the empty release")


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
    return [f"{name}: {fault}" for name, graded in grades.by_name.items() for fault in graded.faults]
