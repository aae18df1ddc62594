"""The course specification lives in the project (``assignments/SPEC.md``): a section per stage that
names every question and every name students write, with its parameters; every stage's
``clauses.md`` and notebook cite their section; and nothing in the project points at a file outside
it (the rule ``nothing points outside the project`` of ``check-stage``, and the same look at the
project's documentation)."""

import ast
import inspect
import re
import shutil
from importlib import import_module

import pytest

from autograder.authoring.lint import static_problems
from autograder.authoring.references import SPEC, outside_references, spec_sections
from autograder.build.source import parse_source
from autograder.course import ASSIGNMENTS, ROOT, all_stages, get_stage

STAGES = all_stages()


def section(stage_id: str) -> str:
    """The text of the specification's section of a stage (its heading to the next one)."""
    text = SPEC.read_text(encoding="utf-8")
    start = text.index(f"\n## {stage_id}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def _same(written: str, default) -> bool:
    """Whether a default as the specification writes it (``1e-5``, ``"gelu"``, ``()``) is ``default``."""
    try:
        return ast.literal_eval(written) == default
    except (ValueError, SyntaxError):
        return False


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.id)
def test_the_specification_names_every_question_name_and_parameter_of_a_stage(stage):
    text = section(stage.id)
    for qid, _ in stage.tests().questions():
        assert f"- **{qid}**" in text, f"SPEC.md § {stage.id} says nothing of question {qid}"
    module = import_module(f"solutions.{stage.module}")
    for name in (b.arg for b in parse_source(stage.source) if b.kind == "stub"):
        assert f"`{name}" in text, f"SPEC.md § {stage.id} does not name {name}"
        target = getattr(module, name)
        target = target.__init__ if inspect.isclass(target) else target
        for parameter in inspect.signature(target).parameters.values():
            if parameter.name != "self":
                assert re.search(rf"\b{parameter.name}\b", text), f"SPEC.md § {stage.id}: {name}({parameter.name})"
            if parameter.default is not inspect.Parameter.empty and parameter.default is not None:
                stated = re.findall(rf"\b{parameter.name}=(\(\)|[^,)`\s]+)", text)
                assert any(_same(value, parameter.default) for value in stated), (
                    f"SPEC.md § {stage.id} does not give {name}'s default {parameter.name}={parameter.default!r}"
                )


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.id)
def test_clauses_and_the_notebook_cite_their_section(stage):
    citation = f"`SPEC.md § {stage.id}`"
    assert stage.id in spec_sections()
    assert citation in (stage.folder / "clauses.md").read_text(encoding="utf-8")
    assert citation in stage.source.read_text(encoding="utf-8")


def test_the_documentation_points_at_nothing_outside_the_project():
    pages = [ROOT / "README.md", ASSIGNMENTS / "README.md", SPEC, *sorted((ROOT / "benchmarks").glob("*.md"))]
    found = {str(p.relative_to(ROOT)): outside_references(p.read_text(encoding="utf-8"), p.parent) for p in pages}
    assert not {page: problems for page, problems in found.items() if problems}


def test_check_stage_refuses_a_stage_that_points_outside_the_project(tmp_path):
    root = tmp_path / "assignments"
    shutil.copytree(ASSIGNMENTS / "04_masking", root / "04_masking", ignore=shutil.ignore_patterns("__pycache__"))
    clauses = root / "04_masking" / "clauses.md"
    clauses.write_text(
        clauses.read_text(encoding="utf-8").replace("`SPEC.md § 04_masking`", "COURSE_SPEC.md (`SPEC.md § 4`)")
        + "\nSee /work/shared/notes.txt and ../../../outside.md.\n",
        encoding="utf-8",
    )
    problems = [p for p in static_problems(get_stage("04_masking", root)) if "[nothing points outside" in p]
    assert problems == [
        "[nothing points outside the project] clauses.md: COURSE_SPEC.md: no file of the project has this name",
        "[nothing points outside the project] clauses.md: ../../../outside.md: the path leads out of the project",
        "[nothing points outside the project] clauses.md: /work/shared/notes.txt: an absolute path "
        "(it names one machine's files)",
        "[nothing points outside the project] clauses.md: SPEC.md § 4: assignments/SPEC.md has no such section",
    ]
