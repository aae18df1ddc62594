"""otter-grader's own commands grading through the engine: ``release/otter/<stage>.zip``.

- The zip (fast): otter's layout as ``otter generate`` writes it, the plugin in
  ``otter_config.json``, a question per test file whose cases no kernel can pass, the
  engine and the stage in ``files/gptcourse/``, the same bytes from every build.
- ``otter run`` (otter's CLI) on every stage's reference (full marks) and empty release
  (nothing), two runs at a time: the per-question scores otter keeps (its results
  pickle) and those of its results.json are what ``gptcourse grade`` gives these files
  (full marks and nothing: ``check-stage``'s three-way proof, ``tests/test_rules.py``).
- A cheat that beats plain otter in the kernel (the notebook's ``check`` redefined, the
  harness patched, ``torch.allclose`` patched), handed in as a zip with a forged
  ``.OTTER_LOG`` that plain otter unpickles in its own process, gets nothing through the
  zip, as through ``gptcourse grade``, and none of its files (the log, modules that would
  shadow otter in its kernel or the plugin's package) acts.
- The path that ``otter grade``'s Docker containers and Gradescope run (the zip's
  ``run_otter.py`` in a root laid out like ``/autograder``; no Docker engine here) on an
  empty release and a catalogue mistake, gathered by ``otter grade``'s own
  ``merge_scores_to_df``: ``final_grades.csv`` holds ``gptcourse grade``'s per-question
  scores and each results.json is the engine's own document (public tests visible at
  once, hidden ones after publishing). An engine that cannot grade gives otter's
  "Autograder Error" and no points.
"""

import csv
import json
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attacks
import dill
import pytest
from support import submission

from autograder.authoring.catalogue import catalogue
from autograder.build.fixtures import fixture_file, stage_tests
from autograder.build.gradescope_tryout import make_root, run_root
from autograder.build.gradescope_zip import build_gradescope_zip
from autograder.build.notebooks import make_notebook, write_notebook
from autograder.build.otter_zip import SETUP_GPTCOURSE, build_otter_zip
from autograder.channels.otter import NOT_IN_A_KERNEL, PLUGIN, SUPPORT
from autograder.course import ROOT, all_stages, get_stage, questions
from autograder.engine.submission import TAG_CHECK, TAG_DEMO, TAG_TRAIN

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
OTTER_LOG = """
import os
class Forged:
    def __reduce__(self):
        return (os.system, ("touch @MARKER@",))
"""
SHADOW_OTTER = "import pathlib\npathlib.Path(@MARKER@).touch()\nraise ImportError('shadowed')\n"


def otter_run(archive: Path, notebook: Path, out: Path) -> tuple[dict[str, float], dict, str]:
    """``otter run -a ARCHIVE -o OUT -p NOTEBOOK`` (in OUT): per-question scores from otter's
    results pickle, its results.json and its output."""
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [str(BIN / "otter"), "run", "-a", str(archive), "-o", str(out), "--no-logo", "-p", str(notebook)],
        cwd=out,
        capture_output=True,
        text=True,
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


@pytest.fixture(scope="module")
def otter_zips(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("otter")
    return {s.id: build_otter_zip(s, folder, fixture_file(s)) for s in all_stages()}


def test_the_zip_is_otters_own_with_the_engine_in_files(tmp_path, otter_zips):
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
def test_every_stage_through_otter_run(tmp_path, otter_zips):
    """otter run on every stage's reference and empty release, two at a time."""
    jobs = []
    for stage in all_stages():
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
def test_otter_grades_path_and_gradescope_give_the_engines_results(tmp_path, otter_zips):
    """What each container of ``otter grade`` (and Gradescope) runs, then otter grade's own gathering."""
    from otter.grade.utils import merge_scores_to_df
    from otter.run import AutograderConfig
    from otter.test_files import GradingResults

    from autograder.channels.otter.results import EngineResults

    stage = get_stage(STAGE)
    mistake = catalogue(STAGE)[0][0]
    folder = tmp_path / "submissions"
    files = [
        submission(STAGE, folder, "empty", base="student"),
        submission(STAGE, folder, mistake.slug, mistake.cells),
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

    # otter's own plugins still have their say: a rate limit's message and hidden results
    limited = scores[-1]
    limited.__class__ = EngineResults
    limited.set_output("You have exceeded the rate limit for the autograder.")
    limited.hide_everything()
    doc = limited.to_gradescope_dict(AutograderConfig({"show_hidden": True}))
    assert {t["visibility"] for t in doc["tests"]} == {"hidden"} and doc["stdout_visibility"] == "hidden"
    assert doc["output"].endswith("You have exceeded the rate limit for the autograder.")


@pytest.mark.slow
def test_an_engine_that_cannot_grade_gives_otters_error_and_no_points(tmp_path, otter_zips):
    broken = tmp_path / "broken.zip"
    with zipfile.ZipFile(otter_zips[STAGE]) as source, zipfile.ZipFile(broken, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == f"{SUPPORT}/stage/fixtures.json":
                data = b"not json"
            target.writestr(item, data)
    root = make_root(broken, tmp_path, submission(STAGE, tmp_path / "written", "reference"))
    tried = run_root(root, timeout=900)
    assert tried.returncode != 0
    assert tried.results["score"] == 0 and tried.results["tests"][0]["name"] == "Autograder Error"
    assert "the gptcourse engine failed on this submission" in tried.results["tests"][0]["output"]


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
