"""Written questions: the notebook directive, the student notebook (prompt and answer cell, never
the rubric), and every channel that carries them to a person who grades them: nbgrader's manually
graded answer cells (driven by nbgrader's own commands), the Gradescope zip's output and the sheet
an instructor sets the assignment up with, the local gradebook's columns left for manual scores
(kept across rebuilds, added to canvas.csv) and the class report. No written score ever reaches
the autograder's total."""

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kernels import run_starting_kernels
from nbcourse import Course, filled
from support import make_root

from autograder.build.fixtures import DEFAULT_DIR, stage_tests
from autograder.build.gradescope_zip import build_gradescope_zip, write_gradescope_sheet
from autograder.build.nbgrader_course import nbgrader_notebook
from autograder.build.notebooks import make_notebook, write_notebook
from autograder.build.source import Block, SourceError
from autograder.build.written import parse_written, written_questions
from autograder.channels.nbgrader import written_cell_id
from autograder.course import ASSIGNMENTS, all_stages, get_stage, questions
from autograder.engine.submission import ANSWER_PLACEHOLDER, TAG_WRITTEN, TAG_WRITTEN_ANSWER, written_answers

STAGE = "01_tokenisation"
ANSWERS = {"split": "Shuffling puts neighbouring text on both sides, so validation flatters the model."}


