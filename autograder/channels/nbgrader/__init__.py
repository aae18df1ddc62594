"""nbgrader: the course directory's gradebook, graded by the engine."""


def grade_cell_id(qid: str) -> str:
    """The nbgrader id of question ``qid``'s grade cell (the build names it, the gradebook bridge writes its score)."""
    return f"{qid}-tests"
