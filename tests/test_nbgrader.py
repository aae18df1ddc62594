"""nbgrader, run as a course runs it, grading through the engine.

The course directory (``build_nbgrader_course``) and its configuration; then real
nbgrader commands in temporary courses: the whole workflow through an exchange for an
early stage and 07 (release, fetch, submit, collect, autograde, a manual grade, a late
penalty, feedback, export, the formgrader's API, Validate), the in-kernel cheat and the
hostile catalogue under ``nbgrader autograde``, and every stage's reference and empty
release in one course.
"""

import json
import os
import time
from pathlib import Path

import attacks
import leakscan
import pytest
from nbcourse import COURSE_ID, Course, as_nbgrader, cell_sources, engine_scores, filled, gptcourse, html_text, nbgrader
from support import submission

from autograder.authoring.catalogue import catalogue
from autograder.build.fixtures import DEFAULT_DIR, stage_tests
from autograder.build.nbgrader_course import GPTCOURSE_CONFIG, NBGRADER_CONFIG, build_nbgrader_course
from autograder.build.written import written_questions
from autograder.channels.local.folder import grade_into_folder
from autograder.channels.nbgrader import TEST_FILES, TESTS_FOLDER, grade_cell_id, written_cell_id
from autograder.channels.nbgrader.autograde import PREPROCESSOR, Row, course_config, require_engine, table
from autograder.channels.nbgrader.worker import load_tests
from autograder.course import all_stages, get_stage, questions
from autograder.engine.runner import Limits
from autograder.errors import UsageError

STAGE = "01_tokenisation"
WORKFLOW_STAGES = ["01_tokenisation", "07_gpt"]
# The cell that got 32/32 from nbgrader's in-kernel tests: it replaces what the grade cells
# called and leaves every stub empty.
CHEAT = "import types\ncheck = lambda *args, **kwargs: None\n_gptcourse = types.SimpleNamespace(run_hidden=lambda *args, **kwargs: 32)"


def same(got: dict[str, dict[str, float]], want: dict[str, dict[str, float]]) -> bool:
    """Equal scores, per submission and question (sums of test points: compared to 1e-9)."""
    return got.keys() == want.keys() and all(got[k] == pytest.approx(want[k], abs=1e-9) for k in got)


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def test_the_course_directory(tmp_path):
    stage = get_stage(STAGE)
    stage_tests(stage)
    path = build_nbgrader_course(stage, tmp_path, DEFAULT_DIR)
    assert (tmp_path / "nbgrader_config.py").read_text() == NBGRADER_CONFIG
    assert (tmp_path / "gptcourse_config.py").read_text() == GPTCOURSE_CONFIG
    tests = tmp_path / TESTS_FOLDER / STAGE
    assert sorted(p.name for p in tests.iterdir()) == sorted(TEST_FILES)
    assert (tests / "hidden.py").read_bytes() == stage.hidden.read_bytes()
    loaded = load_tests(tests)  # as the engine's worker reads them: with the hidden partners of each public test
    assert loaded.partners and loaded.partners == stage_tests(stage).partners
    cells = _cells(path)
    meta = [c["metadata"].get("nbgrader", {}) for c in cells]
    grade = {m["grade_id"]: (c["source"], m) for c, m in zip(cells, meta) if m.get("grade") and not m.get("solution")}
    written = {m["grade_id"]: m["points"] for m in meta if m.get("grade") and m.get("solution")}
    assert written == {written_cell_id(q.id): q.points for q in written_questions(stage)}  # graded by hand
    assert {g: m["points"] for g, (_, m) in grade.items()} == {grade_cell_id(q): p for q, p in questions(STAGE)}
    assert {g: s for g, (s, _) in grade.items()} == {
        grade_cell_id(q): f'check("{q}", strict=True)' for q, _ in questions(STAGE)
    }
    assert all(m["locked"] for _, m in grade.values())
    solutions = [c["source"] for c, m in zip(cells, meta) if m.get("solution") and c["cell_type"] == "code"]
    assert solutions and all("### BEGIN SOLUTION" in s and "### END SOLUTION" in s for s in solutions)
    assert any(m.get("locked") and not m.get("grade") for m in meta)  # the harness and given code
    text = path.read_text()
    assert "HIDDEN TESTS" not in text and not leakscan.find(
        cell_sources(json.loads(text)), leakscan.hidden_lines(stage) + leakscan.fixture_fragments(stage)
    )


