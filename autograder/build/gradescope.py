"""The Gradescope autograder zip, in the layout otter-grader produces.

At the zip's root, as otter-grader 7.0.0 lays it out: ``setup.sh``, ``run_autograder``,
``run_otter.py``, ``requirements.txt``, ``environment.yml``, ``otter_config.json`` and
``tests/``. ``otter_config.json``, ``run_otter.py`` and ``environment.yml`` come from
otter's own generator (``otter.generate``); ``setup.sh`` and ``run_autograder`` are
ours, because otter's always install a browser and run the tests inside the student's
kernel:

- ``setup.sh`` (``set -euo pipefail``) installs Miniforge, creates the environment of
  ``environment.yml`` (Python set explicitly, ``torch==2.13.0+cpu`` from the PyTorch CPU
  index, and what the engine and the notebooks import, every package pinned; no otter,
  browser or PDF tooling) and ends with a self-check that grades
  an empty notebook, so a broken image fails at build time;
- ``run_autograder`` grades ``$GRADESCOPE_ROOT/submission`` (``/autograder`` by default)
  through the gptcourse engine into ``results/results.json``;
- ``otter_config.json`` names the gptcourse otter plugin, so ``otter run -a <zip>``
  grades through the same engine (see ``autograder/otter_plugin.py``).

Beside them: the engine, the stage's suites, its fixtures (expected outputs, never the
reference code) and ``gptcourse.json`` (stage, hidden-test visibility, rate limit; set per
stage in ``autograder/suites/<stage>/gradescope.json``). The bytes are deterministic.
"""

import json
import tempfile
import zipfile
from pathlib import Path

import yaml

from ..gradescope_settings import GradescopeSettings, stage_settings
from ..stages import Stage

ENGINE = Path(__file__).resolve().parent.parent
FIXED_TIME = (2024, 1, 1, 0, 0, 0)
PYTHON_VERSION = "3.11"
ENV_NAME = "gptcourse"
ENV_PYTHON = f"/root/miniforge3/envs/{ENV_NAME}/bin/python"
PLUGIN = "autograder.otter_plugin.GptcoursePlugin"
ENTRY_POINTS = ("gradescope_entry.py", "otter_plugin.py", "child.py")  # child.py runs as a script

CPU_INDEX = "--extra-index-url https://download.pytorch.org/whl/cpu"
TORCH_PIN = "torch==2.13.0+cpu"
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
wget -nv "https://github.com/conda-forge/miniforge/releases/download/{miniforge}/Miniforge3-Linux-$(uname -m).sh" -O /tmp/miniforge.sh
bash /tmp/miniforge.sh -b -p /root/miniforge3
/root/miniforge3/bin/mamba env create -f /autograder/source/environment.yml
# Fail the build now, not at a student's first submission: check the versions, grade an empty notebook.
cd /autograder/source
{env_python} -c "import torch, numpy, matplotlib, tqdm, autograder.gradescope_entry as entry; raise SystemExit(entry.main(['--self-check']))"
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for every submission: grade ROOT/submission into ROOT/results/results.json
# through the gptcourse engine. ROOT is /autograder on Gradescope; GRADESCOPE_ROOT overrides it.
set -uo pipefail
ROOT="${{GRADESCOPE_ROOT:-/autograder}}"
PY="${{GPTCOURSE_PYTHON:-{env_python}}}"
cd "$ROOT/source"
if ! "$PY" -m autograder.gradescope_entry --root "$ROOT"; then
  mkdir -p "$ROOT/results"
  printf '%s\\n' '{{"score": 0, "output": "The autograder failed on this submission. Please tell your instructor.", "tests": []}}' > "$ROOT/results/results.json"
  exit 1
fi
"""

TESTS_README = """\
The tests of this autograder are autograder/suites/{stage}/public.py and hidden.py, run by
the gptcourse engine (run_autograder, or otter's runner through the plugin named in
otter_config.json). Otter's own in-kernel test runner is not used: it runs tests inside
the student's kernel, where a submission can change their outcome.
"""


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def pinned_requirements() -> str:
    """``requirements.txt``: the CPU index, CPU-only torch, and every other package the
    engine and the notebooks need, with their dependencies, pinned to this environment's versions."""
    from importlib import metadata

    from packaging.requirements import Requirement

    if metadata.version("torch").split("+")[0] != TORCH_PIN.split("==")[1].split("+")[0]:
        raise ValueError(f"the fixtures need {TORCH_PIN}; this environment has torch {metadata.version('torch')}")
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
    lines = [CPU_INDEX, TORCH_PIN] + [f"{name}=={version}" for name, version in sorted(pins.items()) if name != "torch"]
    return "\n".join(lines) + "\n"


