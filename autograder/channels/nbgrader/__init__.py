"""nbgrader: ``nbgrader autograde`` grading through the gptcourse engine.

A course directory made by ``gptcourse build`` (``release/nbgrader/``) wires the engine
into nbgrader's own autograde pipeline (``gptcourse_config.py``): ``preprocessor``
replaces nbgrader's ``Execute`` (no kernel runs the submission), ``worker`` is the
process in which the engine grades the submissions (kept from one to the next), and ``autograde`` is what
``gptcourse grade --nbgrader`` runs: nbgrader's own autograde, then a look at its
gradebook. Everything else (gradebook, formgrader, manual grades, late penalties,
feedback, export) is nbgrader's, unchanged.
"""

TESTS_FOLDER = "gptcourse_tests"  # <course>/gptcourse_tests/<stage>/: what the engine grades with
TEST_FILES = ("public.py", "hidden.py", "fixtures.json")
IDLE = 120.0  # seconds a kept worker (``worker --serve``) waits for the next submission before it stops


def grade_cell_id(qid: str) -> str:
    """The nbgrader id of question ``qid``'s grade cell (the build names it, the engine fills it).

    >>> grade_cell_id("build_vocab")
    'build_vocab-tests'
    """
    return f"{qid}-tests"


def question_of(grade_id: str, qids: list[str]) -> str | None:
    """The question whose grade cell has id ``grade_id``, or None (a cell the build did not make).

    >>> question_of("ngram-tests", ["build_vocab", "ngram"]), question_of("essay", ["ngram"])
    ('ngram', None)
    """
    return next((q for q in qids if grade_cell_id(q) == grade_id), None)


def written_cell_id(wid: str) -> str:
    """The nbgrader id of written question ``wid``'s answer cell (graded by hand in the formgrader).

    >>> written_cell_id("scaling")
    'scaling-written'
    """
    return f"{wid}-written"