def gptcourse(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder.cli", *map(str, args)], capture_output=True, text=True)


def answered(notebook: dict, answers: dict[str, str]) -> dict:
    """A notebook whose written answer cells hold ``answers`` (the others keep the placeholder)."""
    notebook = json.loads(json.dumps(notebook))
    for cell in notebook["cells"]:
        qid = cell.get("metadata", {}).get("gptcourse", {}).get("written_answer")
        if qid in answers:
            cell["source"] = answers[qid]
    return notebook


def added_under(notebook: dict, qid: str, *texts: str) -> dict:
    """``notebook`` with a Markdown cell of the student's own per text right under ``qid``'s answer
    cell (with ids as Jupyter gives a new cell: 8 hex digits)."""
    notebook = json.loads(json.dumps(notebook))
    at = next(
        i for i, c in enumerate(notebook["cells"]) if c["metadata"].get("gptcourse", {}).get("written_answer") == qid
    )
    new = [
        {"cell_type": "markdown", "id": f"{i:x}a1b2c3d"[:8], "metadata": {}, "source": t} for i, t in enumerate(texts)
    ]
    notebook["cells"][at + 1 : at + 1] = new
    return notebook


def answers_in(path: Path) -> str:
    """The answer cells' text of a notebook nbgrader wrote (what the formgrader shows)."""
    return "\n".join(written_answers(json.loads(path.read_text(encoding="utf-8"))).values())


def rows(path: Path) -> dict[str, dict]:
    return {r["submission"]: r for r in csv.DictReader(path.open(encoding="utf-8"))}


def test_the_directive_is_checked_and_names_what_is_wrong():
    good = parse_written(Block("written", "why 2", "Why?\n<!-- rubric -->\n- 2 points: because."), "nb.md")
    assert (good.id, good.points, good.prompt, good.rubric) == ("why", 2.0, "Why?", "- 2 points: because.")
    for arg, text, words in [
        ("why", "Why?\n<!-- rubric -->\nR", "opens as ```written ID POINTS"),
        ("Why 2", "Why?\n<!-- rubric -->\nR", "opens as"),
        ("why two", "Why?\n<!-- rubric -->\nR", "points must be a positive number"),
        ("why 0", "Why?\n<!-- rubric -->\nR", "points must be a positive number"),
        ("why 2", "Why? No rubric here.", "then a line `<!-- rubric -->`"),
        ("why 2", "\n<!-- rubric -->\nR", "then a line `<!-- rubric -->`"),
        ("why 2", "Why?\n<!-- rubric -->\n### BEGIN SOLUTION", "nbgrader reads"),
    ]:
        with pytest.raises(SourceError, match="nb.md") as caught:
            parse_written(Block("written", arg, text), "nb.md")
        assert words in str(caught.value), (arg, str(caught.value))


def _with_written_block(tmp_path, opening: str):
    """A scratch copy of the stage whose notebook ends with one more written block, opened by ``opening``."""
    root = tmp_path / "assignments"
    shutil.copytree(ASSIGNMENTS / STAGE, root / STAGE, ignore=shutil.ignore_patterns("__pycache__"))
    source = root / STAGE / "notebook.md"
    block = f"\n```{opening}\nWhy?\n<!-- rubric -->\nBecause.\n```\n"
    source.write_text(source.read_text(encoding="utf-8") + block, encoding="utf-8")
    return get_stage(STAGE, root)


def test_check_stage_refuses_a_written_question_named_like_a_code_question(tmp_path):
    from autograder.authoring.lint import static_problems

    problems = static_problems(_with_written_block(tmp_path, "written ngram 2"))
    assert any("written question ngram has the id of a code question" in p for p in problems)


def test_check_stage_quick_reports_a_malformed_written_question_instead_of_crashing(tmp_path):
    # check-stage --quick is lint_stage(grade=False): its summary line read the written questions
    # again after the rules had found them unreadable, and the author got a traceback
    from autograder.authoring.lint import lint_stage

    report = lint_stage(_with_written_block(tmp_path, "written why"), grade=False)
    assert not report.ok
    assert any("opens as ```written ID POINTS (got `why`)" in p for p in report.broken["questions complete"])


@pytest.mark.parametrize("stage", all_stages(), ids=lambda s: s.id)
def test_every_written_question_has_its_prompt_cell_and_an_empty_answer_cell(stage):
    # (that a stage asks two to four, each complete, and shows no rubric line: check-stage's rules
    # "questions complete" and "release keeps the answers", run for every stage by test_rules.py)
    asked = written_questions(stage)
    student = make_notebook(stage, "student")
    prompts = [c for c in student["cells"] if TAG_WRITTEN in c["metadata"].get("tags", [])]
    answers = [c for c in student["cells"] if TAG_WRITTEN_ANSWER in c["metadata"].get("tags", [])]
    assert [c["metadata"]["gptcourse"]["written"] for c in prompts] == [q.id for q in asked]
    assert all(c["cell_type"] == "markdown" and c["source"] == ANSWER_PLACEHOLDER for c in answers)
    assert written_answers(student) == {q.id: "" for q in asked}
    # the released file on disk is that notebook (a stale release would show old questions)
    released = json.loads((Path("release/student") / stage.id / f"{stage.id}.ipynb").read_text(encoding="utf-8"))
    assert written_answers(released) == {q.id: "" for q in asked}


def test_the_gradescope_sheet_and_output_carry_them_and_the_score_leaves_them_out(tmp_path):
    stage = get_stage(STAGE)
    stage_tests(stage)
    sheet = write_gradescope_sheet(stage, tmp_path).read_text(encoding="utf-8")
    autograded = sum(p for _, p in questions(STAGE))
    asked = written_questions(stage)
    assert "Enable Manual Grading" in sheet and "Edit Outline" in sheet
    assert f"worth the autograder's\n   points ({autograded:g} for this stage)" in sheet
    assert f"{autograded + sum(q.points for q in asked):g} points in all" in sheet
    for q in asked:
        assert f"## {q.id} ({q.points:g} points)" in sheet and q.rubric in sheet
    built = build_gradescope_zip(stage, tmp_path / "zip", DEFAULT_DIR / f"{STAGE}.json")
    notebook = tmp_path / "alice.ipynb"
    context = "Longer contexts are seen too rarely."  # written in a cell of the student's own under the answer cell
    write_notebook(added_under(answered(make_notebook(stage, "reference"), ANSWERS), "context", context), notebook)
    root = make_root(built, tmp_path / "root", notebook)
    env = {"GRADESCOPE_ROOT": str(root), "GPTCOURSE_PYTHON": sys.executable, "PATH": "/usr/bin:/bin"}
    subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True, timeout=600)
    doc = json.loads((root / "results" / "results.json").read_text())
    assert doc["score"] == autograded == sum(t["max_score"] for t in doc["tests"])
    assert {t["name"].split(":")[0] for t in doc["tests"]} == {q for q, _ in questions(STAGE)}
    output = doc["output"]
    total = sum(q.points for q in asked)
    assert f"Written questions ({total:g} points, graded by hand after the deadline; not part of this score)" in output
    assert f"- split (2 points): answered ({len(ANSWERS['split'].split())} words)\n  {ANSWERS['split']}" in output
    assert f"- context (3 points): answered (6 words)\n  {context}" in output


