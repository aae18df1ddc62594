"""``gptcourse check-stage``: everything a course author can get wrong in a stage folder.

Static checks (seconds, ``--quick``):

- the folder has its files; the notebook source parses; every stub names a function or
  class of the reference; every ``reference`` block names one of an earlier stage;
- the suites load; every question has public and hidden tests and exactly one check cell,
  and every check cell names a question;
- the public suite can be pasted into the notebook (no ``'''``, top-level kit imports,
  no name that clashes with the kit's);
- no probe, nor a helper it reaches, compares the student's objects (``verdicts``: the
  parent computes every verdict);
- the catalogue loads, with at least ``MIN_MISTAKES`` mistakes and one alternative per
  question, each naming stub cells that exist;
- the docstring examples of the reference (students see them in their stubs) run true.

Then, by grading the reference, the empty release and the whole catalogue in one batch:
the reference earns full marks, the empty release none, each mistake loses points on its
own question and no other, each alternative earns full marks, and no test's check fails
on any of those outputs.

Example (from the repository's root)::

    $ gptcourse check-stage 03 --quick
    03_attention: OK (static checks; 5 questions, 38 points, 24 mistakes, 6 alternatives)
"""

import ast
import doctest
import importlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from autograder.build.fixtures import stage_tests
from autograder.build.notebooks import check_cells_problems, make_notebook, write_notebook
from autograder.build.source import SourceError, parse_source
from autograder.course import Stage
from autograder.engine.pipeline import Graded, grade_batch
from autograder.engine.runner import Limits
from autograder.kit import PASTED

from .catalogue import catalogue
from .clauses import clause_problems
from .variants import write_variant
from .verdicts import verdict_problems

MIN_MISTAKES = 4
KIT = Path(__file__).resolve().parent.parent / "kit"


@dataclass
class LintReport:
    """What ``lint_stage`` found: problems (each makes the stage fail) and a summary."""

    stage: str
    problems: list[str] = field(default_factory=list)
    summary: str = ""
    graded: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems

    def render(self) -> str:
        what = "static checks and the graded catalogue" if self.graded else "static checks"
        if self.ok:
            return f"{self.stage}: OK ({what}; {self.summary})"
        return "\n".join(
            [f"{self.stage}: {len(self.problems)} problem(s) ({what})", *(f"  - {p}" for p in self.problems)]
        )


class CatalogueGrades:
    """The reference, the empty release and every catalogued variant of a stage, graded in one batch."""

    def __init__(self, stage: Stage, folder: Path, workers: int = 2) -> None:
        self.stage = stage
        self.tests = stage_tests(stage)
        self.mistakes, self.alternatives = catalogue(stage)
        write_notebook(make_notebook(stage, "reference"), folder / "reference.ipynb")
        write_notebook(make_notebook(stage, "student"), folder / "empty.ipynb")
        paths = [folder / "reference.ipynb", folder / "empty.ipynb"]
        paths += [write_variant(stage, variant, folder) for variant in self.mistakes + self.alternatives]
        graded = grade_batch(paths, [p.stem for p in paths], self.tests, Limits(), workers=workers, progress=False)
        self.by_name: dict[str, Graded] = {g.name: g for g in graded}
        self.folder = folder

    @property
    def fixtures(self):
        """The expected values the catalogue was graded against."""
        return self.tests.fixtures

    def scores(self, name: str) -> dict[str, float]:
        """Points per question of one graded submission."""
        per = {q: 0.0 for q, _ in self.tests.questions()}
        for result in self.by_name[name].results:
            per[result.qid] += result.score
        return per


def _kit_names() -> set[str]:
    names = set()
    for module in PASTED:
        tree = ast.parse((KIT / f"{module}.py").read_text(encoding="utf-8"))
        names |= _defined(tree, imports=False)
    return names


