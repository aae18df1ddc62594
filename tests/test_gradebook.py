"""The instructor's class files: student names from LMS and grader export layouts, the roster,
the gradebook that merges regrades, the Canvas and Moodle imports, and the class report that
names mistakes.

The tests that grade run the real pipeline on stage 01 (seconds per notebook); the rest
build folders of results by hand."""

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import submission

from autograder.authoring.catalogue import catalogue
from autograder.build.written import written_questions
from autograder.channels.local.folder import write_submission
from autograder.channels.local.gradebook import CANVAS_COLUMNS, MOODLE_COLUMNS
from autograder.channels.local.identity import identify
from autograder.channels.local.records import read_folder
from autograder.channels.local.roster import Student, match, read_roster
from autograder.course import get_stage
from autograder.errors import UsageError
from autograder.reports.class_report import histogram, summarise, write_report
from autograder.reports.failures import KNOWN_LABELS, UNRECOGNISED, classify

STAGE = "01_tokenisation"


def gptcourse(*args):
    return subprocess.run([sys.executable, "-m", "autograder.cli", *args], capture_output=True, text=True)


def rows(path: Path) -> dict[str, dict]:
    return {r["submission"]: r for r in csv.DictReader(path.open(encoding="utf-8"))}


def keys(paths: list[str], mode: str = "auto", known: dict | None = None) -> list[str]:
    return [i.key for i in identify([Path(p) for p in paths], STAGE, mode, known)]


def test_students_are_named_by_the_layouts_of_lms_and_grader_exports(tmp_path):
    # a folder per student, the same file name in each (an LMS or Gradescope export)
    assert keys(["subs/alice/01_tokenisation.ipynb", "subs/bob/01_tokenisation.ipynb"]) == ["alice", "bob"]
    # one of them regraded alone: the file keeps the release's name, so its folder names it
    assert keys(["subs/bob/01_tokenisation.ipynb"]) == ["bob"]
    # nbgrader: submitted/<student>/<assignment>/<notebook>
    assert keys(
        [
            "c/submitted/alice/01_tokenisation/01_tokenisation.ipynb",
            "c/submitted/bob/01_tokenisation/01_tokenisation.ipynb",
        ]
    ) == ["alice", "bob"]
    # Canvas's "Download Submissions": name_[LATE_]userid_submissionid_file, resubmissions suffixed -1
    canvas = identify(
        [Path("dl/smithalice_1234_99_01_tokenisation.ipynb"), Path("dl/jonesbob_LATE_77_100_01_tokenisation-1.ipynb")],
        STAGE,
    )
    assert [(i.key, i.lms_id, i.source, i.late) for i in canvas] == [
        ("smithalice", "1234", "canvas", False),
        ("jonesbob", "77", "canvas", True),
    ]
    # Moodle's "Download all submissions", flat or in folders
    assert keys(["dl/Alice Smith_501_assignsubmission_file_01_tokenisation.ipynb"]) == ["Alice Smith"]
    assert keys(
        ["dl/Bob Jones_502_assignsubmission_file_/lab.ipynb", "dl/Carol Li_503_assignsubmission_file/lab.ipynb"]
    ) == ["Bob Jones", "Carol Li"]
    # Blackboard's "Download Assignment": <assignment>_<username>_attempt_<timestamp>_<file>; two
    # attempts of one student are both kept, numbered, for the instructor to choose
    blackboard = identify(
        [
            Path("bb/Lab 1_asmith_attempt_2026-11-20-10-00-00_01_tokenisation.ipynb"),
            Path("bb/Lab_1 final_bjones_attempt_2026-11-20-11-00-00_lab1.ipynb"),
            Path("bb/Lab 1_asmith_attempt_2026-11-21-09-30-00_lab.ipynb"),
        ],
        STAGE,
    )
    assert [(i.key, i.lms_id, i.source) for i in blackboard] == [
        ("asmith", "asmith", "blackboard"),
        ("bjones", "bjones", "blackboard"),
        ("asmith-2", "asmith", "blackboard"),
    ]
    # files named by their students, side by side
    assert keys(["subs/alice.ipynb", "subs/bob.ipynb"]) == ["alice", "bob"]
    # one file in a shared folder: its name names the student, even when it begins with the
    # stage's name (`grade --stage 07 subs/07_gpt_bob.ipynb` is bob's, not the folder's);
    # the release's own name, or a copy of it, names nobody, so the folder does
    assert keys(["subs/01_tokenisation_bob.ipynb"]) == ["01_tokenisation_bob"]
    assert keys(["subs/01_tokenisation_bob.ipynb", "subs/01_tokenisation_carol.ipynb"]) == [
        "01_tokenisation_bob",
        "01_tokenisation_carol",
    ]
    for copy in ("01_tokenisation (1).ipynb", "01_tokenisation-Copy1.ipynb", "01_tokenisation-submission.zip"):
        assert keys([f"subs/bob/{copy}"]) == ["bob"], copy
    # one file named by a student, in a folder of its own: the file names it
    assert keys(["subs/alice/alice-lab.ipynb"]) == ["alice-lab"]
    assert keys(["subs/alice/alice-lab.ipynb"], mode="folder") == ["alice"]
    # folders not side by side: the file names decide
    assert keys(["a/x.ipynb", "a/b/y.ipynb"]) == ["x", "y"]
    # a file graded into the folder before keeps its name; clashes are numbered, or told apart by LMS id
    assert keys(["subs/alice/hw.ipynb"], known={Path("subs/alice/hw.ipynb").resolve(): "alice"}) == ["alice"]
    assert keys(["x/hw.ipynb", "x/hw.zip"]) == ["hw", "hw-2"]
    assert keys(["dl/smithjohn_1_5_a.ipynb", "dl/smithjohn_2_6_a.ipynb"]) == ["smithjohn-1", "smithjohn-2"]
    with pytest.raises(ValueError, match="unknown naming mode"):
        identify([Path("a.ipynb")], STAGE, "both")


