"""A stage's catalogue graded once: the reference, the empty release, every catalogued
variant and the variants made from the reference (``auto_variants``: no-ops, the builder, dtype
audits, empty answers).

The graded rules of ``gptcourse check-stage`` (``rules.RULES``) all read one
``CatalogueGrades``, so that a stage is graded once, in one batch, however many rules
look at it.

Example::

    grades = CatalogueGrades(get_stage("01"), Path(tmp))
    grades.scores("reference")  # {"build_vocab": 6.0, ...}
"""

from pathlib import Path

from autograder.build.clauses import Clause, read_clauses
from autograder.build.fixtures import stage_tests
from autograder.build.notebooks import make_notebook, write_notebook
from autograder.course import Stage
from autograder.engine.pipeline import Graded, grade_batch
from autograder.engine.runner import Limits

from .auto_variants import (
    AutoVariant,
    audit_variants,
    builder_variants,
    empty_variants,
    noop_variants,
    write_auto_variant,
)
from .catalogue import catalogue
from .reuse import grade_catalogue
from .variants import write_variant


class CatalogueGrades:
    """The reference, the empty release, every catalogued variant of a stage and its automatic
    variants (no-ops, the builder, dtype audits and empty answers), graded in one batch.

    ``graded`` (a submission's name -> its grading) takes grades made earlier of the
    notebooks already in ``folder`` instead of writing and grading them again (the project's
    tests keep them, see ``tests/support.py``). With ``reuse`` (the default), a variant's tests
    that its change cannot reach take the reference's outputs (``reuse.grade_catalogue``;
    ``reused`` lists them per variant); without it, every variant runs every test.
    """

    def __init__(
        self,
        stage: Stage,
        folder: Path,
        workers: int = 2,
        graded: dict[str, Graded] | None = None,
        reuse: bool = True,
    ) -> None:
        self.stage = stage
        self.tests = stage_tests(stage)
        self.mistakes, self.alternatives = catalogue(stage)
        self.noops: list[AutoVariant] = noop_variants(stage)
        self.builders: list[AutoVariant] = builder_variants(stage)
        self.audits: list[AutoVariant] = audit_variants(stage)
        self.empties: list[AutoVariant] = empty_variants(stage)
        self.folder = folder
        self.reused: dict[str, list[str]] = {}
        if graded is None:
            reference, *variants = self._write_notebooks()
            if reuse:
                done, self.reused = grade_catalogue(reference, variants, self.tests, Limits(), workers)
            else:
                paths = [reference, *variants]
                done = grade_batch(paths, [p.stem for p in paths], self.tests, Limits(), workers, progress=False)
            graded = {g.name: g for g in done}
        self.by_name: dict[str, Graded] = graded

    def _write_notebooks(self) -> list[Path]:
        """The reference, the empty release, every variant and every automatic variant, written to ``self.folder``."""
        write_notebook(make_notebook(self.stage, "reference"), self.folder / "reference.ipynb")
        write_notebook(make_notebook(self.stage, "student"), self.folder / "empty.ipynb")
        paths = [self.folder / "reference.ipynb", self.folder / "empty.ipynb"]
        paths += [write_variant(self.stage, v, self.folder) for v in self.mistakes + self.alternatives]
        return paths + [write_auto_variant(self.stage, v, self.folder) for v in self.automatic]

    @property
    def automatic(self) -> list[AutoVariant]:
        """The variants made from the reference: no-ops, the builder, dtype audits, empty answers."""
        return self.noops + self.builders + self.audits + self.empties

    @property
    def clauses(self) -> dict[str, list[Clause]]:
        """The stage's clause tables (``clauses.md``), per question."""
        return read_clauses(self.stage.folder / "clauses.md")

    def describe(self, name: str) -> str:
        """How problems name a graded submission: an automatic variant by what it is, others by name."""
        auto = {v.slug: v.what for v in self.automatic}
        return auto.get(name, repr(name))

    @property
    def fixtures(self):
        """The expected values the catalogue was graded against."""
        return self.tests.fixtures

    @property
    def maxima(self) -> dict[str, float]:
        """Points per question when every test passes."""
        return dict(self.tests.questions())

    def scores(self, name: str) -> dict[str, float]:
        """Points per question of one graded submission."""
        return self.by_name[name].per_question(self.tests)