def _defined(tree: ast.Module, imports: bool) -> set[str]:
    """Top-level names a module defines (functions, classes, assignments; imports if asked)."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif imports and isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def public_suite_problems(stage: Stage) -> list[str]:
    """Why the public suite could not be pasted into the notebook beside the kit (empty: it can)."""
    text = stage.public.read_text(encoding="utf-8")
    problems = []
    if "'''" in text:
        problems.append(f"{stage.public.name} contains three single quotes in a row (the paste is a ''' string)")
    tree = ast.parse(text)
    top_level = set(map(id, tree.body))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("autograder"):
            if node.module != "autograder.kit" or id(node) not in top_level:
                problems.append(
                    f"{stage.public.name}:{node.lineno}: import the kit at the top of the file, "
                    "as `from autograder.kit import ...` (the paste drops that statement)"
                )
        elif isinstance(node, ast.Import) and any(a.name.startswith("autograder") for a in node.names):
            problems.append(f"{stage.public.name}:{node.lineno}: import the kit as `from autograder.kit import ...`")
    clashes = sorted((_defined(tree, imports=False) - {"suite"}) & _kit_names())
    if clashes:
        problems.append(
            f"{stage.public.name} defines {', '.join(clashes)}, which the kit pasted beside it defines too: rename"
        )
    return problems


def doctest_problems(module) -> list[str]:
    """The docstring examples of a module that do not run true."""
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    problems = []
    for test in doctest.DocTestFinder().find(module):
        if test.lineno is None and not test.examples:
            continue
        result = runner.run(test, out=lambda _: None)
        if result.failed:
            problems.append(f"docstring example of {test.name} fails ({result.failed} of {result.attempted} lines)")
    return problems


def _examples(module) -> int:
    return sum(len(t.examples) for t in doctest.DocTestFinder().find(module))


def static_problems(stage: Stage) -> tuple[list[str], str]:
    """Every check that needs no grading: ``(problems, summary)``."""
    missing = stage.missing()
    if missing:
        return [f"{stage.folder} has no {', '.join(missing)}"], ""
    problems: list[str] = []
    try:
        blocks = parse_source(stage.source)
    except SourceError as exc:
        return [str(exc)], ""
    reference = importlib.import_module(f"solutions.{stage.module}")
    stubs = [b.arg for b in blocks if b.kind == "stub"]
    problems += [f"`stub {name}`: the reference defines no {name}" for name in stubs if not hasattr(reference, name)]
    for block in (b for b in blocks if b.kind == "reference"):
        module, _, name = block.arg.rpartition(".")
        try:
            found = hasattr(importlib.import_module(f"solutions.{module}"), name)
        except ImportError:
            found = False
        if not found:
            problems.append(f"`reference {block.arg}` names nothing in an earlier stage's reference")
    if [b.kind for b in blocks if b.kind not in ("markdown",)][:1] != ["harness"]:
        problems.append("the first code block must be `python harness` (check() must exist before any check cell)")
    try:
        tests = stage.tests()
    except Exception as exc:  # a suite that does not load: report it, whatever it raised
        return problems + [f"the suites do not load: {type(exc).__name__}: {exc}"], ""
    questions = tests.questions()
    for qid, _ in questions:
        kinds = {c.public for c in tests.cases if c.qid == qid}
        if True not in kinds:
            problems.append(f"question {qid} has no public test")
        if False not in kinds:
            problems.append(f"question {qid} has no hidden test")
    problems += check_cells_problems(stage)
    problems += public_suite_problems(stage)
    for path in (stage.public, stage.hidden):
        problems += verdict_problems(path.read_text(encoding="utf-8"), path.name)
    if (stage.folder / "clauses.md").exists():  # required of every stage once each has its table
        by_question = {q: {c.key for c in tests.cases if c.qid == q} for q, _ in questions}
        problems += clause_problems(stage.folder / "clauses.md", by_question)
    try:
        mistakes, alternatives = catalogue(stage)
    except (OSError, ValueError, SyntaxError, ImportError) as exc:
        return problems + [f"the catalogue does not load: {exc}"], ""
    qids = [q for q, _ in questions]
    for variant in mistakes + alternatives:
        if variant.qid not in qids:
            problems.append(f"variant {variant.slug!r} names no question of the stage")
        unknown = sorted(set(variant.cells) - set(stubs))
        if unknown:
            problems.append(
                f"variant {variant.slug!r} replaces {', '.join(unknown)}, which is no stub cell of the notebook"
            )
    for qid in qids:
        count = sum(m.qid == qid for m in mistakes)
        if count < MIN_MISTAKES:
            problems.append(f"question {qid} has {count} catalogued mistakes; at least {MIN_MISTAKES} are needed")
        if not any(a.qid == qid for a in alternatives):
            problems.append(f"question {qid} has no correct alternative in the catalogue")
    slugs = [v.slug for v in mistakes + alternatives]
    problems += [f"two variants share the file name {s!r}" for s in sorted({s for s in slugs if slugs.count(s) > 1})]
    problems += doctest_problems(reference)
    points = sum(p for _, p in questions)
    summary = (
        f"{len(qids)} questions, {points:g} points, {len(mistakes)} mistakes, "
        f"{len(alternatives)} alternatives, {_examples(reference)} docstring examples"
    )
    return problems, summary


def graded_problems(grades: CatalogueGrades) -> list[str]:
    """What the graded catalogue shows: the three-way proof for every question."""
    maxima = dict(grades.tests.questions())
    problems = []
    if grades.scores("reference") != maxima:
        lost = [r.key for r in grades.by_name["reference"].results if not r.passed]
        problems.append(f"the reference does not earn full marks: it fails {', '.join(lost)}")
    if sum(grades.scores("empty").values()):
        problems.append(f"the empty release earns {sum(grades.scores('empty').values()):g} points")
    for variant in grades.mistakes:
        scores = grades.scores(variant.slug)
        if scores[variant.qid] >= maxima[variant.qid]:
            problems.append(f"mistake {variant.slug!r} earns full marks on {variant.qid}")
        others = sorted(q for q, s in scores.items() if q != variant.qid and s < maxima[q])
        if others:
            problems.append(f"mistake {variant.slug!r} also loses points on {', '.join(others)}")
    for variant in grades.alternatives:
        lost = [r.key for r in grades.by_name[variant.slug].results if not r.passed]
        if lost:
            problems.append(f"alternative {variant.slug!r} fails {', '.join(lost)}")
    for name, graded in grades.by_name.items():
        problems += [f"{name}: {fault}" for fault in graded.faults]
    return problems


def lint_stage(stage: Stage, grade: bool = True, workers: int = 2, grades: CatalogueGrades | None = None) -> LintReport:
    """Check a stage folder; with ``grade``, grade the catalogue too (or use ``grades``)."""
    problems, summary = static_problems(stage)
    report = LintReport(stage.id, problems, summary)
    if (grade or grades is not None) and not problems:
        if grades is None:
            with tempfile.TemporaryDirectory(prefix=f"gptcourse-check-{stage.id}-") as tmp:
                grades = CatalogueGrades(stage, Path(tmp), workers)
        report.problems += graded_problems(grades)
        report.graded = True
    return report
