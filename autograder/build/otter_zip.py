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

Questions graded by hand (to come): as in otter, such a question gets no test file;
``questions`` below is the one list to filter (and ``channels.otter.results.fill`` the
one place that matches the engine's questions with the declared ones). Its answers reach
the grader as otter sends them: a PDF of the notebook, which ``otter_config.json``'s
``pdf`` (or ``token``, ``course_id``, ``assignment_id``) asks for and otter's own
``setup.sh`` already installs the tools of.
"""

import json
import tempfile
import zipfile
from pathlib import Path

from otter.generate import main as generate

from autograder.channels.gradescope.settings import GradescopeSettings, shipped_json, stage_settings
from autograder.channels.otter import PLUGIN, SUPPORT, declaration
from autograder.course import Stage
from autograder.engine.suites import StageTests

from .gradescope_zip import PACKAGE, PYTHON_VERSION, _add, pinned_requirements, shipped_files, torch_build
from .written import written_json

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
