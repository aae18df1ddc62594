"""A stage's contract, clause by clause, with the tests that cover each (``clauses.md``): the
table read, and the hidden tests that prove each public test (saved with the fixtures).

Every question has a section, ``## <question id>``, holding a table whose rows are the
clauses of its contract (each argument and default, each edge case, each stated error,
each property), each with a short id, and, in backticks, the names of the tests that
cover the clause::

    ## ngram

    | id | clause | tests |
    |---|---|---|
    | alpha-default | `alpha` defaults to 1 (add-one) | `ngram: the default alpha is add-one` |
    | unigram | n = 1 ignores any context | `ngram: a unigram model ignores the context` |
    | dtype | the probabilities are float64 tensors | `ngram: the probabilities are float64` |

A test is named as everywhere else, ``"<question id>: <description>"``. An id is a short
word or words joined by ``-`` (unique within its question); a catalogued mistake declares
the clauses it breaks by these ids (``Variant(..., clauses=("alpha-default",))``). An id
that starts with ``dtype`` or ``device`` marks a dtype or device clause: the only tests
that an output in another dtype may fail (``gptcourse check-stage``'s dtype audit). A
table of two columns (``| clause | tests |``, no ids) still parses, its clauses without
ids. The checker (``gptcourse check-stage``; ``autograder.authoring.clauses``) refuses a
question without a table, a clause without a hidden test, a test name that names no test of
that question, an id used twice in a question, and a test that no clause cites.

Example:
    >>> table = parse_clauses("## q\\n\\n| clause | tests |\\n|---|---|\\n| x | `q: one`, `q: two` |\\n")
    >>> table["q"]
    [('x', ['q: one', 'q: two'])]
    >>> rows = clause_rows("## q\\n| id | clause | tests |\\n|---|---|---|\\n| dtype-out | y is float32 | `q: one` |")
    >>> rows["q"][0].id, rows["q"][0].text, rows["q"][0].tests, rows["q"][0].about_dtype
    ('dtype-out', 'y is float32', ['q: one'], True)
"""

import re
from dataclasses import dataclass
from pathlib import Path

from autograder.engine.judge import PROVEN_BY

_TICKED = re.compile(r"`([^`]+)`")
CLAUSE_ID = re.compile(r"^[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)*$")
DTYPE_PREFIXES = ("dtype", "device")


@dataclass(frozen=True)
class Clause:
    """One row of a clause table: its id ("" in a table without ids), its text, the tests citing it."""

    id: str
    text: str
    tests: list[str]

    @property
    def about_dtype(self) -> bool:
        """A dtype or device clause (its id starts with ``dtype`` or ``device``)."""
        return self.id.lower().startswith(DTYPE_PREFIXES)

    @property
    def label(self) -> str:
        """How problems name the clause: its id and text."""
        return f"[{self.id}] {self.text!r}" if self.id else repr(self.text)


def clause_rows(text: str) -> dict[str, list[Clause]]:
    """``{question id: [Clause, ...]}`` from a clauses.md text."""
    table: dict[str, list[Clause]] = {}
    question, with_ids = None, False
    for line in text.splitlines():
        if line.startswith("## "):
            question = line[3:].strip()
            table.setdefault(question, [])
        elif question and line.startswith("|") and not re.match(r"^\|\s*-", line):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 2:
                continue
            if cells[0].lower() in ("clause", "id"):
                with_ids = cells[0].lower() == "id"
                continue
            clause_id = cells[0].strip("`") if with_ids and len(cells) >= 3 else ""
            words = cells[1] if with_ids and len(cells) >= 3 else cells[0]
            table[question].append(Clause(clause_id, words, _TICKED.findall(cells[-1])))
    return table


def parse_clauses(text: str) -> dict[str, list[tuple[str, list[str]]]]:
    """``{question id: [(clause, [test names]), ...]}`` from a clauses.md text."""
    return {q: [(c.text, c.tests) for c in rows] for q, rows in clause_rows(text).items()}


def read_clauses(path: Path) -> dict[str, list[Clause]]:
    """The clause rows of a stage's ``clauses.md`` (empty when it is missing)."""
    return clause_rows(path.read_text(encoding="utf-8")) if path.is_file() else {}


def proving_partners(table: dict[str, list[Clause]], cases) -> dict[str, list[str]]:
    """``{public test key: [hidden test keys]}``: for each public test of the work or of structure,
    the hidden tests of a role that proves it (``PROVEN_BY``) that check nothing it does not: every
    clause citing such a hidden test cites the public test too. Grading counts a passed public
    test's points once one of these passed (``judge``): its inputs and answer are printed in the
    notebook, theirs are not, and code that gets the public test's clauses right passes them
    whatever else it gets wrong (a catalogued mistake fails only tests its clauses cite). A public
    test without such a partner is left out: its points count once a hidden test of its question's
    work passes.

    Example:
        >>> from types import SimpleNamespace as T
        >>> cases = [T(key="q: shown", public=True, role="work"), T(key="q: same", public=False, role="work"),
        ...          T(key="q: more", public=False, role="work"), T(key="q: raises", public=False, role="guard")]
        >>> rows = "| x | y | `q: shown`, `q: same`, `q: more`, `q: raises` |\\n| z | w | `q: more` |"
        >>> proving_partners(clause_rows("## q\\n| id | clause | tests |\\n|---|---|---|\\n" + rows), cases)
        {'q: shown': ['q: same']}
    """
    cited: dict[str, set[tuple[str, str]]] = {}
    for qid, rows in table.items():
        for clause in rows:
            for name in clause.tests:
                cited.setdefault(name, set()).add((qid, clause.id or clause.text))
    partners: dict[str, list[str]] = {}
    for case in cases:
        if not case.public or case.role not in PROVEN_BY:
            continue
        mine = cited.get(case.key, set())
        found = [
            other.key
            for other in cases
            if not other.public
            and other.role in PROVEN_BY[case.role]
            and cited.get(other.key)
            and cited[other.key] <= mine
        ]
        if found:
            partners[case.key] = sorted(found)
    return partners
