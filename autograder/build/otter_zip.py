"""The otter-grader autograder zip: otter's own layout, grading through the engine.

``release/otter/<stage>.zip`` is what ``otter generate`` writes (otter's own generator
makes it; the build adds the engine and fixes the bytes), so that ``otter run -a``,
``otter grade -a`` and a Gradescope assignment set up as an otter autograder take it as
they take any otter zip:

- ``run_autograder``, ``run_otter.py``, ``environment.yml``: otter generate's, unchanged
  (the ``otter-env`` environment: Python 3.11, ``otter-grader[grading,plugins]==7.0.0``
  and the pinned, CPU-only requirements of the engine's Gradescope zip);
- ``setup.sh``: otter generate's, then a gptcourse block (``SETUP_GPTCOURSE``): a ``.pth``
  file puts ``/autograder/source/files/gptcourse`` on otter-env's path (the plugin and the
  engine live there), and where the zip is unpacked while the image is built (Gradescope;
  not ``otter grade``, whose Dockerfile adds ``files/`` later) the engine checks torch and
  grades an empty notebook, so that a broken image fails when it is built;
- ``otter_config.json`` (``otter_config``): the plugin
  ``autograder.channels.otter.plugin.GradeWithEngine`` (the stage's rate limit, in
  ``gptcourse.json``, is the engine's: ``channels.otter.worker``);
- ``tests/<question>.py``: a question per file, a case per engine test (its name, points,
  hidden or public), none of which a kernel can pass (``channels.otter.declaration``);
- ``files/gptcourse/``: the engine (``autograder/``: kit, engine, channels/gradescope and
  channels/otter), the stage's suites and fixtures (``stage/``) and its settings
  (``gptcourse.json``), as in the engine's own zip.

The written questions, graded by hand, are otter's manual questions: no test file declares
them (``questions`` lists the autograded ones only), so otter's score never holds them. Their
answers reach the graders as otter sends manual questions: a PDF of the notebook, filtered
to the written questions (``filtering``, ``pagebreaks`` in ``otter_config.json``; the
plugin puts otter's markers around them, ``channels.otter.written``), which otter makes when
``otter grade --pdfs``, ``pdf`` or a ``token`` with ``course_id`` and ``assignment_id`` asks
for it (its ``setup.sh`` then installs LaTeX). ``write_otter_written`` writes what the
instructor needs for that: ``<stage>-written.md`` (the steps, the questions, their rubrics)
and ``<stage>-written.ipynb`` (the student notebook marked as the plugin marks submissions:
``otter export --filtering --pagebreaks`` makes the template of a Gradescope PDF assignment).
"""

import json
import tempfile
import zipfile
from pathlib import Path

from otter.generate import main as generate

from autograder.channels.gradescope.settings import GradescopeSettings, shipped_json, stage_settings
from autograder.channels.otter import PLUGIN, SUPPORT, declaration
from autograder.channels.otter.written import mark_written
from autograder.course import Stage
from autograder.engine.suites import StageTests

from .gradescope_zip import PACKAGE, PYTHON_VERSION, _add, pinned_requirements, shipped_files, torch_build
from .notebooks import make_notebook, write_notebook
from .written import question_sections, written_json, written_questions

SHIPPED = ("kit", "engine", "channels/gradescope", "channels/otter")  # the packages files/gptcourse/ carries, whole
EXECUTABLE = ("run_autograder", "setup.sh")
AUTOGRADER_DIR = "/autograder"  # where Gradescope and otter grade's containers unpack the zip (otter's default)

SETUP_GPTCOURSE = """
# --- gptcourse: the otter plugin and the gptcourse engine travel in files/, which Gradescope
# and otter grade's image both put in {root}/source/files: put {support} on otter-env's path.
SITE="$(mamba run -n otter-env python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo {root}/source/{support} > "$SITE/gptcourse.pth"
# Where the zip is already unpacked (Gradescope), fail the image build now, not at a student's
# first submission: check torch, grade an empty notebook through the engine.
if [ -d {root}/source/{support}/autograder ]; then
  (cd {root}/source/{support} && mamba run -n otter-env python -m autograder.channels.otter.worker --self-check)
fi
"""