def test_a_rebuild_keeps_the_instructors_config(tmp_path):
    stage = get_stage(STAGE)
    stage_tests(stage)
    build_nbgrader_course(stage, tmp_path, DEFAULT_DIR)
    edited = NBGRADER_CONFIG + 'c.LateSubmissionPlugin.penalty_method = "zero"\n'
    (tmp_path / "nbgrader_config.py").write_text(edited)
    (tmp_path / "gptcourse_config.py").write_text("stale")
    build_nbgrader_course(stage, tmp_path, DEFAULT_DIR)
    assert (tmp_path / "nbgrader_config.py").read_text() == edited
    assert (tmp_path / "gptcourse_config.py").read_text() == GPTCOURSE_CONFIG
    assert course_config(tmp_path).LateSubmissionPlugin.penalty_method == "zero"
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    said = []
    build_nbgrader_course(stage, tmp_path, DEFAULT_DIR, log=said.append)
    assert any("does not load gptcourse_config.py" in s for s in said)
    with pytest.raises(UsageError, match="gptcourse_config.py"):
        require_engine(tmp_path)


def test_the_config_puts_the_engine_in_place_of_the_kernel(tmp_path):
    """nbgrader's own autograde pipeline, with ``Execute`` (a kernel) replaced by the engine and nothing else changed."""
    from nbgrader.converters.autograde import Autograde

    stage = get_stage(STAGE)
    stage_tests(stage)
    build_nbgrader_course(stage, tmp_path, DEFAULT_DIR)
    from nbgrader.preprocessors import Execute
    from traitlets.utils.importstring import import_item

    config = course_config(tmp_path)
    chosen = [import_item(name) for name in config.Autograde.autograde_preprocessors]
    default = Autograde.class_traits()["autograde_preprocessors"].default()
    assert chosen[0] is import_item(PREPROCESSOR) and default[0] is Execute
    assert chosen[1:] == default[1:]
    assert Path(config.GradeWithEngine.tests_directory) == (tmp_path / TESTS_FOLDER).resolve()
    require_engine(tmp_path)


def test_the_printed_gradebook_leaves_written_answers_still_to_grade_empty():
    """nbgrader holds 0 for an answer that awaits the formgrader; the table shows nothing there, as
    grades.csv does, and the 0 of an answer graded 0 (or of an empty answer cell, which nbgrader scores 0)."""
    questions = [("pad_keys", 4.0), ("cheating", 2.0), ("why", 3.0)]
    rows = [
        Row("cy", {"pad_keys": 4.0, "cheating": 0.0, "why": 0.0}, total=4.0, ungraded=["cheating", "why"]),
        Row("di", {"pad_keys": 1.0, "cheating": 0.0, "why": 2.0}, total=3.0),
    ]
    lines = table(rows, questions).splitlines()
    assert lines[0].split() == ["student", "pad_keys", "cheating", "why", "late", "total"]
    assert lines[2].split() == ["cy", "4", "4"] and lines[3].split() == ["di", "1", "0", "2", "3"]
    assert [len(line) for line in lines[2:]] == [len(lines[0])] * 2  # the columns stay aligned


