"""The course's stages: ids, reference modules, test-suite files, questions and points."""

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .harness import Case, load_suite

ROOT = Path(__file__).resolve().parent.parent
SUITES = Path(__file__).resolve().parent / "suites"
ASSIGNMENTS = ROOT / "assignments"


class UsageError(ValueError):
    """A mistake in how a command was called (unknown stage, missing file)."""


@dataclass(frozen=True)
class Stage:
    """One stage (one notebook) of the course."""

    id: str
    module: str  # the reference module under ``solutions``
    title: str

    @property
    def suite_files(self) -> list[Path]:
        """The public then the hidden test file."""
        return [SUITES / self.id / "public.py", SUITES / self.id / "hidden.py"]

    @property
    def source(self) -> Path:
        """The notebook source in ``assignments/``."""
        return ASSIGNMENTS / f"{self.id}.md"

    @property
    def available(self) -> bool:
        """Whether this stage has its notebook source and tests yet."""
        return self.source.exists() and all(p.exists() for p in self.suite_files)


ALL_STAGES = [
    Stage("01_tokenisation", "tokenisation", "The language-modelling task: characters, batches, n-grams"),
    Stage("02_bpe", "bpe", "Byte pair encoding: the token learner and segmenter"),
    Stage("03_attention", "attention", "Embeddings, positions and scaled dot-product attention"),
    Stage("04_masking", "masking", "Causal and padding masks, shifted inputs"),
    Stage("05_multihead", "multihead", "Multi-head attention"),
    Stage("06_blocks", "blocks", "LayerNorm, feed-forward, residuals and the transformer block"),
    Stage("07_gpt", "gpt", "The full GPT: training, sampling and a KV cache"),
    Stage("09_encoders", "encoders", "Encoders, masked language modelling and the encoder-decoder"),
]


def get_stage(stage_id: str) -> Stage:
    """The stage called ``stage_id`` (``01_tokenisation`` or just ``01``)."""
    for stage in ALL_STAGES:
        if stage_id in (stage.id, stage.id[:2], stage.id[3:]):
            if not stage.available:
                raise UsageError(f"stage {stage.id} is not written yet")
            return stage
    known = ", ".join(s.id for s in ALL_STAGES)
    raise UsageError(f"unknown stage {stage_id!r}; the stages are: {known}")


def available_stages() -> list[Stage]:
    """The stages whose notebook and tests exist, in course order."""
    return [s for s in ALL_STAGES if s.available]


@lru_cache(maxsize=None)
def load_cases(stage_id: str) -> tuple[Case, ...]:
    """All test cases of a stage, public first, in file order."""
    stage = get_stage(stage_id)
    cases: list[Case] = []
    for index, path in enumerate(stage.suite_files):
        cases.extend(load_suite(str(path), f"gptcourse_suite_{stage.id}_{index}").cases)
    keys = [c.key for c in cases]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{stage.id}: two tests share a name")
    return tuple(cases)


def questions(stage_id: str) -> list[tuple[str, float]]:
    """``(question id, points)`` in the order the public tests introduce them."""
    totals: dict[str, float] = {}
    for case in load_cases(stage_id):
        totals[case.qid] = totals.get(case.qid, 0.0) + case.points
    return list(totals.items())