def test_the_local_gradebook_keeps_a_column_per_written_question_for_manual_scores(tmp_path):
    stage = get_stage(STAGE)
    subs, out = tmp_path / "subs", tmp_path / "out"
    alice, bob = subs / "smithalice_1234_99_01_tokenisation.ipynb", subs / "jonesbob_77_100_01_tokenisation.ipynb"
    write_notebook(answered(make_notebook(stage, "reference"), ANSWERS), alice)
    write_notebook(make_notebook(stage, "student"), bob)
    done = gptcourse("grade", "--stage", STAGE, "--out", out, "--canvas-assignment", "Tokenisation (555)", subs)
    assert done.returncode == 0, done.stderr
    # alice answered split; her context and both of bob's answer cells hold the placeholder
    assert (
        "written questions (split, context): 1 answer(s) to grade by hand, 3 left blank (score them 0)" in done.stdout
    )
    autograded = sum(p for _, p in questions(STAGE))
    header = next(csv.reader((out / "grades.csv").open(encoding="utf-8")))
    assert header[-6:] == ["id", "name", "email", "split (written)", "context (written)", "total with written"]
    book = rows(out / "grades.csv")
    assert book["(max)"]["total"] == f"{autograded:g}" and book["(max)"]["total with written"] == f"{autograded + 5:g}"
    assert (book["smithalice"]["total"], book["smithalice"]["split (written)"]) == (f"{autograded:g}", "")
    assert book["jonesbob"]["total"] == "0" == book["jonesbob"]["total with written"]
    assert json.loads((out / "smithalice" / "results.json").read_text())["score"] == autograded
    assert json.loads((out / "smithalice" / "written.json").read_text()) == {"split": ANSWERS["split"], "context": ""}
    sheet = (out / "written.md").read_text(encoding="utf-8")
    assert ANSWERS["split"] in sheet and written_questions(stage)[0].rubric in sheet and "*(no answer)*" in sheet

    # the instructor types scores into grades.csv; a run without files rebuilds the gradebook and keeps them
    table = list(csv.reader((out / "grades.csv").read_text(encoding="utf-8").splitlines()))
    position = {name: i for i, name in enumerate(table[0])}
    for row in table[2:]:
        if row[0] == "smithalice":
            row[position["split (written)"]], row[position["context (written)"]] = "2", "1.5"
        else:
            row[position["split (written)"]] = "0"
    with (out / "grades.csv").open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(table)
    done = gptcourse("grade", "--stage", STAGE, "--out", out)
    assert done.returncode == 0, done.stderr
    assert "no file given: the gradebook" in done.stdout
    assert "0 answer(s) to grade by hand, 1 left blank (score them 0)" in done.stdout  # bob's context
    book = rows(out / "grades.csv")
    assert book["smithalice"]["total"] == f"{autograded:g}"
    assert book["smithalice"]["total with written"] == f"{autograded + 3.5:g}"
    assert (book["jonesbob"]["split (written)"], book["jonesbob"]["context (written)"]) == ("0", "")
    canvas = {r["Student"]: r for r in csv.DictReader((out / "canvas.csv").open(encoding="utf-8"))}
    assert canvas["smithalice"]["Tokenisation (555)"] == f"{autograded + 3.5:g}"  # the column's name is kept

    # regrading a student keeps the scores typed for them
    assert gptcourse("grade", "--stage", STAGE, "--out", out, alice).returncode == 0
    assert rows(out / "grades.csv")["smithalice"]["context (written)"] == "1.5"
    # ... and names the answers that changed since their score was typed (the score given to the old answer)
    write_notebook(answered(make_notebook(stage, "reference"), {"split": "Another answer."}), alice)
    done = gptcourse("grade", "--stage", STAGE, "--out", out, alice)
    assert done.returncode == 0, done.stderr
    assert "written answers changed since their score was typed" in done.stdout
    assert "against written.md): smithalice (split)\n" in done.stdout
    assert rows(out / "grades.csv")["smithalice"]["split (written)"] == "2"
    write_notebook(answered(make_notebook(stage, "reference"), ANSWERS), alice)  # as it was, for what follows
    assert "smithalice (split)" in gptcourse("grade", "--stage", STAGE, "--out", out, alice).stdout

    # the class report: the written questions apart from the autograder's totals
    report = gptcourse("report", out)
    assert report.returncode == 0, report.stderr
    text = (out / "report.md").read_text(encoding="utf-8")
    assert f"Totals out of {autograded:g}:" in text
    assert "| split | 2/2 | 1.00 / 2 |" in text and "| context | 1/2 | 1.50 / 3 |" in text
    assert "split (written) | context (written)" in text and f"| smithalice | {autograded:g} |" in text

    # a score out of range stops the rebuild, naming its cell; nothing is rewritten
    before = (out / "grades.csv").read_text(encoding="utf-8")
    (out / "grades.csv").write_text(before.replace(",2,1.5,", ",5,1.5,"), encoding="utf-8")
    broken = (out / "grades.csv").read_text(encoding="utf-8")
    done = gptcourse("grade", "--stage", STAGE, "--out", out)
    assert done.returncode == 2 and "column 'split (written)': '5' is not a score from 0 to 2" in done.stderr
    assert "smithalice" in done.stderr and (out / "grades.csv").read_text(encoding="utf-8") == broken