def test_bridge_usage_errors(tmp_path):
    import subprocess
    import sys

    from nbcourse import environment

    def grade(*args):
        return subprocess.run(
            [sys.executable, "-m", "autograder.cli", "grade", "--stage", STAGE, *map(str, args)],
            capture_output=True,
            text=True,
            env=environment(),
        )

    done = grade("--nbgrader", tmp_path / "nowhere")
    assert done.returncode == 2 and "no such nbgrader course directory" in done.stderr
    course = tmp_path / "course"
    stage_tests(get_stage(STAGE))
    build_nbgrader_course(get_stage(STAGE), course, DEFAULT_DIR)
    done = grade("--nbgrader", course)
    assert done.returncode == 2 and "generate_assignment" in done.stderr
    assert not (course / "gradebook.db").exists()
    done = grade("--nbgrader", course, tmp_path / "x.ipynb")
    assert done.returncode == 2 and "not both" in done.stderr
    done = grade("--student", "ada", tmp_path / "x.ipynb")
    assert done.returncode == 2 and "--student goes with --nbgrader" in done.stderr


def test_why_nbgrader_could_not_autograde_a_submission(tmp_path):
    """The likely reason named for a submission nbgrader's autograde failed on, read from its folder."""
    from autograder.channels.nbgrader.autograde import why_not_autograded

    def folder(name: str, text: str | None) -> Path:
        path = tmp_path / name
        path.mkdir()
        if text is not None:
            (path / f"{STAGE}.ipynb").write_text(text, encoding="utf-8")
        return path

    nbgrader_cell = {"cell_type": "code", "metadata": {"nbgrader": {"grade_id": "x"}}, "source": ""}
    plain = {
        "cells": [{"cell_type": "code", "metadata": {}, "source": ""}],
        "metadata": {"gptcourse": {"stage": STAGE}},
    }
    other = {"cells": [nbgrader_cell], "metadata": {"gptcourse": {"stage": "04_masking"}}}
    ours = {"cells": [nbgrader_cell], "metadata": {"gptcourse": {"stage": STAGE}}}
    assert why_not_autograded(folder("none", None), STAGE) == "no notebook (.ipynb) was handed in"
    assert why_not_autograded(folder("text", "not json"), STAGE) == f"{STAGE}.ipynb is not a readable notebook"
    assert "has no nbgrader cell metadata" in why_not_autograded(folder("plain", json.dumps(plain)), STAGE)
    assert why_not_autograded(folder("other", json.dumps(other)), STAGE) == (
        f"{STAGE}.ipynb is a notebook of stage 04_masking, not {STAGE}: was the right notebook handed in?"
    )
    assert why_not_autograded(folder("ours", json.dumps(ours)), STAGE) == "see nbgrader's log above"


