"""The Gradescope autograder zip: Gradescope's own layout, grading through the engine.

At the zip's root, as Gradescope expects: ``setup.sh`` (run once when the image is built)
and ``run_autograder`` (run for every submission); beside them ``environment.yml`` and
``requirements.txt`` (the pinned, CPU-only environment ``setup.sh`` creates),
``gptcourse.json`` (stage, hidden-test visibility, rate limit, the torch build of the
fixtures; settings per stage in ``assignments/<stage>/gradescope.json``), the packages
the engine needs (``autograder/kit``, ``autograder/engine``,
``autograder/channels/gradescope``, whole) and ``stage/``: the stage's public and hidden
suites, its written questions (``written.json``: ids, points and prompts, for the output;
no rubric) and its fixtures (expected outputs, never the stage's reference code; for a stage
that builds on earlier ones, the course's code of the earlier answers its notebook uses,
which grading runs in their cells: ``build.answers``).

- ``setup.sh`` (``set -euo pipefail``) installs Miniforge, creates the environment of
  ``environment.yml`` (Python set explicitly, ``torch==<version>+cpu`` from the PyTorch CPU
  index, and what the engine and the notebooks import, every package pinned; no otter,
  browser or PDF tooling) and ends with a self-check that grades an empty notebook, so a
  broken image fails at build time;
- ``run_autograder`` grades ``$GRADESCOPE_ROOT/submission`` (``/autograder`` by default)
  through the gptcourse engine into ``results/results.json``.

On Gradescope, keep the autograder's default limits (a 10-minute timeout, 768 MB of memory,
half a CPU): every submission, the worst included, is graded within them (the engine's
budget and watchdog: ``autograder.channels.gradescope.entry``; measured on stage 07 by
``tests/test_gradescope_limits.py``). A stage whose ``gradescope.json`` sets
``timeout_minutes`` needs that timeout set on Gradescope too; ``settings_note`` says
which, and the build prints it.

The zip is not an otter-grader autograder: no otter runs on Gradescope or is needed to
try it (``bash run_autograder`` with ``GRADESCOPE_ROOT`` pointing at a folder laid out
as Gradescope's ``/autograder``). The bytes are deterministic.
"""

import zipfile
from importlib import metadata
from pathlib import Path

from autograder.channels.gradescope.settings import GradescopeSettings, shipped_json, stage_settings
from autograder.course import Stage

from .written import gradescope_sheet, written_json, written_questions


def settings_note(stage: Stage, limits: bool = True) -> str:
    """The Gradescope settings to choose for a stage's zip, as the build prints them (``limits``:
    and that Gradescope's default memory and CPU suffice, as measured for the engine's zip)."""
    minutes = stage_settings(stage.id, stage.folder).timeout_minutes
    return (
        f"on Gradescope set the timeout to {minutes:g} min"
        + (" (the default)" if minutes == 10 else "")
        + ("; the default 768 MB of memory and 0.5 CPU suffice" if limits else "")
    )


PACKAGE = Path(__file__).resolve().parent.parent
SHIPPED = ("kit", "engine", "channels/gradescope")  # the packages the zip carries, whole
FIXED_TIME = (2024, 1, 1, 0, 0, 0)
PYTHON_VERSION = "3.11"
MINIFORGE_VERSION = "25.3.1-0"  # the Miniforge release setup.sh installs (the one otter-grader 7.0.0 uses)
ENV_NAME = "gptcourse"
ENV_PYTHON = f"/root/miniforge3/envs/{ENV_NAME}/bin/python"
CPU_INDEX = "--extra-index-url https://download.pytorch.org/whl/cpu"
TOP_LEVEL = ("torch", "numpy", "matplotlib", "tqdm")  # what the engine and the notebooks import
CUDA_ONLY = ("nvidia-", "triton")  # dependencies of torch's CUDA builds, never of the CPU build

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image. A lean, pinned
# environment: Miniforge, then environment.yml (Python {python}, CPU-only torch from the
# PyTorch index, every package pinned). No browser, no LaTeX, no otter: the engine grades.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends wget ca-certificates bzip2 >/dev/null
wget -nv -O /tmp/miniforge.sh \\
  "https://github.com/conda-forge/miniforge/releases/download/{miniforge}/Miniforge3-Linux-$(uname -m).sh"