def test_a_roster_is_read_plain_or_as_canvas_exports_it(tmp_path):
    plain = tmp_path / "roster.csv"
    plain.write_text('id,name,email\ns1,Alice Smith,alice@uni.edu\ns2,"Jones, Bob",bob@uni.edu\n', encoding="utf-8")
    students = read_roster(plain)
    assert students == [Student("s1", "Alice Smith", "alice@uni.edu"), Student("s2", "Jones, Bob", "bob@uni.edu")]
    assert match("alice", "", students).id == "s1"  # the email's local part
    assert match("Alice Smith", "", students).id == "s1"  # Moodle's full name
    assert match("smithalice", "", students).id == "s1"  # Canvas's sortable name, squashed
    assert match("jonesbob", "", students).id == "s2" and match("Bob Jones", "", students).id == "s2"
    assert match("carol", "", students) is None
    exported = tmp_path / "canvas-export.csv"
    exported.write_text(
        "\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Tokenisation (555)\n"
        "    Points Possible,,,,,32\n"
        '"Smith, Alice",1234,A001,asmith,Sec 1,\n',
        encoding="utf-8",
    )
    assert read_roster(exported) == [Student("1234", "Smith, Alice", "", "A001", "asmith", "Sec 1")]
    assert match("nobody", "1234", read_roster(exported)).id == "1234"  # a Canvas download's user id
    for text, words in [
        ("name,email\nA,a@x\n", "no id column"),
        ("id,name\n1,A\n1,B\n", "twice"),
        ("id,name\n", "no students"),
        # a row with no id is refused, by line and name, rather than left out of the gradebook
        ("id,name,email\ns1,Alice Smith,a@x\n,Bob Jones,b@x\n,,c@x\n", r"line 3 \(Bob Jones\), line 4 \(c@x\)"),
    ]:
        bad = tmp_path / "bad.csv"
        bad.write_text(text, encoding="utf-8")
        with pytest.raises(Exception, match=words):
            read_roster(bad)


MOODLE_EXPORT = (  # Moodle's Grades > Export > Plain text file, as it heads its columns
    "First name,Last name,ID number,Institution,Department,Email address,"
    "Assignment: Tokenisation (Real),Course total (Real),Last downloaded from this course\n"
)