@pytest.mark.slow
def test_a_submission_nbgrader_cannot_autograde_is_named_and_the_others_still_shown(tmp_path):
    """A student who hands in release/student's notebook (no nbgrader cell ids) makes nbgrader's
    autograde fail on them (a KeyError of nbgrader's) and exit 1 after grading the others:
    ``gptcourse grade --nbgrader`` still prints the others' gradebook, leaves the failed one out
    of it (nbgrader holds a 0 for them that is no grade) and says who failed and why. The class
    report of its output then shows the written questions as the gradebook holds them: the score
    typed in the formgrader, else still to grade."""
    import subprocess
    import sys

    from nbcourse import environment

    course = Course(tmp_path, [STAGE])
    course.run("generate_assignment", STAGE)
    course.hand_in("ada", STAGE, _written_answered(course.released(STAGE)))
    student_release = submission(STAGE, tmp_path, "bob", base="student")
    course.hand_in("bob", STAGE, json.loads(student_release.read_text(encoding="utf-8")))
    done = subprocess.run(
        [sys.executable, "-m", "autograder.cli", "grade", "--stage", STAGE, "--nbgrader", course.root],
        capture_output=True,
        text=True,
        env=environment(),
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert [line.split()[0] for line in done.stdout.splitlines() if line.startswith(("ada", "bob"))] == ["ada"]
    said = done.stderr[done.stderr.index("gptcourse: error:") :]
    assert "failed on 1 submission(s)" in said and "\n  bob: " in said and "\n  ada: " not in said
    assert "no nbgrader cell metadata" in said and f"gptcourse grade --stage {STAGE}" in said
    assert (tmp_path / "grades" / "ada" / "results.json").exists()

    # the formgrader scores ada's first written answer; the report reads it from the gradebook, the rest still to grade
    from nbgrader.api import Gradebook

    from autograder.cli import main

    asked = written_questions(get_stage(STAGE))
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        gb.find_grade(written_cell_id(asked[0].id), STAGE, STAGE, "ada").manual_score = asked[0].points / 2
        gb.db.commit()
    assert main(["report", str(tmp_path / "grades")]) == 0  # gptcourse report, as an instructor runs it
    text = (tmp_path / "grades" / "report.md").read_text(encoding="utf-8")
    assert "## Written questions" in text and "typed into nbgrader's formgrader" in text
    assert f"| {asked[0].id} | 1/1 | {asked[0].points / 2:.2f} / {asked[0].points:g} |" in text
    assert all(f"| {q.id} | 0/1 | - |" in text for q in asked[1:])
    (ada,) = [line for line in text.splitlines() if line.startswith("| ada |")]
    assert " | ".join([f"{asked[0].points / 2:g}", *("-" for _ in asked[1:])]) + " |" in ada


def test_the_kept_worker_grades_one_submission_after_another_and_is_replaced_when_gone(tmp_path):
    """nbgrader makes a preprocessor per notebook; the engine's worker outlives them (torch
    starts once per autograde), and a worker that died is replaced for the next submission."""
    import nbformat

    from autograder.channels.nbgrader import preprocessor
    from autograder.channels.nbgrader.preprocessor import GradeWithEngine

    stage = get_stage(STAGE)
    stage_tests(stage)
    build_nbgrader_course(stage, tmp_path / "course", DEFAULT_DIR)
    notebooks = {
        name: nbformat.read(submission(STAGE, tmp_path, name, base=base), as_version=4)
        for name, base in (("ada", "reference"), ("bob", "student"))
    }
    worth = dict(questions(STAGE))

    def earned(student: str) -> dict[str, float]:
        step = GradeWithEngine(tests_directory=str(tmp_path / "course" / TESTS_FOLDER))  # as nbgrader makes one
        return {q["qid"]: q["earned"] for q in step.grade(notebooks[student], STAGE, student)["questions"]}

    assert earned("ada") == worth
    kept = preprocessor._kept
    assert earned("bob") == {q: 0.0 for q in worth} and preprocessor._kept is kept  # the same process
    kept.stop()  # gone, as if killed
    assert earned("ada") == worth and preprocessor._kept is not kept and preprocessor._kept.ready()
    preprocessor._kept.stop()


def _public_mistake(stage_id: str):
    """A catalogued mistake that a public test catches (Validate must name its question)."""
    return next(m for m in catalogue(stage_id)[0] if not m.hidden_only)


def own_cache(home: Path) -> tuple[str]:
    """A student's own exchange cache: the students here share one user, whose cache would
    otherwise hold every student's submissions (and ``fetch_feedback`` fetch them all)."""
    return (f"--Exchange.cache={home / '.nbgrader-cache'}",)


def _written_answered(notebook: dict) -> dict:
    """The notebook with an answer in each written question's answer cell (still its placeholder)."""
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown" and "".join(cell["source"]).strip() == "*Your answer here.*":
            cell["source"] = "The scores grow with the width, so dividing keeps the softmax away from saturation."
    return notebook


@pytest.mark.slow
@pytest.mark.parametrize("stage_id", WORKFLOW_STAGES)
def test_a_course_runs_through_nbgrader_and_the_engine_decides(stage_id, tmp_path):
    stage = get_stage(stage_id)
    worth = dict(questions(stage_id))
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    os.chmod(exchange, 0o777)
    course = Course(
        tmp_path, [stage_id], f'c.Exchange.root = {str(exchange)!r}\nc.LateSubmissionPlugin.penalty_method = "zero"\n'
    )
    course.run("generate_assignment", stage_id)
    course.run("release_assignment", stage_id)
    roster = tmp_path / "students.csv"  # the class list, imported in one command as an instructor would
    roster.write_text("id,last_name\n" + "".join(f"{s},{s.title()}\n" for s in ("ada", "bob", "cy")))
    course.run("db", "student", "import", roster)

    # bob (one mistake) and cy (nothing done) submit on time, ada (all correct) after the due date
    mistake = _public_mistake(stage_id)
    answers = {"bob": mistake.cells, "cy": None, "ada": {}}
    exchange_args = (f"--course={COURSE_ID}", f"--Exchange.root={exchange}")
    homes = {}
    for student, replace in answers.items():
        homes[student] = home = tmp_path / "home" / student
        home.mkdir(parents=True)
        nbgrader("fetch_assignment", stage_id, *exchange_args, *own_cache(home), cwd=home)
        notebook = home / stage_id / f"{stage_id}.ipynb"
        if replace is not None:
            notebook.write_text(json.dumps(filled(json.loads(notebook.read_text()), stage_id, replace)))
        if student == "ada":  # the correct notebook answers its written questions too (validate wants them)
            notebook.write_text(json.dumps(_written_answered(json.loads(notebook.read_text()))))
        nbgrader("submit", stage_id, *exchange_args, *own_cache(home), f"--student={student}", cwd=home)
    course.run("collect", stage_id)
    from nbgrader.utils import parse_utc

    stamps = {
        s: parse_utc((course.submitted(s, stage_id).parent / "timestamp.txt").read_text().strip()) for s in answers
    }
    assert stamps["ada"] > max(stamps["bob"], stamps["cy"])
    due = max(stamps["bob"], stamps["cy"]) + (stamps["ada"] - max(stamps["bob"], stamps["cy"])) / 2
    course.run("db", "assignment", "add", stage_id, f"--duedate={due.isoformat()}")

    first = course.run("autograde", stage_id)
    assert "Warning" not in first.stdout + first.stderr
    out = tmp_path / "engine"
    gptcourse(
        "grade",
        "--stage",
        stage_id,
        "--out",
        out,
        "--workers",
        "2",
        *(course.submitted(s, stage_id) for s in answers),
        cwd=tmp_path,
    )
    # gptcourse grade names each student from nbgrader's layout: submitted/<student>/<stage>/<stage>.ipynb
    engine = {student: engine_scores(out)[student] for student in answers}
    book = course.gradebook(stage_id)
    assert same(book, engine), (book, engine)
    assert engine["ada"] == worth and all(v == 0 for v in engine["cy"].values())
    assert engine["bob"][mistake.qid] < worth[mistake.qid]

    # a manual grade, as the formgrader's API gives it, then autograde again through gptcourse grade
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        grade = gb.find_grade(grade_cell_id(mistake.qid), stage_id, stage_id, "bob")
        grade.manual_score = worth[mistake.qid]
        gb.db.commit()
    again = gptcourse(
        "grade", "--stage", stage_id, "--nbgrader", course.root, "--out", tmp_path / "again", cwd=tmp_path
    )
    assert f"bob: the manual scores of {mistake.qid} are kept" in again.stdout
    assert same(course.gradebook(stage_id), {**engine, "bob": {**engine["bob"], mistake.qid: worth[mistake.qid]}})
    assert {p.name for p in (tmp_path / "again").iterdir()} == set(answers)

    rows = course.export()
    total = sum(worth.values())
    ada, bob, cy = (rows[(stage_id, s)] for s in ("ada", "bob", "cy"))
    assert (
        float(ada["raw_score"]) == total and float(ada["late_submission_penalty"]) == total and float(ada["score"]) == 0
    )
    assert float(bob["score"]) == pytest.approx(
        sum(engine["bob"].values()) - engine["bob"][mistake.qid] + worth[mistake.qid]
    )
    assert float(bob["late_submission_penalty"]) == 0 and float(cy["score"]) == 0

    # the formgrader: its API lists every submission autograded, and each one renders
    from nbconvert.exporters import HTMLExporter
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config import Config

    config = course_config(course.root)
    coursedir = CourseDirectory(config=config, root=str(course.root))
    api = NbGraderAPI(coursedir, config=config)
    listed = {s["student"]: s for s in api.get_submissions(stage_id)}
    assert set(listed) == set(answers) and all(s["autograded"] and s["submitted"] for s in listed.values())
    assert {s: listed[s]["score"] for s in answers} == pytest.approx(
        {s: float(rows[(stage_id, s)]["raw_score"]) for s in answers}
    )
    look = Config()
    look.HTMLExporter.template_name = "formgrade"
    look.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    for item in api.get_notebook_submissions(stage_id, stage_id):
        autograded = (
            Path(coursedir.format_path(coursedir.autograded_directory, item["student"], stage_id)) / f"{stage_id}.ipynb"
        )
        resources = {
            "assignment_id": stage_id,
            "notebook_id": stage_id,
            "submission_id": item["id"],
            "index": item["index"],
            "total": len(answers),
            "base_url": "/",
            "student": item["student"],
            "last_name": item["last_name"],
            "first_name": item["first_name"],
            "notebook_path": str(autograded),
        }
        page, _ = HTMLExporter(config=look).from_filename(str(autograded), resources=resources)
        assert f"{mistake.qid}: " in page and "graded by gptcourse" in page

    # feedback, released through the exchange: the engine's reports, no hidden material
    course.run("generate_feedback", stage_id)
    course.run("release_feedback", stage_id)
    hidden, fixtures = leakscan.hidden_lines(stage), leakscan.fixture_fragments(stage)
    assert hidden and fixtures
    for student in answers:
        nbgrader(
            "fetch_feedback",
            stage_id,
            *exchange_args,
            *own_cache(homes[student]),
            f"--student={student}",
            cwd=homes[student],
        )
        (page,) = (homes[student] / stage_id / "feedback").glob(f"*/{stage_id}.html")
        text = html_text(page)
        own = cell_sources(json.loads(course.submitted(student, stage_id).read_text()))
        assert all(
            f"{q}: {engine[student][q]:g} of {p:g} points (graded by gptcourse)" in text for q, p in worth.items()
        ), student
        assert not leakscan.find(text, [line for line in hidden if line not in own]), (
            student
        )  # not the student's own code
        assert not leakscan.find(text, fixtures), student
        assert not leakscan.find(text, leakscan.reference_lines(stage, own)), student
    assert leakscan.find(html_text(page), leakscan.reference_lines(stage, "")), (
        "the scan sees code in the page (ada's own, the reference)"
    )

    # Validate: the correct notebook passes; the empty one and the mistake fail, naming their questions
    said = {
        s: nbgrader("validate", homes[s] / stage_id / f"{stage_id}.ipynb", cwd=homes[s], check=False).stdout
        for s in answers
    }
    assert "Success! Your notebook passes all the tests." in said["ada"], said["ada"][-3000:]
    assert "VALIDATION FAILED" in said["cy"] and all(f'check("{q}", strict=True)' in said["cy"] for q in worth)
    assert f"AssertionError: {next(iter(worth))}: " in said["cy"], said["cy"][-3000:]
    assert "VALIDATION FAILED" in said["bob"] and f"AssertionError: {mistake.qid}: " in said["bob"], said["bob"][-3000:]
    assert not leakscan.find("\n".join(said.values()), hidden + fixtures)


FAST = Limits(case_timeout=1.5, cell_timeout=3.0, total_timeout=120.0)
FAST_SETTINGS = (
    "c.GradeWithEngine.timeout = 120\nc.GradeWithEngine.cell_timeout = 3\nc.GradeWithEngine.test_timeout = 1.5\n"
)
GRADEBOOK_WRITER = '''
import subprocess, sys
attack = """
import sqlite3, time
for _ in range(100):
    try:
        db = sqlite3.connect(@DB@, timeout=0.1)
        db.execute("UPDATE grade SET auto_score = 999, manual_score = 999")
        db.commit()
        db.close()
    except Exception:
        pass
    time.sleep(0.1)
"""
subprocess.Popen([sys.executable, "-c", attack], start_new_session=True)
'''


@pytest.mark.slow
def test_the_cheat_and_the_hostile_catalogue_get_no_more_under_nbgrader(tmp_path):
    stage = get_stage(STAGE)
    course = Course(tmp_path, [STAGE], FAST_SETTINGS)
    course.run("generate_assignment", STAGE)
    released = course.released(STAGE)
    root = course.root
    extra = (
        str(root / "gradebook.db"),
        str(root / TESTS_FOLDER / STAGE / "hidden.py"),
        str(root / "source" / STAGE / f"{STAGE}.ipynb"),
        str(root),
    )
    paths = attacks.write_catalogue(STAGE, tmp_path / "written", root, extra=extra)
    paths["cheat"] = attacks.submission(STAGE, tmp_path / "written", "cheat", None, [CHEAT], base="student")
    paths["gradebook_writer"] = attacks.submission(
        STAGE,
        tmp_path / "written",
        "gradebook_writer",
        None,
        [GRADEBOOK_WRITER.replace("@DB@", repr(str(root / "gradebook.db")))],
    )
    files = {
        name: course.hand_in(name, STAGE, as_nbgrader(json.loads(path.read_text()), released))
        for name, path in paths.items()
    }
    before = sorted(p.name for p in root.iterdir())

    course.run("autograde", STAGE)
    time.sleep(1.0)  # give anything left behind the chance to strike
    book = course.gradebook(STAGE)
    copies = tmp_path / "copies"
    copies.mkdir()
    for name, path in files.items():
        (copies / f"{name}.ipynb").write_bytes(path.read_bytes())
    graded = grade_into_folder(
        sorted(copies.iterdir()), stage_tests(stage), tmp_path / "engine", FAST, workers=2, progress=False
    )
    engine = {g.name: {q: sum(r.score for r in g.results if r.qid == q) for q, _ in questions(STAGE)} for g in graded}

    assert book["reference"] == dict(questions(STAGE)) == engine["reference"]
    assert sum(book["cheat"].values()) == 0 == sum(engine["cheat"].values())
    for name in files:
        assert all(book[name][q] <= engine[name][q] for q in engine[name]), (name, book[name], engine[name])
    assert max(v for scores in book.values() for v in scores.values()) <= max(dict(questions(STAGE)).values())
    assert sorted(p.name for p in root.iterdir()) == sorted(
        [*before, "autograded"]
    )  # nothing the attacks wrote landed here

    course.run("autograde", STAGE, "--force", "--student=cheat")
    course.run("autograde", STAGE, "--force", "--student=reference")
    assert course.gradebook(STAGE) == book


@pytest.mark.slow
def test_every_stage_through_nbgrader(tmp_path):
    """The reference and the empty release of every stage, autograded in one course: the
    scores of ``gptcourse grade`` on the same files, full marks and none."""
    stages = [s.id for s in all_stages()]
    course = Course(tmp_path, stages)
    course.run("generate_assignment", "--assignment=*")  # every stage at once, as an instructor would
    files = {}
    for stage_id in stages:
        released = course.released(stage_id)
        files[stage_id] = [
            course.hand_in("reference", stage_id, filled(released, stage_id)),
            course.hand_in("empty", stage_id, released),
        ]
    course.run("autograde", "--assignment=*")
    book, engine = {}, {}
    for stage_id in stages:
        copies = tmp_path / "copies" / stage_id
        copies.mkdir(parents=True)
        for path in files[stage_id]:
            (copies / f"{path.parent.parent.name}.ipynb").write_bytes(path.read_bytes())
        graded = grade_into_folder(
            sorted(copies.iterdir()),
            stage_tests(get_stage(stage_id)),
            tmp_path / "engine" / stage_id,
            Limits(),
            workers=2,
            progress=False,
        )
        engine[stage_id] = {
            g.name: {q: sum(r.score for r in g.results if r.qid == q) for q, _ in questions(stage_id)} for g in graded
        }
        book[stage_id] = course.gradebook(stage_id)
    assert [s for s in stages if not same(book[s], engine[s])] == []
    assert [
        s for s in stages if engine[s] != {"empty": {q: 0.0 for q, _ in questions(s)}, "reference": dict(questions(s))}
    ] == []
