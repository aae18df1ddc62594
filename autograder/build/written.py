"""Written questions: conceptual questions that a person grades, from a stage's notebook source.

In ``notebook.md`` a written question is a fenced block whose info string is ``written``,
its id and its points; the prompt (Markdown, what students read) comes first, then a line
``<!-- rubric -->`` and the rubric (Markdown, what graders read)::

    ```written scaling 2
    Why does attention divide the scores by $\\sqrt{d_k}$? ...
    <!-- rubric -->
    - 1 point: ...
    - 1 point: ...
    ```

The student notebook gets the prompt and an answer cell under it (``student_cells``); the
rubric never enters a student's notebook. ``written_questions`` is how every channel
reads them (one list per stage, in notebook order):

- nbgrader: a read-only prompt cell and a manually graded answer cell whose source (in the
  instructor's ``source/`` notebook only) is the rubric (``build.nbgrader_course``);
- Gradescope: the zip cannot add questions to an assignment's outline, so the build writes
  ``release/gradescope/<stage>-written.md`` (``gradescope_sheet``), what the instructor
  sets up by hand; the autograder's output lists the answers it found
  (``channels.gradescope.entry``), never in its score;
- ``gptcourse grade``: a column per written question in ``grades.csv``, left for the
  instructor's scores (``channels.local.gradebook``), and ``written.md``, every answer by
  question with its rubric;
- otter-grader: otter's manual questions, in no test file of the zip; its plugin marks them
  for otter's PDF export (``channels.otter.written``) and the build writes
  ``release/otter/<stage>-written.md`` and the PDF template's notebook (``build.otter_zip``).

No written question is part of the autograder's total.

Example:
    >>> from autograder.course import get_stage
    >>> [(q.id, q.points) for q in written_questions(get_stage("03_attention"))]
    [('relative', 3.0), ('blocking', 2.0), ('scaling', 2.0)]
"""

import json
import re
from dataclasses import asdict, dataclass

from autograder.course import Stage
from autograder.engine.submission import (
    ANSWER_PLACEHOLDER,
    TAG_WRITTEN,
    TAG_WRITTEN_ANSWER,
)

from .source import RUBRIC_BREAK, Block, SourceError, parse_source

ID = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class WrittenQuestion:
    """One written question of a stage: its id, points, prompt and rubric (Markdown)."""

    stage: str
    id: str
    points: float
    prompt: str
    rubric: str

    @property
    def title(self) -> str:
        """How every channel heads it: ``Written question scaling (2 points)``."""
        return f"Written question {self.id} ({self.points:g} point{'' if self.points == 1 else 's'})"

    def as_dict(self, rubric: bool = True) -> dict:
        """The question as plain data (``rubric=False``: what an autograder may carry)."""
        doc = asdict(self)
        if not rubric:
            del doc["rubric"]
        return doc


def parse_written(block: Block, where: str, stage_id: str = "") -> WrittenQuestion:
    """A ``written`` block as a question; a ``SourceError`` naming ``where`` and the id when malformed."""
    words = block.arg.split()
    if len(words) != 2 or not ID.match(words[0]):
        raise SourceError(f"{where}: a written question opens as ```written ID POINTS (got `{block.arg}`)")
    qid = words[0]
    try:
        points = float(words[1])
    except ValueError:
        points = 0.0
    if not points > 0:
        raise SourceError(f"{where}: written question {qid}: points must be a positive number, got `{words[1]}`")
    parts = block.text.split(f"\n{RUBRIC_BREAK}\n")
    if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
        raise SourceError(
            f"{where}: written question {qid}: write the prompt, then a line `{RUBRIC_BREAK}`, then the rubric"
        )
    prompt, rubric = (p.strip("\n") for p in parts)
    if "BEGIN SOLUTION" in block.text or "END SOLUTION" in block.text:
        raise SourceError(f"{where}: written question {qid}: nbgrader reads `BEGIN/END SOLUTION` as markers")
    return WrittenQuestion(stage_id, qid, points, prompt, rubric)


