"""The nbgrader course, run through the real nbgrader (generate_assignment, autograde, export):
the same scores as the grading engine for the reference, the empty release and one mistake
per question; a cheat that fools nbgrader's in-kernel tests; and the stronger path,
``gptcourse grade --nbgrader COURSE``, writing the engine's scores into nbgrader's gradebook."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.build.nbgrader_course import CONFIG, build_nbgrader_course
from autograder.build.stubs import reference_source
from autograder.build.fixtures import DEFAULT_DIR, stage_tests
from autograder.course import get_stage, questions

STAGE = "01_tokenisation"
BIN = Path(sys.executable).parent
# A student cell that turns every later cell calling check(...) into `pass`: nbgrader gives
# full credit to a grade cell with no output. (Measured to work against in-kernel tests.)
CHEAT = 'get_ipython().input_transformers_cleanup.append(lambda lines: ["pass\\n"] if any("check(" in l for l in lines) else lines)'


def run(*args, cwd):
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def filled(released: dict, module: str, replace: dict[str, str]) -> dict:
    """The released notebook as a student hands it in: every stub answered, some answers replaced."""
    notebook = json.loads(json.dumps(released))
    for cell in notebook["cells"]:
        name = cell.get("metadata", {}).get("gptcourse", {}).get("name")
        if name:
            cell["source"] = replace.get(name, reference_source(module, name).rstrip("\n"))
    return notebook


def exported(course: Path) -> dict[str, float]:
    run(BIN / "nbgrader", "export", cwd=course)
    return {r["student_id"]: float(r["score"]) for r in csv.DictReader((course / "grades.csv").open())}


def submit(course: Path, student: str, notebook: dict, when: str = "2025-01-15 10:00:00.000000 UTC") -> None:
    folder = course / "submitted" / student / STAGE
    folder.mkdir(parents=True)
    (folder / f"{STAGE}.ipynb").write_text(json.dumps(notebook))
    (folder / "timestamp.txt").write_text(when)


def test_course_directory_layout(tmp_path):
    stage = get_stage(STAGE)
    stage_tests(stage)
    path = build_nbgrader_course(stage, tmp_path, DEFAULT_DIR)
    config = (tmp_path / "nbgrader_config.py").read_text()
    assert config == CONFIG and "c.Execute.timeout = 300" in config and 'kernel_name = "python3"' in config
    cells = json.loads(path.read_text())["cells"]
    meta = [c["metadata"].get("nbgrader", {}) for c in cells]
    grade = {m["grade_id"]: m for m in meta if m.get("grade")}
    assert {g: m["points"] for g, m in grade.items()} == {f"{q}-tests": p for q, p in questions(STAGE)}
    assert all(m["locked"] for m in grade.values())
    solutions = [c for c, m in zip(cells, meta) if m.get("solution")]
    assert solutions and all("### BEGIN SOLUTION" in c["source"] and "### END SOLUTION" in c["source"] for c in solutions)
    grade_sources = [c["source"] for c, m in zip(cells, meta) if m.get("grade")]
    assert all("### BEGIN HIDDEN TESTS" in s and "### END HIDDEN TESTS" in s for s in grade_sources)
    assert any(m.get("locked") and not m.get("grade") for m in meta)  # the harness and given code


@pytest.mark.slow
def test_nbgrader_agrees_with_the_engine_and_the_gradebook_bridge(tmp_path, graded_catalogue):
    stage = get_stage(STAGE)
    graded = graded_catalogue(STAGE)
    course = tmp_path / "course"
    build_nbgrader_course(stage, course, DEFAULT_DIR)
    run(BIN / "nbgrader", "generate_assignment", STAGE, "--force", cwd=course)
    released_path = course / "release" / STAGE / f"{STAGE}.ipynb"
    text = released_path.read_text()
    assert "BEGIN SOLUTION" not in text and "YOUR CODE HERE" in text and "_gptcourse.run_hidden(" not in text
    released = json.loads(text)

    sample = {}
    for mistake in graded.mistakes:
        sample.setdefault(mistake.qid, mistake)
    honest = {"reference": filled(released, stage.module, {}), "empty": released}
    honest.update({m.slug: filled(released, stage.module, m.cells) for m in sample.values()})
    # correct code that writes to stderr (as a torch warning does): nbgrader zeroes a grade cell with stderr output
    noisy = "import sys\n" + reference_source(stage.module, "build_vocab").replace('"""\n', '"""\n    print("a harmless note", file=sys.stderr)\n', 1)
    honest["warns"] = filled(released, stage.module, {"build_vocab": noisy})
    cheat = json.loads(text)
    cheat["cells"].insert(2, {"cell_type": "code", "execution_count": None, "id": "cheat", "metadata": {}, "outputs": [], "source": CHEAT})
    for student, notebook in [*honest.items(), ("cheat", cheat)]:
        submit(course, student, notebook)

    run(BIN / "nbgrader", "autograde", STAGE, "--force", cwd=course)
    by_nbgrader = exported(course)
    expected = {name: graded.by_name[name].total for name in honest if name != "warns"}
    expected["warns"] = expected["reference"]
    assert expected["reference"] == sum(p for _, p in questions(STAGE)) and expected["empty"] == 0
    assert {s: by_nbgrader[s] for s in honest} == pytest.approx(expected)
    assert by_nbgrader["cheat"] == expected["reference"]  # nbgrader's weakness: tests run in the student's kernel

    submit(course, "latecomer", filled(released, stage.module, {}), when="2025-01-16 09:00:00.000000 UTC")
    out = tmp_path / "out"
    done = run(sys.executable, "-m", "autograder.cli", "grade", "--stage", STAGE, "--nbgrader", course, "--out", out, "--workers", "2", cwd=tmp_path)
    assert "submissions of 01_tokenisation written" in done.stdout
    engine = {r["submission"]: float(r["total"]) for r in csv.DictReader((out / "grades.csv").open()) if r["submission"] != "(max)"}
    assert engine == pytest.approx({**expected, "cheat": 0.0, "latecomer": expected["reference"]})
    assert exported(course) == pytest.approx(engine)  # the gradebook now holds the engine's scores
    assert (out / "cheat" / "feedback.md").exists()


def test_bridge_usage_errors(tmp_path):
    def grade(*args):
        return subprocess.run([sys.executable, "-m", "autograder.cli", "grade", "--stage", STAGE, *map(str, args)], capture_output=True, text=True)

    done = grade("--nbgrader", tmp_path / "nowhere")
    assert done.returncode == 2 and "no such nbgrader course directory" in done.stderr
    course = tmp_path / "course"
    (course / "submitted" / "ada" / STAGE).mkdir(parents=True)
    (course / "submitted" / "ada" / STAGE / f"{STAGE}.ipynb").write_text("{}")
    done = grade("--nbgrader", course)
    assert done.returncode == 2 and "generate_assignment" in done.stderr
    assert not (course / "gradebook.db").exists()
    done = grade("--nbgrader", course, tmp_path / "x.ipynb")
    assert done.returncode == 2 and "not both" in done.stderr
