"""Making submission notebooks from the reference: for the demo, the tests and benchmarks."""

from pathlib import Path

from autograder.build.notebooks import make_notebook, write_notebook
from autograder.course import Stage

from .catalogue import Variant


def variant_notebook(
    stage: Stage, replace: dict[str, str] | None = None, extra_cells: list[str] | None = None, base: str = "reference"
) -> dict:
    """The reference (or student) notebook with some stub cells replaced and cells appended."""
    nb = make_notebook(stage, base)
    replace = dict(replace or {})
    for cell in nb["cells"]:
        name = cell.get("metadata", {}).get("gptcourse", {}).get("name")
        if name in replace:
            cell["source"] = replace.pop(name)
    if replace:
        raise KeyError(f"{stage.id} has no stub cell named {sorted(replace)}")
    for index, source in enumerate(extra_cells or []):
        nb["cells"].append(
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"extra-{index}",
                "metadata": {},
                "outputs": [],
                "source": source,
            }
        )
    return nb


def write_variant(stage: Stage, variant: Variant, folder: Path) -> Path:
    """Write a mistake or alternative as ``folder/<slug>.ipynb``."""
    path = Path(folder) / f"{variant.slug}.ipynb"
    write_notebook(variant_notebook(stage, variant.cells), path)
    return path
