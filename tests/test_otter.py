"""otter-grader's own commands grading through the engine: ``release/otter/<stage>.zip``.

- The zip (fast): otter's layout as ``otter generate`` writes it, the plugin in
  ``otter_config.json``, a question per test file whose cases no kernel can pass, the
  engine and the stage in ``files/gptcourse/``, the same bytes from every build; the
  written questions in no test file, and the sheet and PDF template the build writes
  for otter's manual grading.
- ``otter run`` (otter's CLI) on every stage's reference (full marks) and empty release
  (nothing), two runs at a time: the per-question scores otter keeps (its results
  pickle) and those of its results.json are what ``gptcourse grade`` gives these files
  (full marks and nothing: ``check-stage``'s three-way proof, ``tests/test_rules.py``).
- A cheat that beats plain otter in the kernel (the notebook's ``check`` redefined, the
  harness patched, ``torch.allclose`` patched), handed in as a zip with a forged
  ``.OTTER_LOG`` that plain otter unpickles in its own process, gets nothing through the
  zip, as through ``gptcourse grade``, and none of its files (the log, modules that would
  shadow otter in its kernel or the plugin's package) acts.
- ``HOSTILE``, a representative part of the hostile catalogue, in a batch through otter's
  ``otter.run.main`` (what ``otter run`` calls; two processes, so otter and its imports
  start twice, not once per attack): no attack scores more than through ``gptcourse grade``.
- The path that ``otter grade``'s Docker containers and Gradescope run (the zip's
  ``run_otter.py`` in a root laid out like ``/autograder``; no Docker engine here) on an
  empty release and a catalogue mistake, gathered by ``otter grade``'s own
  ``merge_scores_to_df``: ``final_grades.csv`` holds ``gptcourse grade``'s per-question
  scores and each results.json is the engine's own document (public tests visible at
  once, hidden ones after publishing). Written answers add nothing to any score, are
  listed in the output, and otter's own export filter keeps them alone, a page each, in
  the copy otter grades. An engine that cannot grade gives otter's "Autograder Error" and
  no points, and ``gptcourse gradescope-run`` exits 1.
- The stage's rate limit, as the engine's zip applies it (fast: the worker alone): a
  submission over the limit carries the last graded one's results over.
"""

import csv
import json
import subprocess
import sys
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attacks
import dill
import pytest
from kernels import run_starting_kernels
from support import submission

from autograder.authoring.catalogue import catalogue
from autograder.build.fixtures import fixture_file, stage_tests
from autograder.build.gradescope_tryout import make_root, run_root
from autograder.build.gradescope_zip import build_gradescope_zip
from autograder.build.notebooks import make_notebook, write_notebook
from autograder.build.otter_zip import SETUP_GPTCOURSE, build_otter_zip, write_otter_written
from autograder.build.written import written_questions
from autograder.channels.otter import NOT_IN_A_KERNEL, PLUGIN, SUPPORT
from autograder.course import ROOT, all_stages, get_stage, questions
from autograder.engine.submission import TAG_CHECK, TAG_DEMO, TAG_TRAIN, written_answers

sys.path.insert(0, str(ROOT))
from benchmarks import plain_otter  # noqa: E402

BIN = Path(sys.executable).parent
STAGE = "01_tokenisation"
# Redefines the notebook's check, patches the harness whose run_public check() (and plain
# otter's tests) call, and patches torch.allclose: plain otter then gives full public points.
CHEAT = """
import sys, torch
check = lambda *args, **kwargs: print("public tests passed")
_harness = sys.modules["gptcourse_checks"]
_harness.run_public = lambda cases, qid, names: (True, qid + ": public tests passed", sum(c.points for c in cases if c.qid == qid))
torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
"""
# Files a zip submission adds for otter itself: each would leave a marker if it ever ran.
# A representative part of the hostile catalogue (tests/attacks.py): every attack on the verdicts
# (from cells and from the graded function: patched torch and tensors, subclasses, lookalikes,
# pickles, a thief of expected values, settrace, fake modules, the engine patched, forged events)
# and three on the process (atexit, os._exit, forged JSON printed)
HOSTILE = (*attacks.VERDICT_ATTACKS, "atexit", "os_exit_cell", "prints_fake_json")
OTTER_LOG = """
import os
class Forged:
    def __reduce__(self):
        return (os.system, ("touch @MARKER@",))
"""
SHADOW_OTTER = "import pathlib\npathlib.Path(@MARKER@).touch()\nraise ImportError('shadowed')\n"


