"""The command line: usage errors are clear and non-zero; grading exits 0 whatever the scores."""

import csv
import json
import os
import subprocess
import sys
import zipfile

from support import submission

from autograder.build.gradescope_tryout import Tryout
from autograder.cli import tryout_line
from autograder.course import get_stage
from autograder.engine.suites import secret_lines

STAGE = "01_tokenisation"


def gptcourse(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "autograder.cli", *args], capture_output=True, text=True, cwd=cwd)


def test_unknown_stage_is_a_usage_error(tmp_path):
    done = gptcourse("grade", "--stage", "99_nothing", str(tmp_path / "x.ipynb"))
    assert done.returncode == 2 and "unknown stage" in done.stderr


def test_a_stage_is_named_by_its_id_its_number_with_or_without_its_zero_or_its_topic(tmp_path):
    assert {get_stage(name).id for name in ("04_masking", "04", "4", "masking")} == {"04_masking"}
    done = gptcourse("grade", "--stage", "4", str(tmp_path / "x.ipynb"))  # the stage known, the file not
    assert done.returncode == 2 and "no such file" in done.stderr and "unknown stage" not in done.stderr
    for unknown in ("40", "0", "4_masking"):
        done = gptcourse("grade", "--stage", unknown, str(tmp_path / "x.ipynb"))
        assert done.returncode == 2 and "unknown stage" in done.stderr, unknown


def test_gradescope_run_says_in_words_whether_gradescopes_limits_applied():
    results = {"score": 12, "tests": [{"max_score": 50}, {"max_score": 8}]}
    plain = tryout_line(Tryout(results, 0, 4.2, "", "", confined="unconfined"), gradescope_limits=False)
    assert plain == (
        "score 12 of 58 in 4 s; without Gradescope's memory and CPU limits (add --gradescope-limits to apply them)"
    )
    cgroup = "cgroup v2 (/sys/fs/cgroup/x): memory.max 805306368, cpu.max 50000 100000"
    limited = Tryout(results, 0, 4.2, "", "", confined=cgroup, peak_memory=300 * 2**20)
    assert (
        tryout_line(limited, gradescope_limits=True)
        == f"score 12 of 58 in 4 s, peak memory 300 MB; limited by {cgroup}"
    )


def test_missing_file_is_a_usage_error(tmp_path):
    done = gptcourse("grade", "--stage", STAGE, str(tmp_path / "missing.ipynb"))
    assert done.returncode == 2 and "no such file" in done.stderr


def test_blackboards_details_of_an_attempt_named_by_a_shells_glob_are_passed_over(tmp_path, capsys):
    from autograder.cli import submission_files

    folder = tmp_path / "bb"
    folder.mkdir()
    notebook = folder / "Lab 1_asmith_attempt_2026-11-20-10-00-00_lab1.ipynb"
    details = folder / "Lab 1_asmith_attempt_2026-11-20-10-00-00.txt"
    notebook.write_text("{}", encoding="utf-8")
    details.write_text("Name: Alice Smith (asmith)", encoding="utf-8")
    handed_in = folder / "notes.txt"  # any other file named is a submission, graded as unreadable
    handed_in.write_text("my answers", encoding="utf-8")
    assert submission_files([str(details), str(notebook), str(handed_in)]) == [notebook, handed_in]
    assert f"skipped {details}: Blackboard's details of an attempt" in capsys.readouterr().out


def test_grade_writes_results_and_gradebook_for_any_file_name_and_zip(tmp_path):
    ref = submission(STAGE, tmp_path, "My Homework (final) v2", base="reference")
    empty = submission(STAGE, tmp_path, "empty", base="student")
    exported = tmp_path / "exported.zip"
    with zipfile.ZipFile(exported, "w") as archive:
        archive.write(ref, "anything.ipynb")
    garbage = tmp_path / "not-a-notebook.ipynb"
    garbage.write_text("{this is not json")
    out = tmp_path / "out"
    done = gptcourse(
        "grade", "--stage", "01", "--out", str(out), "--workers", "2", str(ref), str(empty), str(exported), str(garbage)
    )
    assert done.returncode == 0, done.stderr
    rows = {r["submission"]: r for r in csv.DictReader((out / "grades.csv").open())}
    maximum = float(rows["(max)"]["total"])
    assert float(rows["My Homework (final) v2"]["total"]) == maximum
    assert float(rows["exported"]["total"]) == maximum
    assert float(rows["empty"]["total"]) == 0 and float(rows["not-a-notebook"]["total"]) == 0
    doc = json.loads((out / "not-a-notebook" / "results.json").read_text())
    assert "could not read" in doc["output"]
    for name in ("My Homework (final) v2", "empty"):
        doc = json.loads((out / name / "results.json").read_text())
        assert {"score", "tests", "output"} <= set(doc)
        for test in doc["tests"]:
            assert test["name"].split(":")[0] in rows["(max)"]
            assert test["visibility"] in ("visible", "after_published")
            assert "all tests passed" not in test["output"].lower()
    # in a pipe, the progress is plain lines (a bar in a terminal: tests/test_progress.py)
    assert "grading 01_tokenisation: 4/4 submissions (" in done.stderr and "\r" not in done.stderr