bash /tmp/miniforge.sh -b -p /root/miniforge3
/root/miniforge3/bin/mamba env create -f /autograder/source/environment.yml
# Fail the build now, not at a student's first submission: check the versions, grade an empty notebook.
cd /autograder/source
{env_python} -c "import torch, numpy, matplotlib, tqdm"
{env_python} -m autograder.channels.gradescope.entry --self-check
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for every submission: grade ROOT/submission into ROOT/results/results.json
# through the gptcourse engine. ROOT is /autograder on Gradescope; GRADESCOPE_ROOT overrides it.
set -uo pipefail
ROOT="${{GRADESCOPE_ROOT:-/autograder}}"
PY="${{GPTCOURSE_PYTHON:-{env_python}}}"
cd "$ROOT/source"
if ! "$PY" -m autograder.channels.gradescope.entry --root "$ROOT"; then
  mkdir -p "$ROOT/results"
  printf '%s%s\\n' '{{"score": 0, "output": "The autograder failed on this submission. ' \\
    'Please tell your instructor.", "tests": []}}' > "$ROOT/results/results.json"
  exit 1
fi
"""

ENVIRONMENT_YML = """\
name: {env}
channels:
  - conda-forge
dependencies:
  - python={python}
  - pip
  - pip:
      - -r requirements.txt
"""

README = """\
Gradescope autograder of gptcourse stage {stage}.

setup.sh builds the environment (environment.yml, requirements.txt) and grades an empty
notebook as a self-check; run_autograder grades /autograder/submission into
/autograder/results/results.json through the gptcourse engine (autograder/). The tests
are stage/public.py and stage/hidden.py, judged against stage/fixtures.json.
"""


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def torch_build() -> str:
    """The CPU build of the installed torch (the pin in pyproject.toml), e.g. ``2.13.0+cpu``."""
    return metadata.version("torch").split("+")[0] + "+cpu"


def pinned_requirements() -> str:
    """``requirements.txt``: the CPU index, CPU-only torch, and every other package the
    engine and the notebooks need, with their dependencies, pinned to this environment's versions."""
    from packaging.requirements import Requirement

    pins: dict[str, str] = {}
    todo = list(TOP_LEVEL)
    while todo:
        name = _canonical(todo.pop())
        if name in pins or name.startswith(CUDA_ONLY):
            continue
        pins[name] = metadata.version(name)
        for text in metadata.requires(name) or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    lines = [CPU_INDEX, f"torch=={torch_build()}"] + [
        f"{name}=={version}" for name, version in sorted(pins.items()) if name != "torch"
    ]
    return "\n".join(lines) + "\n"


def shipped_files(packages: tuple[str, ...] = SHIPPED) -> list[Path]:
    """The files a zip carries: the ``packages`` of ``autograder``, whole, and the ``__init__`` above them."""
    files = [PACKAGE / "__init__.py", PACKAGE / "channels" / "__init__.py"]
    for package in packages:
        files += sorted((PACKAGE / package).glob("*.py"))
    return files


def _add(archive: zipfile.ZipFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = zipfile.ZipInfo(name, FIXED_TIME)
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def build_gradescope_zip(
    stage: Stage, out_dir: Path, fixture_file: Path, settings: GradescopeSettings | None = None
) -> Path:
    """Write ``out_dir/<stage>.zip`` (deterministic bytes for the same inputs).

    ``settings`` default to the stage's (``assignments/<stage>/gradescope.json``).
    """
    settings = settings or stage_settings(stage.id, stage.folder)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{stage.id}.zip"
    with zipfile.ZipFile(target, "w") as archive:
        _add(
            archive,
            "setup.sh",
            SETUP_SH.format(python=PYTHON_VERSION, miniforge=MINIFORGE_VERSION, env_python=ENV_PYTHON).encode(),
            0o755,
        )
        _add(archive, "run_autograder", RUN_AUTOGRADER.format(env_python=ENV_PYTHON).encode(), 0o755)
        _add(archive, "environment.yml", ENVIRONMENT_YML.format(env=ENV_NAME, python=PYTHON_VERSION).encode())
        _add(archive, "requirements.txt", pinned_requirements().encode())
        _add(archive, "gptcourse.json", shipped_json(settings, torch_build()).encode())
        _add(archive, "README.txt", README.format(stage=stage.id).encode())
        for path in shipped_files():
            _add(archive, path.relative_to(PACKAGE.parent).as_posix(), path.read_bytes())
        _add(archive, "stage/public.py", stage.public.read_bytes())
        _add(archive, "stage/hidden.py", stage.hidden.read_bytes())
        _add(archive, "stage/fixtures.json", Path(fixture_file).read_bytes())
        _add(archive, "stage/written.json", written_json(stage).encode())
    return target


def write_gradescope_sheet(stage: Stage, out_dir: Path) -> Path | None:
    """``out_dir/<stage>-written.md``: how to add the stage's written questions to the Gradescope
    assignment, with their points and rubrics (None, and no file, for a stage without any)."""
    target = Path(out_dir) / f"{stage.id}-written.md"
    if not written_questions(stage):
        target.unlink(missing_ok=True)
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(gradescope_sheet(stage), encoding="utf-8")
    return target