def otter_config(settings: GradescopeSettings) -> dict:
    """The ``otter_config.json`` document."""
    return {
        "lang": "python",
        "plugins": [PLUGIN],
        "show_hidden": settings.hidden_visibility != "hidden",
        "show_stdout": False,
        "pdf": False,
    }


def otter_generated(settings: GradescopeSettings, requirements: str) -> dict[str, bytes]:
    """``otter_config.json``, ``run_otter.py`` and ``environment.yml`` from otter's generator."""
    from otter.generate import main as otter_generate

    with tempfile.TemporaryDirectory(prefix="gptcourse-otter-") as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "tests").mkdir()
        (tmp_path / "otter_config.json").write_text(json.dumps(otter_config(settings)), encoding="utf-8")
        (tmp_path / "requirements.txt").write_text(requirements, encoding="utf-8")
        out = tmp_path / "otter.zip"
        otter_generate(
            tests_dir=str(tmp_path / "tests"),
            output_path=str(out),
            config=str(tmp_path / "otter_config.json"),
            requirements=str(tmp_path / "requirements.txt"),
            overwrite_requirements=True,
            no_environment=True,
            python_version=PYTHON_VERSION,
        )
        with zipfile.ZipFile(out) as archive:
            generated = {name: archive.read(name) for name in ("otter_config.json", "run_otter.py", "environment.yml")}
    environment = yaml.safe_load(generated["environment.yml"])
    environment["name"] = ENV_NAME
    environment["dependencies"] = [d for d in environment["dependencies"] if d != "jupyter_server"]
    generated["environment.yml"] = yaml.safe_dump(environment, sort_keys=False).encode()
    return generated


def miniforge_version() -> str:
    """The Miniforge release otter-grader's own setup.sh installs."""
    from otter.generate import MINIFORGE_VERSION

    return MINIFORGE_VERSION


def engine_files() -> list[str]:
    """The engine modules the zip needs: its entry points and everything they import from the package."""
    import ast

    needed, todo = {"__init__.py"}, list(ENTRY_POINTS)
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        needed.add(name)
        for node in ast.walk(ast.parse((ENGINE / name).read_text(encoding="utf-8"))):
            modules = []
            if isinstance(node, ast.ImportFrom) and (node.level == 1 or node.module == "autograder"):
                modules = [node.module] if node.module and node.level else [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("autograder."):
                modules = [node.module.split(".")[1]]
            elif isinstance(node, ast.Import):
                modules = [a.name.split(".")[1] for a in node.names if a.name.startswith("autograder.")]
            todo += [f"{m}.py" for m in modules if (ENGINE / f"{m}.py").is_file()]
    return sorted(needed)


def _add(archive: zipfile.ZipFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = zipfile.ZipInfo(name, FIXED_TIME)
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def build_gradescope_zip(stage: Stage, out_dir: Path, fixture_file: Path, settings: GradescopeSettings | None = None) -> Path:
    """Write ``out_dir/<stage>.zip`` (deterministic bytes for the same inputs).

    ``settings`` default to the stage's (``autograder/suites/<stage>/gradescope.json``).
    """
    settings = settings or stage_settings(stage.id, stage.suite_files[0].parent)
    requirements = pinned_requirements()
    generated = otter_generated(settings, requirements)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{stage.id}.zip"
    with zipfile.ZipFile(target, "w") as archive:
        _add(archive, "setup.sh", SETUP_SH.format(python=PYTHON_VERSION, miniforge=miniforge_version(), env_python=ENV_PYTHON).encode(), 0o755)
        _add(archive, "run_autograder", RUN_AUTOGRADER.format(env_python=ENV_PYTHON).encode(), 0o755)
        for name, data in generated.items():
            _add(archive, name, data)
        _add(archive, "requirements.txt", requirements.encode())
        _add(archive, "gptcourse.json", settings.to_json().encode())
        _add(archive, "tests/README.md", TESTS_README.format(stage=stage.id).encode())
        for name in engine_files():
            _add(archive, f"autograder/{name}", (ENGINE / name).read_bytes())
        for path in stage.suite_files:
            _add(archive, f"autograder/suites/{stage.id}/{path.name}", path.read_bytes())
        _add(archive, f"fixtures/{stage.id}.json", Path(fixture_file).read_bytes())
    return target
