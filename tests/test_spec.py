"""The course specification lives in the project (``assignments/SPEC.md``): a section per stage that
names every question and every name students write, with its parameters; every stage's
``clauses.md`` and notebook cite their section; and nothing in the project points at a file outside
it (the rule ``nothing points outside the project`` of ``check-stage``, and the same look at the
project's documentation). What a section must say of its stage is the rule ``the specification
covers the stage`` of ``check-stage`` (``autograder/authoring/spec.py``), run on every stage by ``test_rules.py``."""

import shutil

import pytest

from autograder.authoring.lint import static_problems
from autograder.authoring.references import SPEC, outside_references, spec_sections
from autograder.course import ASSIGNMENTS, ROOT, all_stages, get_stage

STAGES = all_stages()


def test_check_stage_refuses_a_stage_its_specification_does_not_cover(tmp_path):
    # a scratch course: stage 04 and the specification beside it, as an author copies them
    root = tmp_path / "assignments"
    shutil.copytree(ASSIGNMENTS / "04_masking", root / "04_masking", ignore=shutil.ignore_patterns("__pycache__"))
    spec = SPEC.read_text(encoding="utf-8")
    spec = spec.replace("- **lm_loss**", "- lm_loss").replace("ignore_index=-100", "ignore_index=-1")
    (root / "SPEC.md").write_text(spec, encoding="utf-8")
    clauses = root / "04_masking" / "clauses.md"
    clauses.write_text(clauses.read_text(encoding="utf-8").replace("`SPEC.md § 04_masking`", "the specification"))
    problems = [p for p in static_problems(get_stage("04_masking", root)) if "[the specification covers" in p]
    assert problems == [
        "[the specification covers the stage] SPEC.md § 04_masking says nothing of question lm_loss (a line `- **lm_loss**`)",
        "[the specification covers the stage] SPEC.md § 04_masking does not give pad_and_shift's default ignore_index=-100",
        "[the specification covers the stage] SPEC.md § 04_masking does not give lm_loss's default ignore_index=-100",
        "[the specification covers the stage] SPEC.md § 04_masking is not cited by clauses.md (as `SPEC.md § 04_masking`)",
    ]
    (root / "SPEC.md").write_text(spec.replace("\n## 04_masking\n", "\n## 04 masking\n"), encoding="utf-8")
    problems = [p for p in static_problems(get_stage("04_masking", root)) if "[the specification covers" in p]
    assert problems == [
        "[the specification covers the stage] SPEC.md § 04_masking: no section `## 04_masking` (add one, as the other stages have)"
    ]


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.id)
def test_clauses_and_the_notebook_cite_a_section_that_exists(stage):
    assert stage.id in spec_sections()


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
    spec = root / "SPEC.md"  # and its section of the specification names one machine's file
    text = SPEC.read_text(encoding="utf-8")
    start = text.index("## 04_masking")
    spec.write_text(
        text[:start] + text[start:].replace("\n", "\nLogs: /home/ta/masking.log here.\n", 1), encoding="utf-8"
    )
    problems = [p for p in static_problems(get_stage("04_masking", root)) if "[nothing points outside" in p]
    assert problems == [
        "[nothing points outside the project] clauses.md: COURSE_SPEC.md: no file of the project has this name",
        "[nothing points outside the project] clauses.md: ../../../outside.md: the path leads out of the project",
        "[nothing points outside the project] clauses.md: /work/shared/notes.txt: an absolute path "
        "(it names one machine's files)",
        "[nothing points outside the project] clauses.md: SPEC.md § 4: assignments/SPEC.md has no such section",
        "[nothing points outside the project] SPEC.md § 04_masking: /home/ta/masking.log: an absolute path "
        "(it names one machine's files)",
    ]