def test_the_nbgrader_source_holds_the_rubric_in_a_manually_graded_answer_cell():
    stage = get_stage(STAGE)
    cells = nbgrader_notebook(stage)["cells"]
    for q in written_questions(stage):
        [prompt] = [c for c in cells if c["metadata"].get("gptcourse", {}).get("written") == q.id]
        [answer] = [c for c in cells if c["metadata"].get("gptcourse", {}).get("written_answer") == q.id]
        assert prompt["metadata"]["nbgrader"]["locked"] and not prompt["metadata"]["nbgrader"]["grade"]
        meta = answer["metadata"]["nbgrader"]
        assert (meta["grade_id"], meta["points"], meta["solution"], meta["grade"]) == (
            written_cell_id(q.id),
            q.points,
            True,
            True,
        )
        assert answer["cell_type"] == "markdown" and q.rubric in answer["source"]


@pytest.mark.slow
def test_nbgrader_grades_them_by_hand_and_the_engine_never_does(tmp_path):
    """nbgrader's own commands: the release has empty answer cells and no rubric; autograde scores
    the code with the engine and leaves the written answers for the formgrader; a manual score (as
    the formgrader stores it) counts in nbgrader's total, never in the engine's results.json."""
    stage = get_stage(STAGE)
    asked = written_questions(stage)
    course = Course(tmp_path, [STAGE])
    course.run("generate_assignment", STAGE)
    released = course.released(STAGE)
    text = json.dumps(released, ensure_ascii=False)
    assert all(json.dumps(q.rubric, ensure_ascii=False)[1:-1] not in text for q in asked)
    assert written_answers(released) == {q.id: "" for q in asked}
    course.run("db", "student", "add", "ada")
    course.hand_in("ada", STAGE, answered(filled(released, STAGE), ANSWERS))
    course.run("autograde", STAGE)
    autograded = sum(p for _, p in questions(STAGE))
    from nbgrader.api import Gradebook

    database = f"sqlite:///{course.root / 'gradebook.db'}"
    with Gradebook(database) as gb:
        # the answered question awaits a person; nbgrader itself gives the untouched answer cell 0
        split, context = (gb.find_grade(written_cell_id(q), STAGE, STAGE, "ada") for q in ("split", "context"))
        assert split.needs_manual_grade and split.auto_score is None and split.max_score == 2
        assert not context.needs_manual_grade and context.auto_score == 0 and context.max_score == 3
        assert gb.find_submission(STAGE, "ada").score == autograded
        split.manual_score, split.needs_manual_grade = 2.0, False  # what the formgrader saves
        gb.db.commit()
    out = tmp_path / "results"
    done = run_starting_kernels(
        [sys.executable, "-m", "autograder.cli", "grade", "--stage", STAGE, "--nbgrader", course.root, "--out", out],
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    header, maxima, ada = done.stdout.splitlines()[:3]
    assert header.split()[-4:] == ["split", "context", "late", "total"]
    assert ada.split()[-3:] == ["2", "0", f"{autograded + 2:g}"]
    assert "written questions to grade in the formgrader" not in done.stdout  # split graded, context empty
    assert json.loads((out / "ada" / "results.json").read_text())["score"] == autograded
    assert ANSWERS["split"] in answers_in(course.root / "autograded" / "ada" / STAGE / f"{STAGE}.ipynb")
    rows_ = course.export()
    assert float(rows_[(STAGE, "ada")]["raw_score"]) == autograded + 2
    with Gradebook(database) as gb:  # the autograde run above (--force) kept the manual score
        assert gb.find_grade(written_cell_id("split"), STAGE, STAGE, "ada").manual_score == 2.0


def test_an_answer_in_cells_added_under_the_answer_cell_is_collected_and_one_elsewhere_is_named(tmp_path):
    # a student who adds Markdown cells of their own right under the answer cell, leaving its
    # placeholder, has answered: the engine (the local and Gradescope channels), hand-in's note and
    # otter's export read those cells with the answer cell; a cell added anywhere else answers nothing,
    # and hand-in names the question before it is too late
    from autograder.channels.otter.written import BUILD_CELL_ID as OTTER_ID
    from autograder.channels.otter.written import mark_written
    from autograder.engine.submission import BUILD_CELL_ID
    from autograder.kit.packaging import ANSWER_PLACEHOLDER as KIT_PLACEHOLDER
    from autograder.kit.packaging import BUILD_CELL_ID as KIT_ID
    from autograder.kit.packaging import written_note

    # the kit and otter's process import nothing of the engine: the same text three times
    assert KIT_PLACEHOLDER == ANSWER_PLACEHOLDER and KIT_ID.pattern == OTTER_ID.pattern == BUILD_CELL_ID.pattern
    built = make_notebook(get_stage(STAGE), "student")
    assert all(BUILD_CELL_ID.fullmatch(c["id"]) for c in built["cells"])  # every cell the build writes
    at = next(i for i, c in enumerate(built["cells"]) if c["metadata"].get("gptcourse", {}).get("written_answer"))
    assert "right under it are part of the answer" in "".join(built["cells"][at - 1]["source"])  # the prompt says so
    notebook = added_under(built, "split", "Shuffling leaks text.", "*Your answer here.*", "It flatters the model.")
    stray = {"cell_type": "markdown", "id": "c0ffee00", "metadata": {}, "source": "A note to myself."}
    notebook["cells"].insert(at + 5, stray)  # under the lecture cell that follows the answer: no answer's part

    assert written_answers(notebook) == {"split": "Shuffling leaks text.\n\nIt flatters the model.", "context": ""}
    path = tmp_path / "mine.ipynb"
    write_notebook(notebook, path)
    assert written_note(path).startswith("Note: no answer in the answer cell of written question(s) context.")
    assert "or in Markdown cells you add right under it" in written_note(path)
    exported = json.loads(json.dumps(notebook))
    mark_written(exported)
    end = next(i for i, c in enumerate(exported["cells"]) if c["source"] == "<!-- END QUESTION -->")
    assert [c["source"] for c in exported["cells"][at + 1 : end]][-1] == "It flatters the model."

    # a front end that gave every cell new ids: only the answer cell counts (never the lecture's text)
    for number, cell in enumerate(notebook["cells"]):
        cell["id"] = f"{number:08x}"
    assert written_answers(notebook) == {"split": "", "context": ""}
    write_notebook(notebook, path)
    assert written_note(path).startswith("Note: no answer in the answer cell of written question(s) split, context.")
    for cell in notebook["cells"]:
        if cell["metadata"].get("gptcourse", {}).get("written_answer"):
            cell["source"] = "An answer."
    write_notebook(notebook, path)
    assert written_note(path) == ""


def test_the_engine_the_kit_and_otters_export_collect_the_same_cells():
    # three copies of one rule (the kit and otter's process import nothing of the engine): on every
    # notebook of up to four cells after an answer cell, the kit calls unanswered exactly the questions
    # the engine reads no text for, and otter's export ends each question at the engine's last cell
    from itertools import product

    from autograder.channels.otter.written import groups
    from autograder.kit.packaging import unanswered

    def markdown(cell_id, text, metadata=None):
        return {
            "cell_type": "markdown",
            "id": cell_id,
            "metadata": {} if metadata is None else metadata,
            "source": text,
        }

    kinds = {
        "added": markdown("9f1c2d3e", "Mine."),
        "added blank": markdown("0a1b2c3d", ANSWER_PLACEHOLDER),
        "added, no id": {"cell_type": "markdown", "metadata": {}, "source": "No id."},
        "lecture": markdown("01-007", "## Next section"),
        "added code": {"cell_type": "code", "id": "77aa88bb", "metadata": {}, "source": "x = 1", "outputs": []},
        "odd metadata": markdown("5e6f7a8b", "Odd.", metadata=[]),
        "empty ours": markdown("6f7a8b9c", "Ours.", metadata={"gptcourse": {}}),
    }
    for answer_id, answer_text in product(("01-006", "ab12cd34"), ("", ANSWER_PLACEHOLDER, "Yes.")):
        answer = markdown(answer_id, answer_text, {"gptcourse": {"written_answer": "q"}})
        for length in range(5):
            for names in product(kinds, repeat=length):
                cells = [
                    markdown("01-005", "### Q", {"gptcourse": {"written": "q"}}),
                    answer,
                    *(kinds[n] for n in names),
                ]
                engine = written_answers({"cells": cells})["q"]
                assert unanswered({"cells": cells}) == ([] if engine else ["q"]), (answer_id, answer_text, names)
                ((first, last, _),) = groups(cells)
                exported = [c["source"] for c in cells[1 : last + 1]]
                texts = [t.strip() for t in exported if t.strip() not in ("", ANSWER_PLACEHOLDER)]
                assert "\n\n".join(texts) == engine, (answer_id, answer_text, names)