def written_questions(stage: Stage) -> list[WrittenQuestion]:
    """The stage's written questions, in notebook order: ids unique and apart from the code questions'."""
    found = [parse_written(b, str(stage.source), stage.id) for b in parse_source(stage.source) if b.kind == "written"]
    ids = [q.id for q in found]
    code = {q for q, _ in stage.tests().questions()}
    for qid in dict.fromkeys(ids):
        if ids.count(qid) > 1:
            raise SourceError(f"{stage.source}: two written questions are called {qid}")
        if qid in code:
            raise SourceError(f"{stage.source}: written question {qid} has the id of a code question")
    return found


def prompt_markdown(question: WrittenQuestion) -> str:
    """The prompt cell's Markdown, as students read it."""
    return (
        f"### {question.title}\n\n{question.prompt}\n\n"
        "*Write your answer in the cell below, in place of its text (a few sentences; double-click the cell to "
        "edit it; Markdown cells you add right under it are part of the answer too). It is graded by hand, after "
        "the deadline; the automatic checks and scores leave it out.*"
    )


def student_cells(question: WrittenQuestion) -> list[dict]:
    """The prompt cell and the answer cell (a Markdown cell holding the placeholder)."""
    meta = {"written": question.id, "points": question.points}
    return [
        {
            "cell_type": "markdown",
            "metadata": {"tags": [TAG_WRITTEN], "gptcourse": meta},
            "source": prompt_markdown(question),
        },
        {
            "cell_type": "markdown",
            "metadata": {"tags": [TAG_WRITTEN_ANSWER], "gptcourse": {"written_answer": question.id}},
            "source": ANSWER_PLACEHOLDER,
        },
    ]


def written_json(stage: Stage) -> str:
    """The questions as the Gradescope zip carries them (``stage/written.json``: no rubric)."""
    return json.dumps([q.as_dict(rubric=False) for q in written_questions(stage)], indent=1, ensure_ascii=False) + "\n"


GRADESCOPE_STEPS = """\
Gradescope grades these by hand beside the autograder. The zip cannot add them to the
assignment (an autograder only reports tests), so set them up once per assignment:

1. In the programming assignment's **Settings**, tick **Enable Manual Grading** (or tick it
   when you create the assignment), and save.
2. Open **Edit Outline**. The outline holds the **Autograder** item, worth the autograder's
   points ({autograded:g} for this stage). Add one question per written question below, in
   this order, titled by its id and worth its points, so that the assignment is worth
   {total:g} points in all.
3. Upload `{stage}.zip` under **Configure Autograder**, as before.
4. After the deadline, grade each question under **Grade Submissions** with the rubric items
   below (create them on the grading page of the question; **Import** copies a rubric from
   the same question of an earlier assignment). Each student's answer is the cell under the
   question in their notebook; the autograder's output also repeats every answer it found,
   under "Written questions".

The autograder's score never includes these points; Gradescope adds them to it.
"""


def gradescope_sheet(stage: Stage) -> str:
    """``release/gradescope/<stage>-written.md``: the steps, then each question's title, points,
    prompt and rubric."""
    questions = written_questions(stage)
    autograded = sum(p for _, p in stage.tests().questions())
    total = autograded + sum(q.points for q in questions)
    lines = [
        f"# {stage.id}: written questions on Gradescope",
        "",
        GRADESCOPE_STEPS.format(autograded=autograded, total=total, stage=stage.id),
    ]
    return "\n".join(lines + question_sections(questions))


def question_sections(questions: list[WrittenQuestion]) -> list[str]:
    """A sheet's lines on each question: its id and points, the prompt as students read it, the rubric."""
    lines = []
    for q in questions:
        lines += [
            f"## {q.id} ({q.points:g} points)",
            "",
            "Prompt (as students read it):",
            "",
            *(f"> {line}" if line else ">" for line in q.prompt.splitlines()),
            "",
            "Rubric:",
            "",
            q.rubric,
            "",
        ]
    return lines