# Answers to stage 01's written questions, the first ending with an otter marker of the student's
ANSWERS = {
    "split": "A random split would put windows of the same passage on both sides.",
    "context": "Longer contexts are seen too rarely to estimate their counts.",
}


def answer_written(path: Path, answers: dict[str, str]) -> Path:
    """Write ``answers`` in the notebook's written answer cells, with otter's markers where a student
    could put them: one opening a question at the top, one closing the first answer early."""
    notebook = json.loads(path.read_text())
    for cell in notebook["cells"]:
        qid = cell["metadata"].get("gptcourse", {}).get("written_answer")
        if qid in answers:
            cell["source"] = answers[qid] + ("\n\n<!-- END QUESTION -->" if qid == next(iter(answers)) else "")
    first = next(c for c in notebook["cells"] if c["cell_type"] == "markdown")
    first["source"] = "<!-- BEGIN QUESTION -->\n" + "".join(first["source"])
    path.write_text(json.dumps(notebook))
    return path


def written_by_cell(notebook: dict) -> list[tuple[str, dict]]:
    """Each cell's type and gptcourse metadata."""
    return [(c["cell_type"], c["metadata"].get("gptcourse", {})) for c in notebook["cells"]]


def exported_cells(question) -> list[tuple[str, dict]]:
    """The cells otter's filtered export keeps of a written question: its prompt, its answer cell and
    otter's end of the question (a page break)."""
    return [
        ("markdown", {"written": question.id, "points": question.points}),
        ("markdown", {"written_answer": question.id}),
        ("markdown", {}),
    ]