def test_a_roster_is_read_as_moodle_exports_it(tmp_path):
    exported = tmp_path / "moodle-export.csv"
    exported.write_text(
        "\ufeff" + MOODLE_EXPORT + "Alice,Smith,,Uni,CS,Alice.Smith@uni.edu,-,-,1700000000\n"
        "Dan,Roe,S4,Uni,CS,,-,-,1700000000\n",
        encoding="utf-8",
    )
    alice, dan = read_roster(exported)
    # the name as Moodle's downloads write it; the id: the ID number, else the email (as written)
    email = "Alice.Smith@uni.edu"
    assert (alice.id, alice.name, alice.email, alice.source) == (email, "Alice Smith", email, "moodle")
    assert (dan.id, dan.name, dan.email) == ("S4", "Dan Roe", "")
    assert match("Alice Smith", "", [alice, dan]) is alice and match("Dan Roe", "", [alice, dan]) is dan
    # a student with neither an ID number nor an email is refused by name; a blank row (as Canvas's
    # "Manual Posting" row, with no name, id or email) is no student
    exported.write_text(MOODLE_EXPORT + "Alice,Smith,,Uni,CS,a@uni.edu,-,-,1\n,,,,,,,,\nDave,Kim,,,,,-,-,1\n")
    with pytest.raises(UsageError, match=r"line 4 \(Dave Kim\).*ID number or an email address"):
        read_roster(exported)


@pytest.fixture(scope="module")
def class_folder(tmp_path_factory) -> Path:
    """subs/alice (the reference) and subs/bob (the empty release), both named 01_tokenisation.ipynb."""
    folder = tmp_path_factory.mktemp("class")
    for student, base in (("alice", "reference"), ("bob", "student")):
        (folder / "subs" / student).mkdir(parents=True)
        made = submission(STAGE, folder, student, base=base)
        made.rename(folder / "subs" / student / f"{STAGE}.ipynb")
    return folder


