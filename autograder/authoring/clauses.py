"""What ``gptcourse check-stage`` asks of a stage's clause table (``clauses.md``; its format and
reader: ``autograder.build.clauses``): a table for every question, a hidden test for every
clause, ids that are words, and a clause for every test.

Example:
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "clauses.md"
    >>> _ = path.write_text("## q\\n| id | clause | tests |\\n|---|---|---|\\n| x | y | `q: one` |\\n")
    >>> print(*clause_problems(path, {"q": {"q: one"}}, hidden=set()))
    clauses.md: q: no hidden test covers 'y' (only the public 'q: one'): grading must not rest on ...
"""

from pathlib import Path

from autograder.build.clauses import CLAUSE_ID, clause_rows, read_clauses


def clause_problems(path: Path, tests: dict[str, set[str]], hidden: set[str] | None = None) -> list[str]:
    """What is wrong with ``clauses.md`` given ``tests`` (``{question id: {test keys}}``); with
    ``hidden`` (the keys of the hidden tests), a clause that no hidden test covers is wrong too."""
    if not path.is_file():
        return [f"{path.name} is missing: a table of each question's contract clauses and their tests"]
    table = clause_rows(path.read_text(encoding="utf-8"))
    problems = [f"{path.name}: question {q} has no clause table" for q in tests if not table.get(q)]
    for question, rows in table.items():
        if question not in tests:
            problems.append(f"{path.name}: ## {question} is no question of the stage")
            continue
        ids = [c.id for c in rows if c.id]
        problems += [
            f"{path.name}: {question}: the id {i!r} names two clauses"
            for i in sorted({i for i in ids if ids.count(i) > 1})
        ]
        for clause in rows:
            if clause.id and not CLAUSE_ID.match(clause.id):
                problems.append(
                    f"{path.name}: {question}: the clause id {clause.id!r} is not a word or words joined by '-'"
                )
            if not clause.tests:
                problems.append(f"{path.name}: {question}: no test covers {clause.text!r}")
            elif hidden is not None and not set(clause.tests) & hidden:
                problems.append(
                    f"{path.name}: {question}: no hidden test covers {clause.text!r} (only the public "
                    f"{clause.tests[0]!r}{' and others' if len(clause.tests) > 1 else ''}): "
                    "grading must not rest on tests students can see"
                )
            problems += [
                f"{path.name}: {question}: {name!r} names no test of {question}"
                for name in clause.tests
                if name not in tests[question]
            ]
    return problems


def uncited_tests(path: Path, tests: dict[str, list[str]]) -> list[str]:
    """The tests (``{question id: [test keys in order]}``) that no clause of their question
    in ``clauses.md`` cites, each as a problem naming it."""
    table = read_clauses(path)
    problems = []
    for question, keys in tests.items():
        cited = {name for clause in table.get(question, []) for name in clause.tests}
        problems += [
            f"{path.name}: {question}: the test {key!r} is cited by no clause: add it to the clause it enforces"
            for key in keys
            if key not in cited
        ]
    return problems


def clause_counts(path: Path) -> dict[str, tuple[int, int]]:
    """``{question: (clauses, distinct tests cited)}``, for reports."""
    table = clause_rows(path.read_text(encoding="utf-8"))
    return {q: (len(rows), len({n for c in rows for n in c.tests})) for q, rows in table.items()}
