"""The package's layers: what each part may import, so that the rules are visible and kept.

- ``autograder.kit`` is pasted into every notebook: the standard library, torch and numpy
  only, and kit modules import each other with top-level relative imports (dropped when
  pasted);
- ``autograder.engine`` and ``autograder.channels.gradescope`` ship in the Gradescope zip:
  they import the kit, the engine and themselves, never the build, the reports, the course
  layout, the authoring tools, nbgrader, the references or training;
- ``autograder.channels.otter`` ships in the otter zip with them: its worker imports what
  that zip carries; its plugin runs in otter's own process and imports otter, nbformat and
  itself only;
- nothing below the CLI imports the CLI; the grading CLI imports neither the references
  nor training until ``train`` or ``sample`` runs.
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.build.gradescope_zip import TOP_LEVEL, shipped_files
from autograder.build.otter_zip import SHIPPED as OTTER_SHIPPED
from autograder.course import ROOT

PACKAGE = ROOT / "autograder"
THIRD_PARTY_KIT = {"torch", "numpy", "IPython"}  # IPython: imported only inside a kernel, by package_submission()
SHIPPED_THIRD_PARTY = set(TOP_LEVEL) | {"IPython"}  # what the zip's requirements install


def _imports(path: Path) -> list[tuple[str, int, int]]:
    """``(absolute module, line, level)`` for every import in a file (relative ones resolved)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno, 0) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                found.append((".".join(base + ([node.module] if node.module else [])), node.lineno, node.level))
            else:
                found.append((node.module, node.lineno, 0))
    return found


def _files(*packages: str) -> list[Path]:
    return sorted(p for name in packages for p in (PACKAGE / name).rglob("*.py"))


def _stdlib(module: str) -> bool:
    return module.split(".")[0] in sys.stdlib_module_names


@pytest.mark.parametrize("path", _files("kit"), ids=lambda p: p.name)
def test_the_kit_needs_nothing_but_the_standard_library_torch_and_numpy(path):
    text = path.read_text(encoding="utf-8")
    assert "'''" not in text
    for module, line, level in _imports(path):
        if level:
            assert module.startswith("autograder.kit"), f"{path.name}:{line} imports {module}"
            top = [n.lineno for n in ast.parse(text).body if isinstance(n, ast.ImportFrom)]
            assert line in top, f"{path.name}:{line}: a kit import must stand at the top level (the paste drops those)"
        elif path.name != "__init__.py":
            assert _stdlib(module) or module.split(".")[0] in THIRD_PARTY_KIT, f"{path.name}:{line} imports {module}"


@pytest.mark.parametrize(
    "path",
    [p for p in shipped_files() if p.name != "__init__.py" or p.parent.name != "autograder"],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_what_ships_to_gradescope_imports_only_what_ships(path):
    shipped = ("autograder.kit", "autograder.engine", "autograder.channels.gradescope")
    for module, line, _ in _imports(path):
        if module.startswith("autograder"):
            assert module.startswith(shipped), (
                f"{path.relative_to(PACKAGE)}:{line} imports {module}, which the zip does not carry"
            )
        else:
            assert _stdlib(module) or module.split(".")[0] in SHIPPED_THIRD_PARTY, (
                f"{path.relative_to(PACKAGE)}:{line} imports {module}"
            )


@pytest.mark.parametrize(
    "path",
    [p for p in shipped_files(OTTER_SHIPPED) if p.parent.name == "otter"],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_what_ships_in_the_otter_zip_imports_only_what_ships(path):
    """The otter channel: the worker runs the zip's engine; the plugin and its results run in otter's
    own process (``otter run``: the instructor's), and import neither the engine nor torch."""
    in_otters_process = path.stem in ("__init__", "plugin", "results", "written")
    carried = (
        ("autograder.channels.otter",)
        if in_otters_process
        else ("autograder.kit", "autograder.engine", "autograder.channels.gradescope", "autograder.channels.otter")
    )
    third_party = {"otter", "nbformat"} | (set() if in_otters_process else SHIPPED_THIRD_PARTY)
    for module, line, _ in _imports(path):
        where = f"{path.relative_to(PACKAGE)}:{line} imports {module}"
        if module == "autograder":
            assert not in_otters_process, where  # the worker names the package it runs (the zip's)
        elif module.startswith("autograder"):
            assert module.startswith(carried), where
        else:
            assert _stdlib(module) or module.split(".")[0] in third_party, where


def test_the_zip_carries_every_shipped_package_whole():
    names = {p.relative_to(PACKAGE).as_posix() for p in shipped_files()}
    for package in ("kit", "engine", "channels/gradescope"):
        assert {p.relative_to(PACKAGE).as_posix() for p in (PACKAGE / package).glob("*.py")} <= names


@pytest.mark.parametrize(
    "layer,forbidden",
    [
        (
            "engine",
            (
                "autograder.build",
                "autograder.channels",
                "autograder.reports",
                "autograder.authoring",
                "autograder.course",
                "autograder.cli",
                "solutions",
                "training",
            ),
        ),
        (
            "reports",
            (
                "autograder.build",
                "autograder.channels.gradescope",
                "autograder.channels.nbgrader",
                "autograder.authoring",
                "autograder.cli",
                "solutions",
                "training",
            ),
        ),
        ("build", ("autograder.authoring", "autograder.reports", "autograder.cli", "training")),
        ("channels", ("autograder.authoring", "autograder.cli", "solutions", "training")),
        ("authoring", ("autograder.cli", "training")),
    ],
)
def test_dependencies_point_one_way(layer, forbidden):
    for path in _files(layer):
        for module, line, _ in _imports(path):
            assert not module.startswith(forbidden), f"{path.relative_to(PACKAGE)}:{line} imports {module}"


def test_grading_never_imports_the_references_or_training(tmp_path):
    """``gptcourse grade`` end to end in a fresh interpreter, then a look at what it imported."""
    from autograder.build.fixtures import fixture_file
    from autograder.build.notebooks import make_notebook, write_notebook
    from autograder.course import get_stage

    stage = get_stage("01_tokenisation")
    fixture_file(stage)  # fresh fixtures: grading must not need the reference to rebuild them
    write_notebook(make_notebook(stage, "student"), tmp_path / "empty.ipynb")
    script = (
        "import json, sys\n"
        "from autograder.cli import main\n"
        f"main(['grade', '--stage', '01', '--quiet', '--out', {str(tmp_path / 'out')!r}, {str(tmp_path / 'empty.ipynb')!r}])\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('solutions', 'training', 'nbgrader', 'otter'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
    assert (tmp_path / "out" / "empty" / "results.json").exists()


def test_train_and_sample_are_still_gptcourse_commands():
    done = subprocess.run(
        [sys.executable, "-m", "autograder.cli", "train", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0 and "usage: gptcourse train" in done.stdout and "--preset" in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "autograder.cli", "--help"], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert all(
        f"    {name}" in done.stdout for name in ("build", "grade", "report", "check-stage", "demo", "train", "sample")
    )