def test_regrading_merges_into_the_gradebook_and_the_report_agrees(class_folder, tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    shutil.copytree(class_folder / "subs", subs)
    done = gptcourse("grade", "--stage", STAGE, "--out", str(out), "--workers", "2", str(subs))
    assert done.returncode == 0, done.stderr
    book = rows(out / "grades.csv")
    assert list(book) == ["(max)", "alice", "bob"]  # named by their folders, not 01_tokenisation and 01_tokenisation-2
    top = book["(max)"]["total"]
    assert book["alice"]["total"] == top and book["bob"]["total"] == "0"
    # after the roster's columns, one per written question (left for the instructor's scores)
    written = [f"{q.id} (written)" for q in written_questions(get_stage(STAGE))]
    assert list(book["alice"])[-len(written) - 5 :] == ["total", "id", "name", "email", *written, "total with written"]
    assert all(book["alice"][w] == "" for w in written) and book["alice"]["total with written"] == top

    done = gptcourse("grade", "--stage", STAGE, "--out", str(out), "--only-failed", str(subs))
    assert done.returncode == 0, done.stderr
    assert "not graded again (already at full marks): alice" in done.stdout
    assert (
        json.loads((out / "bob" / "graded.json").read_text())["graded_at"]
        >= json.loads((out / "alice" / "graded.json").read_text())["graded_at"]
    )

    shutil.copy(subs / "alice" / f"{STAGE}.ipynb", subs / "bob" / f"{STAGE}.ipynb")  # bob hands in a corrected notebook
    done = gptcourse("grade", "--stage", STAGE, "--out", str(out), "--changed", str(subs))
    assert done.returncode == 0, done.stderr
    assert "not graded again (unchanged since they were graded): alice" in done.stdout
    assert "kept 1 student(s) graded before; the gradebook has 2 rows" in done.stdout
    book = rows(out / "grades.csv")
    assert list(book) == ["(max)", "alice", "bob"] and book["bob"]["total"] == top

    done = gptcourse("grade", "--stage", STAGE, "--out", str(out), "--quiet", str(subs / "bob" / f"{STAGE}.ipynb"))
    assert done.returncode == 0, done.stderr
    assert list(rows(out / "grades.csv")) == ["(max)", "alice", "bob"]  # one student regraded, the class kept
    report = write_report(out)
    assert report.startswith("# Class report (2 submissions)")
    assert "| alice |" in report and "| bob |" in report

    done = gptcourse("grade", "--stage", "02_bpe", "--out", str(out), str(subs))
    assert done.returncode == 2 and "holds results of 01_tokenisation" in done.stderr


def test_canvas_download_names_with_a_roster_make_a_canvas_import(class_folder, tmp_path):
    download = tmp_path / "download"
    download.mkdir()
    shutil.copy(class_folder / "subs" / "alice" / f"{STAGE}.ipynb", download / f"smithalice_1234_901_{STAGE}.ipynb")
    shutil.copy(class_folder / "subs" / "bob" / f"{STAGE}.ipynb", download / f"jonesbob_LATE_77_902_{STAGE}-1.ipynb")
    shutil.copy(class_folder / "subs" / "bob" / f"{STAGE}.ipynb", download / "stray.ipynb")
    roster = tmp_path / "export.csv"
    export = (  # Canvas's export, whose assignment is worth 10 points there (not the stage's points)
        "Student,ID,SIS User ID,SIS Login ID,Section,Tokenisation (555),Current Points\n"
        "    Points Possible,,,,,10.00,(read only)\n"
        '"Smith, Alice",1234,A1,asmith,S1,,\n"Jones, Bob",77,B2,bjones,S1,,\n"Li, Carol",88,C3,cli,S2,,\n'
    )
    roster.write_text(export, encoding="utf-8")
    out = tmp_path / "out"
    done = gptcourse(
        "grade",
        "--stage",
        STAGE,
        "--out",
        str(out),
        "--roster",
        str(roster),
        "--canvas-assignment",
        "Tokenisation (555)",
        str(download),
    )
    assert done.returncode == 0, done.stderr
    assert "not in the roster (no id in grades.csv, left out of canvas.csv): stray" in done.stdout
    assert "in the roster with no submission (a row of 0s in grades.csv and canvas.csv): Li, Carol" in done.stdout
    assert "marked late by the LMS (recorded in graded.json; no penalty applied): jonesbob" in done.stdout
    worth = rows(out / "grades.csv")["(max)"]["total with written"]
    assert (
        "Canvas's export (the roster) gives the column 'Tokenisation (555)' 10 points possible, but this stage's "
        f"points are {worth} (" in done.stdout
    )
    assert f"Canvas reads them out of 10 (set the assignment's points to {worth} in Canvas first)" in done.stdout
    assert json.loads((out / "jonesbob" / "graded.json").read_text())["late"] is True
    assert json.loads((out / "smithalice" / "graded.json").read_text())["late"] is False
    book = rows(out / "grades.csv")
    assert (book["smithalice"]["id"], book["smithalice"]["name"]) == ("1234", "Smith, Alice") and book["stray"][
        "id"
    ] == ""
    with (out / "canvas.csv").open(encoding="utf-8") as handle:
        lines = list(csv.reader(handle))
    assert lines[0] == [*CANVAS_COLUMNS, "Tokenisation (555)"]  # no "Points Possible" or (max) row
    assert sorted(lines[1:]) == sorted(
        [
            ["Jones, Bob", "77", "B2", "bjones", "S1", "0"],
            ["Smith, Alice", "1234", "A1", "asmith", "S1", book["(max)"]["total"]],
            ["Li, Carol", "88", "C3", "cli", "S2", "0"],  # handed in nothing: 0, not left out of the import
        ]
    )
    assert (out / "roster.csv").read_bytes() == roster.read_bytes()  # kept for later runs
    done = gptcourse(
        "grade", "--stage", STAGE, "--out", str(out), "--quiet", str(download / f"smithalice_1234_901_{STAGE}.ipynb")
    )
    assert done.returncode == 0, done.stderr
    assert rows(out / "grades.csv")["jonesbob"]["id"] == "77"  # the kept roster still names everyone
    (out / "roster.csv").write_text(export.replace(",10.00,", f",{worth},"), encoding="utf-8")  # points now agree
    done = gptcourse("grade", "--stage", STAGE, "--out", str(out))
    assert done.returncode == 0 and "Canvas import" in done.stdout and "points possible" not in done.stdout


def test_moodle_download_names_with_a_moodle_roster_make_a_moodle_import(class_folder, tmp_path):
    download = tmp_path / "download"
    download.mkdir()
    reference, empty = (
        class_folder / "subs" / "alice" / f"{STAGE}.ipynb",
        class_folder / "subs" / "bob" / f"{STAGE}.ipynb",
    )
    shutil.copy(reference, download / f"Alice Smith_501_assignsubmission_file_{STAGE}.ipynb")
    shutil.copy(empty, download / f"Dan Roe_504_assignsubmission_file_{STAGE}.ipynb")
    shutil.copy(empty, download / "stray.ipynb")
    roster = tmp_path / "export.csv"  # Bob hands in nothing; Dan has no email address in Moodle's export
    roster.write_text(
        MOODLE_EXPORT + "Alice,Smith,,Uni,CS,Alice.Smith@uni.edu,-,-,1700000000\n"
        "Bob,Jones,S2,Uni,CS,bob@uni.edu,-,-,1700000000\nDan,Roe,S4,Uni,CS,,-,-,1700000000\n",
        encoding="utf-8",
    )
    out, item = tmp_path / "out", "Assignment: Tokenisation (Real)"
    done = gptcourse(
        "grade", "--stage", STAGE, "--out", str(out), "--roster", str(roster), "--moodle-item", item, str(download)
    )
    assert done.returncode == 0, done.stderr
    assert "not in the roster (no id in grades.csv, left out of moodle.csv): stray" in done.stdout
    assert "in the roster with no submission (a row of 0s in grades.csv and moodle.csv): Bob Jones" in done.stdout
    assert "in the roster without an email address (left out of moodle.csv): Dan Roe" in done.stdout
    worth = sum(dict(get_stage("01").tests().questions()).values()) + sum(
        q.points for q in written_questions(get_stage("01"))
    )
    assert f"set the Moodle grade item's maximum grade to {worth:g} (this stage's points)" in done.stdout
    assert f"Moodle import: {out / 'moodle.csv'}" in done.stdout
    assert not (out / "canvas.csv").exists()  # Moodle's ids are no Canvas ids
    book = rows(out / "grades.csv")
    assert (book["Alice Smith"]["id"], book["Dan Roe"]["id"], book["stray"]["id"]) == ("Alice.Smith@uni.edu", "S4", "")
    full = book["(max)"]["total"]  # the reference's total, and no written score typed yet
    assert book["Alice Smith"]["total with written"] == full
    text = (out / "moodle.csv").read_text(encoding="utf-8")
    assert text == f"Email address,Full name,{item}\nAlice.Smith@uni.edu,Alice Smith,{full}\nbob@uni.edu,Bob Jones,0\n"
    assert list(csv.reader(text.splitlines()))[0] == [*MOODLE_COLUMNS, item]

    # a written score typed into grades.csv reaches moodle.csv at the next rebuild, which keeps the column's name
    table = list(csv.reader((out / "grades.csv").read_text(encoding="utf-8").splitlines()))
    column = table[0].index(f"{written_questions(get_stage(STAGE))[0].id} (written)")
    next(row for row in table if row[0] == "Alice Smith")[column] = "1"
    with (out / "grades.csv").open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(table)
    done = gptcourse("grade", "--stage", STAGE, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert (out / "moodle.csv").read_text(encoding="utf-8") == text.replace(f",{full}\n", f",{float(full) + 1:g}\n")


def test_blackboard_download_names_with_a_roster_reach_the_lms_imports(class_folder, tmp_path):
    """Blackboard's "Download Assignment": a file per attempt named after the assignment, the username
    and the attempt's time, and a .txt of the attempt's details, which is no submission."""
    download, out = tmp_path / "download", tmp_path / "out"
    download.mkdir()
    attempt = "Lab 1_asmith_attempt_2026-11-20-10-00-00"
    shutil.copy(class_folder / "subs" / "alice" / f"{STAGE}.ipynb", download / f"{attempt}_{STAGE}.ipynb")
    (download / f"{attempt}.txt").write_text("Name: Alice Smith (asmith)\nAssignment: Lab 1\n", encoding="utf-8")
    shutil.copy(
        class_folder / "subs" / "bob" / f"{STAGE}.ipynb",
        download / "Lab 1_bjones_attempt_2026-11-20-11-00-00_lab1.ipynb",
    )
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name,email\nasmith,Alice Smith,asmith@uni.edu\nbjones,Bob Jones,bjones@uni.edu\n")
    done = gptcourse("grade", "--stage", STAGE, "--out", str(out), "--roster", str(roster), str(download))
    assert done.returncode == 0, done.stderr
    assert "not in the roster" not in done.stdout and "no submission" not in done.stdout, done.stdout
    book = rows(out / "grades.csv")
    assert sorted(book) == ["(max)", "asmith", "bjones"]
    assert (book["asmith"]["id"], book["asmith"]["name"], book["bjones"]["id"]) == ("asmith", "Alice Smith", "bjones")
    with (out / "canvas.csv").open(encoding="utf-8") as handle:
        assert {line[1]: line[-1] for line in list(csv.reader(handle))[1:]} == {
            "asmith": book["asmith"]["total with written"],
            "bjones": book["bjones"]["total with written"],
        }

    # a second attempt of asmith's: both are kept and named, and neither reaches the imports
    shutil.copy(download / f"{attempt}_{STAGE}.ipynb", download / "Lab 1_asmith_attempt_2026-11-21-09-00-00_lab.ipynb")
    done = gptcourse("grade", "--stage", STAGE, "--out", str(out), "--roster", str(roster), str(download))
    assert done.returncode == 0, done.stderr
    assert "more than one submission" in done.stdout and "Alice Smith (asmith): asmith, asmith-2" in done.stdout
    with (out / "canvas.csv").open(encoding="utf-8") as handle:
        assert [line[1] for line in csv.reader(handle)] == ["ID", "bjones"]


def test_two_submissions_naming_one_roster_student_reach_no_lms_import(class_folder, tmp_path):
    """alice handed in twice, under two names the roster matches to her: which one counts is the
    instructor's call, so both rows stay in grades.csv and neither reaches canvas.csv or moodle.csv."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    (subs / "smithalice").mkdir(parents=True)
    shutil.copytree(class_folder / "subs" / "alice", subs / "alice")
    shutil.copy(subs / "alice" / f"{STAGE}.ipynb", subs / "smithalice" / f"{STAGE}.ipynb")
    roster = tmp_path / "roster.csv"
    roster.write_text('id,name,email\ns1,Alice Smith,alice@uni.edu\ns2,"Jones, Bob",bob@uni.edu\n', encoding="utf-8")
    done = gptcourse("grade", "--stage", STAGE, "--out", str(out), "--roster", str(roster), str(subs))
    assert done.returncode == 0, done.stderr
    assert (
        "named by more than one submission (each in grades.csv, none in canvas.csv and moodle.csv: "
        f"remove all but one from {out} and run again): Alice Smith (s1): alice, smithalice"
    ) in done.stdout
    book = rows(out / "grades.csv")
    assert book["alice"]["id"] == book["smithalice"]["id"] == "s1"
    with (out / "canvas.csv").open(encoding="utf-8") as handle:
        assert [line[1] for line in csv.reader(handle)] == ["ID", "s2"]  # bob's 0 only
    moodle = list(csv.reader((out / "moodle.csv").open(encoding="utf-8")))
    assert [line[0] for line in moodle[1:]] == ["bob@uni.edu"]

    shutil.rmtree(out / "smithalice")  # the instructor keeps one: alice reaches both imports again
    done = gptcourse("grade", "--stage", STAGE, "--out", str(out))
    assert done.returncode == 0 and "more than one submission" not in done.stdout, done.stderr
    with (out / "canvas.csv").open(encoding="utf-8") as handle:
        assert [line[1] for line in csv.reader(handle)] == ["ID", "s1", "s2"]


def test_a_roster_student_with_no_submission_gets_a_row_of_zeros(class_folder, tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    shutil.copytree(class_folder / "subs", subs)
    roster = tmp_path / "roster.csv"
    roster.write_text('id,name,email\ns1,Alice Smith,alice@uni.edu\ns2,"Jones, Bob",bob@uni.edu\n', encoding="utf-8")
    alice, bob = subs / "alice" / f"{STAGE}.ipynb", subs / "bob" / f"{STAGE}.ipynb"
    done = gptcourse("grade", "--stage", STAGE, "--out", str(out), "--roster", str(roster), str(alice))
    assert done.returncode == 0, done.stderr
    assert (
        "in the roster with no submission (a row of 0s in grades.csv, canvas.csv and moodle.csv): Jones, Bob"
        in done.stdout
    )
    book = list(csv.DictReader((out / "grades.csv").open(encoding="utf-8")))
    assert [r["submission"] for r in book] == ["(max)", "alice", "(no submission)"]
    qids = [q for q, _ in get_stage(STAGE).tests().questions()]
    written = [f"{q.id} (written)" for q in written_questions(get_stage(STAGE))]
    missing = book[2]  # the columns every row has, in their order: nothing added for the marker
    assert list(missing) == ["submission", *qids, "total", "id", "name", "email", *written, "total with written"]
    assert (missing["id"], missing["name"], missing["email"]) == ("s2", "Jones, Bob", "bob@uni.edu")
    assert qids and written and all(missing[c] == "0" for c in [*qids, "total", *written, "total with written"])
    assert book[1]["id"] == "s1" and all(book[1][w] == "" for w in written)  # the graded student's are left to type
    with (out / "canvas.csv").open(encoding="utf-8") as handle:
        canvas = {line[1]: line for line in csv.reader(handle)}
    assert canvas["s2"] == ["Jones, Bob", "s2", "", "", "", "0"] and canvas["s1"][-1] == book[0]["total"]
    moodle = list(csv.reader((out / "moodle.csv").open(encoding="utf-8")))  # a plain roster's emails serve Moodle
    assert moodle[1:] == [["alice@uni.edu", "Alice Smith", book[0]["total"]], ["bob@uni.edu", "Jones, Bob", "0"]]

    report = write_report(out)  # bob is counted apart, in no statistic
    assert report.startswith("# Class report (1 submissions)\n\nOn the roster with no submission")
    assert "1 student(s) (Jones, Bob), with 0 in `grades.csv`." in report
    assert "| alice |" in report and "Jones" not in report.split("## Students", 1)[1]
    assert f"| {written_questions(get_stage(STAGE))[0].id} | 0/1 |" in report  # written: alice's, not bob's 0

    done = gptcourse("grade", "--stage", STAGE, "--out", str(out))  # a rebuild keeps the kept roster's row
    assert done.returncode == 0, done.stderr
    assert "(1 students, and 1 on the roster with no submission)" in done.stdout
    assert [r["submission"] for r in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))][-1] == (
        "(no submission)"
    )
    done = gptcourse("grade", "--stage", STAGE, "--out", str(out), str(bob))  # bob hands in after all
    assert done.returncode == 0, done.stderr
    book = rows(out / "grades.csv")
    assert list(book) == ["(max)", "alice", "bob"] and book["bob"]["id"] == "s2"
    assert "no submission" not in done.stdout


def test_the_class_report_groups_the_catalogue_by_mistake(graded_catalogue, tmp_path):
    graded = graded_catalogue(STAGE)
    mistakes = {m.slug for m in catalogue(STAGE)[0]}
    for item in graded.by_name.values():
        write_submission(item, tmp_path)
    folders = read_folder(tmp_path)
    report = summarise(folders)
    failed_tests: dict[str, int] = {}
    for folder in folders:
        for test in folder.results["tests"]:
            if test["score"] < test["max_score"]:
                qid = test["name"].split(":")[0]
                failed_tests[qid] = failed_tests.get(qid, 0) + 1
    hints = {r.hint for g in graded.by_name.values() for r in g.results if r.hint}
    assert hints, "the catalogue should trigger some hints"
    seen_mistake = False
    for q in report.questions:
        assert sum(row.tests for row in q.mistakes) == failed_tests.get(q.qid, 0)  # every failed test counted once
        failing = {s.key for s in report.students if s.per_question.get(q.qid, 0) < q.max_score}
        assert set().union(*(row.students for row in q.mistakes)) == failing if q.mistakes else not failing
        assert q.submissions - q.full_marks == len(failing)
        for row in q.mistakes:  # every row names a mistake or what stopped the code, never a student's values
            assert row.label in hints or row.label in KNOWN_LABELS or row.label.startswith(("raised ", UNRECOGNISED)), (
                row.label
            )
            seen_mistake |= row.kind == "mistake"
    assert seen_mistake
    by_label = {(row.qid, row.label): row for q in report.questions for row in q.mistakes}
    for item in graded.by_name.values():  # a student whose hint fired is listed under that mistake
        for r in item.results:
            if r.hint:
                assert item.name in by_label[(r.qid, r.hint)].students
    assert {s.key for s in report.students} == set(graded.by_name) and mistakes <= set(graded.by_name)
    text = write_report(tmp_path)
    assert "## Mistakes per question" in text and "## Students" in text
    assert sum(count for _, _, count in histogram(report.totals, report.max_score)) == len(folders)
    with (tmp_path / "mistakes.csv").open(encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert sum(int(r["failed_tests"]) for r in table) == sum(failed_tests.values())
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_failures_are_named_without_their_values():
    named = [classify({"output": f"expected 3, got {n}\nHint: ids start at 0"}) for n in range(5)]
    assert len({f.label for f in named}) == 1 and named[0].kind == "mistake"
    assert classify({"output": "did not finish within 2 s (an endless loop, or far too slow)"}).kind == "time"
    over = "used more CPU time than this test allows, 20 times the calibration workload (2.41 s here), and was stopped"
    assert classify({"output": over}).kind == "time"
    assert classify({"output": "not run: the submission used up its 525 s in all"}).kind == "not run"
    assert (
        classify(
            {"output": "this test ended the process running it (sys.exit, os._exit, a crash or running out of memory)"}
        ).kind
        == "process"
    )
    assert classify({"output": "raised ValueError: bad input 7 (in cell 3, line 2: x)"}).label == "raised ValueError"
    assert classify({"output": "values differ at index 4: 0.25 vs 0.5"}).label == UNRECOGNISED


def test_the_summary_warns_of_what_a_run_cannot_show_in_the_gradebook(tmp_path):
    # unreadable notebooks are graded in-process (0 everywhere), so this test grades in a second
    from argparse import Namespace

    from autograder.channels.local.folder import run_folder
    from autograder.cli import folder_summary

    tests, out = get_stage(STAGE).tests(), tmp_path / "out"
    for folder in ("first", "resubmitted", "download"):
        (tmp_path / folder).mkdir()
    for path in (tmp_path / "first" / "bob.ipynb", tmp_path / "resubmitted" / "bob.ipynb"):
        path.write_text(f"not a notebook: {path.parent.name}", encoding="utf-8")
    stranger = tmp_path / "download" / f"zedzoe_9999_901_{STAGE}.ipynb"
    stranger.write_text("not a notebook", encoding="utf-8")
    roster = [Student("1234", "Smith, Alice")]
    args = Namespace(changed=False, show_hidden=False)

    def summary(paths):
        run = run_folder(paths, tests, out, progress=False, roster=roster, names="file")
        return folder_summary(run, out, args)

    # a Canvas file of a student the roster does not know keeps the Canvas id of its name, so it is in canvas.csv
    said = summary([stranger, tmp_path / "first" / "bob.ipynb"])
    assert "not in the roster (no id in grades.csv, left out of canvas.csv): bob" in said
    assert "not in the roster (the id of the file's name in grades.csv, in canvas.csv by that id" in said
    assert "zedzoe (9999)" in said and "9999" in (out / "canvas.csv").read_text(encoding="utf-8")
    # another file graded under a name already graded replaces its results: said, with the earlier file
    said = summary([tmp_path / "resubmitted" / "bob.ipynb"])
    assert "graded now from another file than the one graded before" in said and "bob (was bob.ipynb)" in said
    assert "resubmitted" in json.loads((out / "bob" / "graded.json").read_text())["source"]
    # results graded with other tests (before a rebuild) are named at every rebuild of the gradebook
    record = out / "zedzoe" / "graded.json"
    record.write_text(json.dumps({**json.loads(record.read_text()), "tests": "before the rebuild"}))
    assert "grade their files again): zedzoe" in summary([])
    # --show-hidden rewrites only the feedback of those graded now
    args.show_hidden = True
    said = summary([])
    assert "--show-hidden rewrote the feedback of the students graded now only" in said
    assert "hidden tests for bob, zedzoe" in said
