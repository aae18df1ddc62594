"""Every clause of every question's contract has a test: the tables (``clauses.md``) parse,
name only tests that exist, and give per question the number of clauses and of tests.

``print_counts`` prints them for the closing note:
``python -c "import sys; sys.path.insert(0, 'tests'); import test_clauses; test_clauses.print_counts()"``.
"""

import pytest

from autograder.authoring.clauses import clause_counts, clause_problems
from autograder.build.clauses import parse_clauses
from autograder.course import all_stages

STAGES = all_stages()

TABLE = """# Clauses of a scratch stage

## ngram

| clause | tests |
|---|---|
| `alpha` defaults to 1 | `ngram: the default alpha is add-one` |
| n = 1 ignores the context | `ngram: a unigram model ignores the context`, `ngram: the default alpha is add-one` |

## encode

| clause | tests |
|---|---|
| an unknown character raises ValueError | `encode: unknown characters` |
"""
TESTS = {
    "ngram": {"ngram: the default alpha is add-one", "ngram: a unigram model ignores the context"},
    "encode": {"encode: unknown characters"},
}


def test_a_table_parses_into_clauses_and_their_tests(tmp_path):
    table = parse_clauses(TABLE)
    assert table["ngram"][1] == (
        "n = 1 ignores the context",
        ["ngram: a unigram model ignores the context", "ngram: the default alpha is add-one"],
    )
    path = tmp_path / "clauses.md"
    path.write_text(TABLE)
    assert clause_problems(path, TESTS) == []
    assert clause_counts(path) == {"ngram": (2, 2), "encode": (1, 1)}


@pytest.mark.parametrize(
    "change,problem",
    [
        (
            "| an unknown character raises ValueError | `encode: unknown characters` |",
            "encode: no test covers 'an unknown character raises ValueError'",
        ),
        ("`encode: unknown characters` |", "'encode: unknown letters' names no test of encode"),
        ("## encode", "question encode has no clause table"),
    ],
)
def test_the_checker_refuses_an_uncovered_clause_an_unknown_test_and_a_missing_question(tmp_path, change, problem):
    broken = {
        "| an unknown character raises ValueError | `encode: unknown characters` |": TABLE.replace(
            "`encode: unknown characters` |", "|"
        ),
        "`encode: unknown characters` |": TABLE.replace(
            "`encode: unknown characters` |", "`encode: unknown letters` |"
        ),
        "## encode": TABLE[: TABLE.index("## encode")],
    }[change]
    path = tmp_path / "clauses.md"
    path.write_text(broken)
    assert any(problem in p for p in clause_problems(path, TESTS)), clause_problems(path, TESTS)


def _tests_by_question(stage) -> dict[str, set[str]]:
    tests = stage.tests()
    return {q: {c.key for c in tests.cases if c.qid == q} for q, _ in tests.questions()}


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.id)
def test_every_stage_has_a_clause_table_that_covers_every_question(stage, capsys):
    path = stage.folder / "clauses.md"
    assert path.is_file(), f"{stage.id} has no clauses.md (a table of each question's contract clauses and their tests)"
    by_question = _tests_by_question(stage)
    assert clause_problems(path, by_question) == []
    counts = clause_counts(path)
    assert set(counts) == set(by_question) and all(clauses >= 1 and tests >= 1 for clauses, tests in counts.values())
    print(clause_table(stage))
    assert stage.id in capsys.readouterr().out


def clause_table(stage) -> str:
    """A Markdown table of the stage's questions: clauses, tests citing them, and the question's tests."""
    counts = clause_counts(stage.folder / "clauses.md")
    by_question = _tests_by_question(stage)
    rows = [
        f"| {stage.id} | {q} | {counts.get(q, (0, 0))[0]} | {counts.get(q, (0, 0))[1]} | {len(by_question[q])} |"
        for q in by_question
    ]
    return "\n".join(["| stage | question | clauses | tests cited | tests |", "|---|---|---|---|---|", *rows])


def print_counts() -> None:
    """The counts of every stage that has a table (for the closing note)."""
    for stage in STAGES:
        if (stage.folder / "clauses.md").is_file():
            print(clause_table(stage), end="\n\n")
        else:
            print(f"{stage.id}: no clauses.md yet ({sum(len(k) for k in _tests_by_question(stage).values())} tests)\n")