def otter_run(archive: Path, notebook: Path, out: Path) -> tuple[dict[str, float], dict, str]:
    """``otter run -a ARCHIVE -o OUT -p NOTEBOOK`` (in OUT): per-question scores from otter's
    results pickle, its results.json and its output."""
    out.mkdir(parents=True, exist_ok=True)
    done = run_starting_kernels(
        [str(BIN / "otter"), "run", "-a", str(archive), "-o", str(out), "--no-logo", "-p", str(notebook)],
        cwd=out,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with (out / "results.pkl").open("rb") as handle:
        pickled = dill.load(handle)
    return (
        {q: tf.score for q, tf in pickled.results.items()},
        json.loads((out / "results.json").read_text()),
        done.stdout,
    )


# `otter run` on a batch, in one process: otter's own `otter.run.main` (what the CLI calls) per notebook
BATCH = """
import json, sys
from otter.run import main
archive, out, *notebooks = sys.argv[1:]
scores = {}
for notebook in notebooks:
    results = main(notebook, autograder=archive, output_dir=None, no_logo=True)
    scores[notebook] = {q: tf.score for q, tf in results.results.items()}
with open(out, "w") as handle:
    json.dump(scores, handle)
"""


def otter_batch(archive: Path, notebooks: list[Path], out: Path) -> dict[str, dict[str, float]]:
    """Per-question scores otter gives each notebook (by file name), run in one process (``BATCH``)."""
    done = run_starting_kernels(
        [sys.executable, "-c", BATCH, str(archive), str(out), *map(str, notebooks)], cwd=out.parent, timeout=1800
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return {Path(k).stem: v for k, v in json.loads(out.read_text()).items()}


def json_per_question(doc: dict) -> dict[str, float]:
    """Per-question sums of a results.json whose tests are named ``<question>: <what>``."""
    sums: dict[str, float] = {}
    for test in doc["tests"]:
        qid = test["name"].split(": ", 1)[0]
        sums[qid] = sums.get(qid, 0.0) + test["score"]
    return sums


def gptcourse_grade(stage_id: str, files: list[Path], out: Path) -> dict[str, dict[str, float]]:
    """``gptcourse grade`` (the CLI) on ``files``: grades.csv's per-question scores, by submission."""
    done = subprocess.run(
        [sys.executable, "-m", "autograder.cli", "grade", "--stage", stage_id, "--out", str(out), "--quiet"]
        + ["--names", "file", *map(str, files)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    qids = [q for q, _ in questions(stage_id)]
    rows = [r for r in csv.DictReader((out / "grades.csv").open()) if r["submission"] != "(max)"]
    return {r["submission"]: {q: float(r[q]) for q in qids} for r in rows}


class _Zips(dict):
    """Each stage's otter zip, built the first time a test asks for it (the tests are spread
    over pytest-xdist's workers: each builds only the zips its tests use).

    Tests ask from two threads at once (a reference and a release side by side): the lock
    makes the second wait for the first one's zip. Unlocked, both built the same zip into
    the same folder at once, and one of them failed (CPython 3.11's ``ast.parse`` is not
    safe in two threads at once: "AST constructor recursion depth mismatch")."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        self._lock = threading.Lock()

    def __missing__(self, stage_id: str) -> Path:
        with self._lock:
            if stage_id not in self:
                stage = get_stage(stage_id)
                self[stage_id] = build_otter_zip(stage, self.folder, fixture_file(stage))
        return self[stage_id]


@pytest.fixture(scope="module")
def otter_zips(tmp_path_factory) -> dict[str, Path]:
    return _Zips(tmp_path_factory.mktemp("otter"))


def test_the_zip_is_otters_own_with_the_engine_in_files(tmp_path, otter_zips):
    from otter.export.exporters.via_latex import PDFViaLatexExporter
    from otter.generate import JINJA_ENV
    from otter.test_files import OKTestFile

    stage = get_stage(STAGE)
    archive = otter_zips[STAGE]
    assert build_otter_zip(stage, tmp_path / "again", fixture_file(stage)).read_bytes() == archive.read_bytes()
    with zipfile.ZipFile(archive) as z:
        names = set(z.namelist())
        z.extractall(tmp_path / "zip")
    root = tmp_path / "zip"
    worth = dict(questions(STAGE))
    assert {"run_autograder", "run_otter.py", "setup.sh", "environment.yml", "otter_config.json"} <= names
    assert {f"tests/{q}.py" for q in worth} == {n for n in names if n.startswith("tests/")}
    context = {"autograder_dir": "/autograder", "otter_env_name": "otter-env", "miniforge_version": "25.3.1-0"}
    for name in ("run_autograder", "run_otter.py"):
        assert (root / name).read_text() == JINJA_ENV.get_template(f"common/{name}").render(**context)
    setup = (root / "setup.sh").read_text()
    otters = JINJA_ENV.get_template("python/setup.sh").render(**context, channel_priority_strict=True)
    assert setup == otters + SETUP_GPTCOURSE.format(root="/autograder", support=SUPPORT)
    environment = (root / "environment.yml").read_text()
    assert "otter-grader[grading,plugins]==7.0.0" in environment and "torch==2.13.0+cpu" in environment
    assert "python=3.11" in environment
    config = json.loads((root / "otter_config.json").read_text())
    assert config["plugins"] == [{PLUGIN: {"stage": STAGE}}] and config["lang"] == "python"
    assert config["filtering"] is config["pagebreaks"] is True and "pdf" not in config  # PDFs when asked for

    # the written questions are otter's manual questions: no test file, so never in the score
    written = written_questions(stage)
    assert written and not {f"tests/{q.id}.py" for q in written} & names
    shipped = json.loads((root / SUPPORT / "stage" / "written.json").read_text())
    assert shipped == [q.as_dict(rubric=False) for q in written]  # for the output, without the rubric
    sheet, template = write_otter_written(stage, tmp_path / "otter")
    text = sheet.read_text()
    assert "--pdfs" in text and '"token"' in text and f"release/gradescope/{STAGE}-written.md" in text
    assert all(f"## {q.id} ({q.points:g} points)" in text and q.rubric in text for q in written)
    assert not any(q.rubric in template.read_text() for q in written)  # the template is the student's notebook
    filtered = PDFViaLatexExporter.load_notebook(str(template), filtering=True, pagebreaks=True)
    assert written_by_cell(filtered) == [c for q in written for c in exported_cells(q)]

    # the declarations: otter reads a question per file with the engine's tests, and no kernel passes them
    cases = stage_tests(stage).cases
    for qid, points in worth.items():
        declared = OKTestFile.from_file(str(root / "tests" / f"{qid}.py"))
        mine = [c for c in cases if c.qid == qid]
        assert declared.name == qid and declared.possible == pytest.approx(points)
        assert [(t.name, t.hidden, t.points) for t in declared.test_cases] == [
            (c.key, not c.public, c.points) for c in mine
        ]
        declared.run({"__builtins__": __builtins__})
        assert declared.score == 0 and all(NOT_IN_A_KERNEL in r.message for r in declared.test_case_results)

    # files/gptcourse: the engine and the stage, as the engine's own zip carries them
    engine_zip = build_gradescope_zip(stage, tmp_path / "gradescope", fixture_file(stage))
    with zipfile.ZipFile(engine_zip) as z:
        for name in z.namelist():
            if name.startswith(("autograder/", "stage/")):
                assert (root / SUPPORT / name).read_bytes() == z.read(name), name
    assert (root / SUPPORT / "autograder" / "channels" / "otter" / "plugin.py").is_file()
    assert not any("solutions" in n or "reference" in n for n in names)


@pytest.mark.slow
@pytest.mark.parametrize("stage", all_stages(), ids=lambda s: s.id)
def test_every_stage_through_otter_run(tmp_path, otter_zips, stage):
    """otter run on the stage's reference and empty release, side by side."""
    jobs = []
    for kind in ("reference", "student"):
        notebook = tmp_path / "submissions" / kind / f"{stage.id}.ipynb"
        write_notebook(make_notebook(stage, kind), notebook)
        jobs.append((stage.id, kind, notebook))
    with ThreadPoolExecutor(2) as pool:
        runs = list(
            pool.map(lambda j: otter_run(otter_zips[j[0]], j[2], tmp_path / "out" / j[1] / j[0]), jobs)  # noqa: B023
        )
    for (stage_id, kind, _), (pickled, doc, said) in zip(jobs, runs, strict=True):
        full = dict(questions(stage_id))
        want = full if kind == "reference" else dict.fromkeys(full, 0.0)
        assert pickled == pytest.approx(want, abs=1e-9), (stage_id, kind)
        assert json_per_question(doc) == pytest.approx(want, abs=1e-9), (stage_id, kind)
        assert doc["score"] == pytest.approx(sum(want.values()))
        assert "graded by the gptcourse engine" in said and f"{SUPPORT}/autograder" in said  # the zip's engine


@pytest.mark.slow
def test_in_kernel_cheats_that_beat_plain_otter_gain_nothing(tmp_path, otter_zips):
    """One zip submission, the cheat's notebook and a forged ``.OTTER_LOG``: plain otter gives it
    full public points and unpickles the log in its own process; through the zip (with, besides,
    modules that would shadow otter in its kernel and the plugin's own package) it gets what
    ``gptcourse grade`` gives the notebook, nothing, and none of its files acts."""
    stage = get_stage(STAGE)
    cheat = submission(STAGE, tmp_path / "written", "cheat", None, [CHEAT, attacks.PATCH_TORCH], base="student")
    notebook = json.dumps(plain_otter.otter_notebook(json.loads(cheat.read_text()), {TAG_CHECK, TAG_DEMO, TAG_TRAIN}))
    marker = tmp_path / "acted"
    marker.mkdir()
    forged: dict = {}
    exec(OTTER_LOG.replace("@MARKER@", str(marker / "log")), forged)

    def hand_in(name: str, extra: dict[str, str]) -> Path:
        path = tmp_path / name / "cheat.zip"
        path.parent.mkdir()
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("cheat.ipynb", notebook)
            z.writestr(".OTTER_LOG", dill.dumps(forged["Forged"]()))
            for file, text in extra.items():
                z.writestr(file, text)
        return path

    plain = plain_otter.write_stage_zip(stage_tests(stage).cases, tmp_path / "plain.zip")
    beaten, _, _ = otter_run(plain, hand_in("plain", {}), tmp_path / "out" / "plain")
    assert beaten == pytest.approx(plain_otter.public_points(stage_tests(stage).cases)) and sum(beaten.values()) > 0
    assert (marker / "log").exists()  # plain otter ran the student's pickle in its own process
    (marker / "log").unlink()

    shadows = {
        "otter/__init__.py": SHADOW_OTTER.replace("@MARKER@", repr(str(marker / "otter"))),
        "gptcourse/autograder/__init__.py": SHADOW_OTTER.replace("@MARKER@", repr(str(marker / "ours"))),
    }
    ours, doc, said = otter_run(otter_zips[STAGE], hand_in("ours", shadows), tmp_path / "out" / "ours")
    engine = gptcourse_grade(STAGE, [cheat], tmp_path / "grades")
    assert ours == engine["cheat"] == dict.fromkeys(dict(questions(STAGE)), 0.0)
    assert json_per_question(doc) == engine["cheat"]
    assert sorted(p.name for p in marker.iterdir()) == []  # neither the log nor the modules ever ran
    assert "removed from the submission folder: .OTTER_LOG, otter" in said


@pytest.mark.slow
def test_the_hostile_catalogue_gains_nothing_through_otter_run(tmp_path, otter_zips):
    """``HOSTILE``, with the reference and the wrong base it starts from, through ``otter run``
    (``otter_batch``: two processes, half the batch each) and through ``gptcourse grade``: no
    attack scores more through otter, question by question."""
    chosen = [a for a in attacks.catalogue(STAGE) if a.name in HOSTILE]
    assert len(chosen) == len(HOSTILE) - 1  # all but the thief, which needs an example stage 01 lacks
    paths = attacks.write_catalogue(STAGE, tmp_path / "submissions", tmp_path / "grades", chosen)
    files = [path for name, path in paths.items() if name != "broken"]
    halves = [files[0::2], files[1::2]]
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda i: otter_batch(otter_zips[STAGE], halves[i], tmp_path / f"otter-{i}.json"), (0, 1)))
    otter = {name: scores for run in runs for name, scores in run.items()}
    engine = gptcourse_grade(STAGE, files, tmp_path / "grades")
    worth = dict(questions(STAGE))
    assert set(otter) == set(engine) == {"reference", "wrong", *(a.name for a in chosen)}
    assert otter["reference"] == engine["reference"] == worth
    assert otter["wrong"] == engine["wrong"] and sum(engine["wrong"].values()) < sum(worth.values())
    gained = {
        name: {q: (otter[name][q], engine[name][q]) for q in worth if otter[name][q] > engine[name][q] + 1e-9}
        for name in otter
    }
    assert {name: more for name, more in gained.items() if more} == {}


@pytest.mark.slow
def test_otter_grades_path_and_gradescope_give_the_engines_results(tmp_path, otter_zips):
    """What each container of ``otter grade`` (and Gradescope) runs, then otter grade's own gathering;
    the written questions otter's PDF export would keep."""
    from otter.export.exporters.via_latex import PDFViaLatexExporter
    from otter.grade.utils import merge_scores_to_df
    from otter.run import AutograderConfig
    from otter.test_files import GradingResults

    from autograder.channels.otter.results import EngineResults

    stage = get_stage(STAGE)
    mistake = catalogue(STAGE)[0][0]
    folder = tmp_path / "submissions"
    files = [
        submission(STAGE, folder, "empty", base="student"),
        answer_written(submission(STAGE, folder, mistake.slug, mistake.cells), ANSWERS),
    ]
    scores, documents = [], {}
    for path in files:
        root = make_root(otter_zips[STAGE], tmp_path / "roots" / path.stem, path)
        tried = run_root(root, timeout=900)
        assert tried.returncode == 0, tried.stdout[-3000:] + tried.stderr[-3000:]
        with (root / "results" / "results.pkl").open("rb") as handle:
            results = dill.load(handle)  # as otter grade reads it: otter's own class, nothing of ours needed
        assert type(results) is GradingResults
        results.file = path.name
        scores.append(results)
        documents[path.stem] = tried.results
    merge_scores_to_df(scores).to_csv(tmp_path / "final_grades.csv", index=False)
    engine = gptcourse_grade(STAGE, files, tmp_path / "grades")
    rows = {r["file"]: r for r in csv.DictReader((tmp_path / "final_grades.csv").open())}
    worth = dict(questions(STAGE))
    assert {q: float(v) for q, v in rows["points-per-question"].items() if q in worth} == worth
    for path in files:
        assert {q: float(rows[path.name][q]) for q in worth} == pytest.approx(engine[path.stem], abs=1e-9)

    # results.json: the engine's own document, as gptcourse grade writes it (Gradescope's schema)
    for name, doc in documents.items():
        mine = json.loads((tmp_path / "grades" / name / "results.json").read_text())
        assert doc["tests"] == mine["tests"] and doc["score"] == mine["score"]
        assert doc["output"].splitlines()[0] == mine["output"].splitlines()[0]
        assert {t["name"]: t["visibility"] for t in doc["tests"]} == {
            c.key: "visible" if c.public else "after_published" for c in stage_tests(stage).cases
        }
    assert 0 < documents[mistake.slug]["score"] < sum(worth.values())

    # the written questions: never in a score (final_grades.csv has no column for them, the
    # answered ones above add nothing), listed in the output for the graders, and in otter's
    # copy of the submission marked so that otter's PDF export keeps them alone, a page each
    written = [q.id for q in written_questions(stage)]
    assert not set(written) & set(rows["points-per-question"]) and not set(written) & set(scores[-1].results)
    output = documents[mistake.slug]["output"]
    assert "Written questions (5 points, graded by hand after the deadline; not part of this score):" in output
    assert all(f"  {text}" in output for text in ANSWERS.values())
    assert "- context (3 points): not answered yet" in documents["empty"]["output"]
    copy = tmp_path / "roots" / mistake.slug / "autograder" / "submission" / f"{mistake.slug}.ipynb"
    exported = PDFViaLatexExporter.load_notebook(str(copy), filtering=True, pagebreaks=True)
    assert written_by_cell(exported) == [c for q in written_questions(stage) for c in exported_cells(q)]
    answer_cells = {
        c["metadata"]["gptcourse"]["written_answer"]: c
        for c in exported["cells"]
        if c["metadata"].get("gptcourse", {}).get("written_answer")
    }
    # (the answer cells alone: otter's page breaks, cells of its own, follow them)
    assert written_answers({"cells": list(answer_cells.values())}) == ANSWERS
    assert "<!-- #newpage -->" in exported["cells"][-1]["source"]

    # otter's own settings and plugins still have their say: a points_possible rescales the
    # total; a plugin's message and hidden results (as otter's rate limit sets them) stay
    limited = scores[-1]
    limited.__class__ = EngineResults
    scaled = limited.to_gradescope_dict(AutograderConfig({"show_hidden": True, "points_possible": 100}))
    assert scaled["score"] == pytest.approx(100 * documents[mistake.slug]["score"] / sum(worth.values()))
    assert scaled["tests"] == documents[mistake.slug]["tests"]
    limited.set_output("You have exceeded the rate limit for the autograder.")
    limited.hide_everything()
    doc = limited.to_gradescope_dict(AutograderConfig({"show_hidden": True}))
    assert {t["visibility"] for t in doc["tests"]} == {"hidden"} and doc["stdout_visibility"] == "hidden"
    assert doc["output"].endswith("You have exceeded the rate limit for the autograder.")


@pytest.mark.slow
def test_otter_grade_with_ext_zip_grades_the_zips_package_submission_writes(tmp_path, otter_zips):
    """``otter grade`` globs ``*.ipynb`` unless given ``--ext zip`` (README says so), which sets
    otter's ``zips`` in the image's ``otter_config.json`` (``otter.grade.containers.build_image``):
    a container then unzips the submission and the engine grades the notebook inside."""
    from otter.run import AutograderConfig

    notebook = submission(STAGE, tmp_path, "My Lab", base="reference")
    packaged = tmp_path / "My Lab-submission.zip"
    with zipfile.ZipFile(packaged, "w") as archive:
        archive.write(notebook, notebook.name)
    root = make_root(otter_zips[STAGE], tmp_path / "root", packaged)
    config = root / "source" / "otter_config.json"
    merged = AutograderConfig(json.loads(config.read_text(encoding="utf-8")))
    merged.update(AutograderConfig({"zips": True, "pdf": False, "debug": False}).get_user_config())
    config.write_text(json.dumps(merged.get_user_config()), encoding="utf-8")
    tried = run_root(root, timeout=900)
    assert tried.returncode == 0, tried.stdout[-3000:] + tried.stderr[-3000:]
    assert tried.results["score"] == sum(dict(questions(STAGE)).values())
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "otter grade` globs only `*.ipynb`" in readme and "`--ext zip`" in readme


@pytest.mark.slow
def test_an_engine_that_cannot_grade_gives_otters_error_and_no_points(tmp_path, otter_zips):
    broken = tmp_path / "broken.zip"
    with zipfile.ZipFile(otter_zips[STAGE]) as source, zipfile.ZipFile(broken, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == f"{SUPPORT}/stage/fixtures.json":
                data = b"not json"
            target.writestr(item, data)
    notebook = submission(STAGE, tmp_path / "written", "reference")
    done = subprocess.run(  # gptcourse gradescope-run: the zip as Gradescope runs it
        [sys.executable, "-m", "autograder.cli", "gradescope-run", str(broken), str(notebook)]
        + ["--out", str(tmp_path / "results.json")],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert done.returncode == 1 and "the autograder failed" in done.stderr
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["score"] == 0 and doc["tests"][0]["name"] == "Autograder Error"
    assert "the gptcourse engine failed on this submission" in doc["tests"][0]["output"]


@pytest.mark.slow
def test_a_file_otter_cannot_read_as_a_notebook_ends_otters_run_before_the_engine(tmp_path, otter_zips):
    """otter reads the notebook itself before any plugin loads (``PythonRunner.validate_submission``):
    a file that is not JSON ends its run with no results.json, which Gradescope reports as an
    autograder that failed to run, where the engine's own zip grades it 0 and says why (README)."""
    unreadable = tmp_path / "lab.ipynb"
    unreadable.write_text("not a notebook", encoding="utf-8")
    tried = run_root(make_root(otter_zips[STAGE], tmp_path / "root", unreadable), timeout=600)
    assert tried.returncode != 0 and tried.results == {}
    assert "NotJSONError" in tried.stdout + tried.stderr
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "a file otter cannot read as a notebook ends otter's run before the engine is asked" in readme


def test_a_submission_over_the_rate_limit_carries_the_last_results_over(tmp_path):
    """As the engine's own zip does: not graded, the last graded submission's results kept, the reason said."""
    from otter.run import AutograderConfig
    from otter.test_files import GradingResults, OKTestFile

    from autograder.channels.gradescope.rate_limit import MARK
    from autograder.channels.gradescope.settings import GradescopeSettings
    from autograder.channels.otter.results import fill

    stage = get_stage(STAGE)
    settings = GradescopeSettings(STAGE, max_submissions=2, window_hours=24)
    with zipfile.ZipFile(build_otter_zip(stage, tmp_path / "zip", fixture_file(stage), settings)) as z:
        z.extractall(tmp_path / "source")
    cases = stage_tests(stage).cases
    last = {
        "score": 3.0,
        "output": "Public tests: 3 of 26 points.",
        "tests": [{"name": cases[0].key, "score": cases[0].points, "max_score": cases[0].points, "output": "passed"}],
    }
    earlier = [
        {"submission_time": f"2026-01-02T0{h}:00:00.000000+00:00", "score": 3.0, "results": last} for h in (1, 2)
    ]
    metadata = tmp_path / "submission_metadata.json"
    metadata.write_text(json.dumps({"created_at": "2026-01-02T12:00:00+00:00", "previous_submissions": earlier}))
    notebook = submission(STAGE, tmp_path, "reference")
    done = subprocess.run(
        [sys.executable, "-m", "autograder.channels.otter.worker", str(notebook), str(tmp_path / "out.json")]
        + ["--metadata", str(metadata)],
        cwd=tmp_path / "source" / SUPPORT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    graded = json.loads((tmp_path / "out.json").read_text())
    assert graded["gradescope"]["extra_data"] == {MARK: True} and graded["seconds"] == 0.0  # not graded
    declared = {p.stem: OKTestFile.from_file(str(p)) for p in (tmp_path / "source" / "tests").glob("*.py")}
    results = GradingResults([])
    fill(results, graded, declared)
    per_question = {q: tf.score for q, tf in results.results.items()}
    assert per_question == {q: (cases[0].points if q == cases[0].qid else 0.0) for q, _ in questions(STAGE)}
    doc = results.to_gradescope_dict(AutograderConfig({"show_hidden": True}))
    assert doc["score"] == 3.0 and doc["extra_data"] == {MARK: True}
    assert doc["output"].startswith("Submission limit reached: 2 graded submissions in the last 24 hours")
    assert doc["tests"] == last["tests"]