README = """\
otter-grader autograder of gptcourse stage {stage}.

otter run -a {stage}.zip notebook.ipynb grades a notebook with it; otter grade and Gradescope
(as an otter autograder) take it as they take any otter zip. otter_config.json loads the
plugin autograder.channels.otter.plugin.GradeWithEngine (in files/gptcourse/): the gptcourse
engine grades the notebook in its confined child processes, never otter's kernel, and its
results replace otter's, test by test. tests/ declares the questions for otter (their cases fail if a kernel
ever runs them); files/gptcourse/stage holds the suites and the expected outputs.
"""


def questions(tests: StageTests) -> dict[str, list[tuple[str, bool, float]]]:
    """The autograded questions: for each, its tests as ``(name, public, points)``, in the suites' order."""
    found: dict[str, list[tuple[str, bool, float]]] = {qid: [] for qid, _ in tests.questions()}
    for case in tests.cases:
        found[case.qid].append((case.key, case.public, float(case.points)))
    return found


def otter_config(stage: Stage) -> dict:
    """``otter_config.json``: the plugin, for this stage, and otter's PDF filtering (off until asked for)."""
    return {
        "lang": "python",
        "plugins": [{PLUGIN: {"stage": stage.id}}],
        "show_hidden": True,
        "show_stdout": False,
        "filtering": True,  # a PDF otter makes holds the written questions only (channels.otter.written)
        "pagebreaks": True,  # each on a page of its own
    }


def otter_generate(config: dict, tests: dict[str, str], requirements: str) -> dict[str, bytes]:
    """The files ``otter generate`` writes for these settings, tests and requirements, by name."""
    with tempfile.TemporaryDirectory(prefix="gptcourse-otter-generate-") as tmp:
        folder = Path(tmp)
        (folder / "tests").mkdir()
        for qid, text in tests.items():
            (folder / "tests" / f"{qid}.py").write_text(text, encoding="utf-8")
        (folder / "otter_config.json").write_text(json.dumps(config), encoding="utf-8")
        (folder / "requirements.txt").write_text(requirements, encoding="utf-8")
        generate(
            tests_dir=str(folder / "tests"),
            output_path=str(folder / "autograder.zip"),
            config=str(folder / "otter_config.json"),
            requirements=str(folder / "requirements.txt"),
            no_environment=True,
            python_version=PYTHON_VERSION,
        )
        with zipfile.ZipFile(folder / "autograder.zip") as archive:
            return {name: archive.read(name) for name in sorted(archive.namelist())}


def build_otter_zip(
    stage: Stage, out_dir: Path, fixture_file: Path, settings: GradescopeSettings | None = None
) -> Path:
    """Write ``out_dir/<stage>.zip`` (deterministic bytes for the same inputs).

    ``settings`` default to the stage's (``assignments/<stage>/gradescope.json``): its
    hidden-test visibility, timeout and rate limit, as in the engine's Gradescope zip.
    """
    settings = settings or stage_settings(stage.id, stage.folder)
    tests = {qid: declaration(qid, cases) for qid, cases in questions(stage.tests()).items()}
    generated = otter_generate(otter_config(stage), tests, pinned_requirements())
    generated["setup.sh"] += SETUP_GPTCOURSE.format(root=AUTOGRADER_DIR, support=SUPPORT).encode()
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{stage.id}.zip"
    with zipfile.ZipFile(target, "w") as archive:
        for name, data in generated.items():
            _add(archive, name, data, 0o755 if name in EXECUTABLE else 0o644)
        _add(archive, "README.txt", README.format(stage=stage.id).encode())
        for path in shipped_files(SHIPPED):
            _add(archive, f"{SUPPORT}/{path.relative_to(PACKAGE.parent).as_posix()}", path.read_bytes())
        _add(archive, f"{SUPPORT}/stage/public.py", stage.public.read_bytes())
        _add(archive, f"{SUPPORT}/stage/hidden.py", stage.hidden.read_bytes())
        _add(archive, f"{SUPPORT}/stage/fixtures.json", Path(fixture_file).read_bytes())
        _add(archive, f"{SUPPORT}/stage/written.json", written_json(stage).encode())
        _add(archive, f"{SUPPORT}/gptcourse.json", shipped_json(settings, torch_build()).encode())
    return target