def test_grading_leaves_no_working_folder_behind(tmp_path):
    """Nothing is left in the temporary folder: the fork server's working folder goes with the grading process."""
    ref = submission(STAGE, tmp_path / "in", "ada", base="reference")
    temp = tmp_path / "temp"
    temp.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "autograder.cli", "grade", "--stage", "01", "--out", str(tmp_path / "out"), str(ref)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TMPDIR": str(temp)},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "out" / "ada" / "results.json").read_text())["score"] > 0
    assert sorted(p.name for p in temp.iterdir()) == []


def test_a_notebook_of_another_stage_or_no_notebook_is_named_on_the_console_and_in_its_feedback(tmp_path):
    """Graded all the same (a wrong stage's notebook earns what its code earns), but the instructor
    reads one line per such file, and the student's feedback names the real problem first."""
    other = submission(STAGE, tmp_path, "lab4", base="reference")  # stage 01's notebook, handed in for 04
    mine = submission("04_masking", tmp_path, "empty4", base="student")
    garbage = tmp_path / "notes.ipynb"
    garbage.write_text("{this is not json")
    out = tmp_path / "out"
    done = gptcourse("grade", "--stage", "04", "--out", str(out), str(other), str(mine), str(garbage))
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if line.startswith("gptcourse: warning:")]
    assert len(warned) == 2, done.stderr
    assert (
        "lab4 (lab4.ipynb) is a notebook of stage 01_tokenisation, not 04_masking; graded by 04_masking's"
        in (warned[0])
    )
    assert warned[1].startswith("gptcourse: warning: notes (notes.ipynb) could not be graded, scored 0: could not read")
    said = "This is a notebook of stage 01_tokenisation, not 04_masking: was the right notebook submitted?"
    doc = json.loads((out / "lab4" / "results.json").read_text())
    assert said in doc["output"] and set(doc) == set(json.loads((out / "empty4" / "results.json").read_text()))
    assert said in (out / "lab4" / "feedback.md").read_text()
    assert "This is a notebook of stage" not in (out / "empty4" / "results.json").read_text()
    assert {r["submission"] for r in csv.DictReader((out / "grades.csv").open())} >= {"lab4", "empty4", "notes"}


def test_feedback_and_class_report(tmp_path):
    ref = submission(STAGE, tmp_path, "ref", base="reference")
    empty = submission(STAGE, tmp_path, "empty", base="student")
    out = tmp_path / "out"
    assert gptcourse("grade", "--stage", STAGE, "--out", str(out), "--quiet", str(ref), str(empty)).returncode == 0
    feedback = (out / "empty" / "feedback.md").read_text()
    assert "Public tests: 0 of" in feedback and "not implemented yet" in feedback
    assert "(hidden," not in feedback
    assert (
        gptcourse("grade", "--stage", STAGE, "--out", str(out), "--quiet", "--show-hidden", str(empty)).returncode == 0
    )
    shown = (out / "empty" / "feedback.md").read_text()
    assert "(hidden," in shown and "**Hidden tests: 0 of" in shown
    hidden_source = secret_lines([get_stage(STAGE).hidden.read_text()])
    assert hidden_source and not [line for line in hidden_source if line in shown]  # results, never the tests' code
    done = gptcourse("report", str(out))
    assert done.returncode == 0, done.stderr
    report = (out / "report.md").read_text()
    assert "| build_vocab | 1/2 (50%)" in report
    assert "## Mistakes per question" in report and "### build_vocab: 1/2 with full marks" in report
    assert "| not implemented (the stub still raises NotImplementedError) | 1 |" in report  # one student, named
    assert "no known mistake explains" not in report  # the stub's error tests too are "not implemented"
    assert (out / "mistakes.csv").read_text().startswith("question,mistake,kind,students,failed_tests,who,tests\n")
    assert (out / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (out / "report.png").stat().st_size > 1000
    assert gptcourse("report", str(tmp_path / "nothing")).returncode == 2
