"""A stage's contract, clause by clause, with the tests that cover each (``clauses.md``).

Every question has a section, ``## <question id>``, holding a table whose rows are the
clauses of its contract (each argument and default, each edge case, each stated error,
each property) and, in backticks, the names of the tests that cover the clause::

    ## ngram

    | clause | tests |
    |---|---|
    | `alpha` defaults to 1 (add-one) | `ngram: the default alpha is add-one` |
    | n = 1 ignores any context | `ngram: a unigram model ignores the context` |

A test is named as everywhere else, ``"<question id>: <description>"``. The checker
(``gptcourse check-stage``) refuses a question without a table, a clause without a hidden
test, and a test name that names no test of that question.

Example:
    >>> table = parse_clauses("## q\\n\\n| clause | tests |\\n|---|---|\\n| x | `q: one`, `q: two` |\\n")
    >>> table["q"]
    [('x', ['q: one', 'q: two'])]
"""

import re
from pathlib import Path

_TICKED = re.compile(r"`([^`]+)`")


def parse_clauses(text: str) -> dict[str, list[tuple[str, list[str]]]]:
    """``{question id: [(clause, [test names]), ...]}`` from a clauses.md text."""
    table: dict[str, list[tuple[str, list[str]]]] = {}
    question = None
    for line in text.splitlines():
        if line.startswith("## "):
            question = line[3:].strip()
            table.setdefault(question, [])
        elif question and line.startswith("|") and not re.match(r"^\|\s*-", line):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 2 or cells[0].lower() == "clause":
                continue
            table[question].append((cells[0], _TICKED.findall(cells[-1])))
    return table


def clause_problems(path: Path, tests: dict[str, set[str]], hidden: set[str] | None = None) -> list[str]:
    """What is wrong with ``clauses.md`` given ``tests`` (``{question id: {test keys}}``); with
    ``hidden`` (the keys of the hidden tests), a clause that no hidden test covers is wrong too."""
    if not path.is_file():
        return [f"{path.name} is missing: a table of each question's contract clauses and their tests"]
    table = parse_clauses(path.read_text(encoding="utf-8"))
    problems = [f"{path.name}: question {q} has no clause table" for q in tests if not table.get(q)]
    for question, rows in table.items():
        if question not in tests:
            problems.append(f"{path.name}: ## {question} is no question of the stage")
            continue
        for clause, names in rows:
            if not names:
                problems.append(f"{path.name}: {question}: no test covers {clause!r}")
            elif hidden is not None and not set(names) & hidden:
                problems.append(
                    f"{path.name}: {question}: no hidden test covers {clause!r} (only the public {names[0]!r}"
                    f"{' and others' if len(names) > 1 else ''}): grading must not rest on tests students can see"
                )
            problems += [
                f"{path.name}: {question}: {name!r} names no test of {question}"
                for name in names
                if name not in tests[question]
            ]
    return problems


def clause_counts(path: Path) -> dict[str, tuple[int, int]]:
    """``{question: (clauses, distinct tests cited)}``, for reports."""
    table = parse_clauses(path.read_text(encoding="utf-8"))
    return {q: (len(rows), len({n for _, names in rows for n in names})) for q, rows in table.items()}