OTTER_STEPS = """\
These are graded by hand, as otter's manual questions: the zip has no test file for them, so
otter's score (the autograder's {autograded:g} points) never includes them. In its copy of each
submission the zip's plugin puts otter's `<!-- BEGIN QUESTION -->` and `<!-- END QUESTION -->`
around each written question (the prompt and the student's answer), and `otter_config.json`
turns on `filtering` and `pagebreaks`: a PDF that otter makes of a submission holds these
questions only, one a page. The autograder's output also lists every answer it found.

- **otter grade**: add `--pdfs` (`otter grade -a {stage}.zip --pdfs -n NAME -o out/ submissions/`);
  `out/submission_pdfs/` then holds a PDF per submission (otter installs LaTeX in its image
  for it). Grade them with the rubrics below.
- **Gradescope, otter's way**: a second assignment receives each submission's PDF.
  1. Make its template: `otter export --filtering --pagebreaks {stage}-written.ipynb` (it
     needs pandoc and LaTeX; `-e html` uses Chromium instead), a page per question.
  2. Create an assignment of type **Homework / Problem Set** with that template and mark a
     question per page, titled and worth as below. Its URL holds the course and assignment ids:
     `https://www.gradescope.com/courses/COURSE_ID/assignments/ASSIGNMENT_ID`.
  3. In a copy of `{stage}.zip` (every build rewrites this one), add to `otter_config.json`
     `"token"` (printed by `python -c "from otter.generate.token import APIClient;
     print(APIClient.get_token())"`, which asks for your Gradescope e-mail and password),
     `"course_id"` and `"assignment_id"`, and upload that copy as the programming
     assignment's autograder. Each graded submission's PDF is then submitted to the second
     assignment for the student.
- **Gradescope in one assignment**: upload `{stage}.zip` as it is and follow
  `release/gradescope/{stage}-written.md` (**Enable Manual Grading**, an outline question per
  written question); graders read each answer in the notebook or the autograder's output.
"""


def otter_sheet(stage: Stage) -> str:
    """``release/otter/<stage>-written.md``: otter's manual-grading steps, then each question with its rubric."""
    questions = written_questions(stage)
    autograded = sum(p for _, p in stage.tests().questions())
    total = sum(q.points for q in questions)
    lines = [
        f"# {stage.id}: written questions with otter-grader ({len(questions)} questions, {total:g} points)",
        "",
        OTTER_STEPS.format(autograded=autograded, stage=stage.id),
    ]
    return "\n".join(lines + question_sections(questions))


def write_otter_written(stage: Stage, out_dir: Path) -> list[Path]:
    """``out_dir/<stage>-written.md`` (``otter_sheet``) and ``out_dir/<stage>-written.ipynb`` (the student
    notebook with otter's markers around each written question); none for a stage without any."""
    sheet, template = (Path(out_dir) / f"{stage.id}-written{ext}" for ext in (".md", ".ipynb"))
    if not written_questions(stage):
        sheet.unlink(missing_ok=True)
        template.unlink(missing_ok=True)
        return []
    sheet.parent.mkdir(parents=True, exist_ok=True)
    sheet.write_text(otter_sheet(stage), encoding="utf-8")
    notebook = make_notebook(stage, "student")
    mark_written(notebook)
    write_notebook(notebook, template)
    return [sheet, template]
