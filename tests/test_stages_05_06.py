"""Stages 05_multihead and 06_blocks: what their catalogues, test inputs and notebooks promise.

- The catalogue holds at least four mistakes per question, among them the named ones the
  course is built around; each named mistake is what its name says (its failure carries
  the hint written for it, or its output matches the mistaken formula), and the correct
  alternatives include einsum, a fused projection and F.scaled_dot_product_attention.
  (That each mistake loses points on its own question only, and each alternative earns
  full marks, is proven in test_catalogue.py.)
- (That every call the probes make to split_heads, merge_heads and MultiHeadAttention has B,
  T, C, H and D all different is check-stage's rule "probe sizes apart", run on every stage
  in test_rules.py.)
- The reference notebooks run from top to bottom in a real kernel, demonstrations
  included, and show what their text says they show.
"""

import asyncio
import json
import math
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from kernels import execute_in_kernel

import solutions.multihead
from autograder.authoring.catalogue import catalogue
from autograder.build.notebooks import make_notebook
from autograder.course import get_stage, questions
from autograder.engine.submission import TAG_CHECK, TAG_DEMO
from autograder.kit.cases import set_parameters
from solutions.blocks import FeedForward, LayerNorm, TransformerBlock
from solutions.masking import causal_mask

# (stage, question, mistake name, words of the hint its failure must carry, or None when
# the mistake has no hint and is checked against its formula below)
NAMED_MISTAKES = [
    ("05_multihead", "heads", "split with a bare reshape to (B, H, T, D)", "your heads mix positions"),
    ("05_multihead", "heads", "merge without moving the head axis back", "joining straight from (B, H, T, D)"),
    ("05_multihead", "mha", "heads merged inline without the transpose", None),
    ("05_multihead", "mha", "scores divided by sqrt(C) instead of sqrt(D)", "the number the scores are divided by"),
    ("05_multihead", "mha", "one softmax across all heads", "the softmax must not run across heads"),
    ("06_blocks", "layernorm", "unbiased variance (divides by C - 1)", "what your variance divides by"),
    ("06_blocks", "layernorm", "eps added outside the square root", "where eps enters the formula"),
    ("06_blocks", "feedforward", "GELU with the tanh approximation", "tanh approximation of GELU"),
    ("06_blocks", "block", "pre-norm and post-norm swapped", "the two orders look exchanged"),
    ("06_blocks", "block", "pre-norm residual taken after the norm", None),
]
STAGES = ["05_multihead", "06_blocks"]


def _variant(stage: str, name: str):
    found = [v for v in catalogue(stage)[0] if v.name == name]
    assert len(found) == 1, f"{stage}: the catalogue has no mistake named {name!r}"
    return found[0]


def _exec_cell(source: str, **names) -> dict:
    namespace = {"torch": torch, "nn": nn, "F": F, "math": math, **names}
    exec(compile(source, "<variant>", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("stage", STAGES)
def test_at_least_four_mistakes_per_question(stage):
    mistakes, _ = catalogue(stage)
    for qid, _points in questions(stage):
        assert sum(m.qid == qid for m in mistakes) >= 4, f"{stage}: {qid} needs at least four mistakes"


def test_named_mistakes_are_in_the_catalogue():
    for stage, qid, name, _hint in NAMED_MISTAKES:
        assert _variant(stage, name).qid == qid, f"{name} belongs to {qid}"


HINTED = [m for m in NAMED_MISTAKES if m[3] is not None]


@pytest.mark.parametrize("stage,qid,name,hint", HINTED, ids=[m[2] for m in HINTED])
def test_named_mistake_fails_with_its_hint(stage, qid, name, hint, graded_catalogue):
    variant = _variant(stage, name)
    failed = [r for r in graded_catalogue(stage).by_name[variant.slug].results if not r.passed]
    assert failed and all(r.qid == qid for r in failed)
    assert any(hint in r.message for r in failed), [r.message for r in failed]


def test_inline_merge_without_transpose_is_that_mistake(monkeypatch):
    variant = _variant("05_multihead", "heads merged inline without the transpose")
    ns = _exec_cell(
        variant.cells["MultiHeadAttention"],
        split_heads=solutions.multihead.split_heads,
        merge_heads=solutions.multihead.merge_heads,
    )
    B, T, C, H = 3, 5, 24, 4
    wrong = ns["MultiHeadAttention"](C, H).eval()
    set_parameters(wrong, 1)
    right = solutions.multihead.MultiHeadAttention(C, H).eval()
    right.load_state_dict(wrong.state_dict())
    x = torch.randn(B, T, C, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        correct = right(x, mask=causal_mask(T))
        monkeypatch.setattr(solutions.multihead, "merge_heads", lambda y: y.reshape(B, T, C))  # (B, H, T, D) read as is
        torch.testing.assert_close(wrong(x, mask=causal_mask(T)), right(x, mask=causal_mask(T)), rtol=1e-5, atol=1e-6)
    assert (wrong(x, mask=causal_mask(T)) - correct).abs().max() > 1e-2


def test_residual_after_the_norm_is_that_mistake():
    variant = _variant("06_blocks", "pre-norm residual taken after the norm")
    ns = _exec_cell(
        variant.cells["TransformerBlock"],
        MultiHeadAttention=solutions.multihead.MultiHeadAttention,
        LayerNorm=LayerNorm,
        FeedForward=FeedForward,
    )
    B, T, C, H, FF = 3, 5, 24, 4, 40
    wrong = ns["TransformerBlock"](C, H, FF).eval()
    set_parameters(wrong, 2)
    right = TransformerBlock(C, H, FF).eval()
    right.load_state_dict(wrong.state_dict())
    x, mask = torch.randn(B, T, C, generator=torch.Generator().manual_seed(1)), causal_mask(T)
    with torch.no_grad():
        h = right.ln1(x)  # the stream itself is normalised, then the sublayer's change added
        h = h + right.attn(h, mask=mask)
        h = right.ln2(h)
        torch.testing.assert_close(wrong(x, mask=mask), h + right.ff(h), rtol=1e-5, atol=1e-6)
        assert (wrong(x, mask=mask) - right(x, mask=mask)).abs().max() > 1e-2


def test_mha_alternatives_include_the_three_styles():
    sources = [v.cells["MultiHeadAttention"] for v in catalogue("05_multihead")[1] if "MultiHeadAttention" in v.cells]
    assert any("torch.einsum(" in s for s in sources), "an einsum alternative"
    assert any("F.scaled_dot_product_attention(" in s for s in sources), "an F.scaled_dot_product_attention alternative"
    assert any("F.linear(x, weight, bias).chunk(3" in s for s in sources), "a fused qkv projection alternative"


# ---------------------------------------------------------------- the notebooks, run in a kernel

_CHECK_05 = """
assert weights.shape == (1, 8, T, T), weights.shape
assert torch.all(weights[0].triu(1) == 0)
distinct = min((weights[0, a] - weights[0, b]).abs().max().item() for a in range(8) for b in range(a + 1, 8))
assert distinct > 0.1, f"two heads draw nearly the same map ({distinct:.3g})"
print("ok: 8 distinct causal maps")
"""

_CHECK_06 = """
assert profile[True][0] > profile[True][-1], "pre-norm: gradients fall from the input to the top"
assert profile[False][-1] > profile[True][-1], "post-norm: the top blocks get larger gradients than pre-norm"
assert all(a > b for a, b in zip(top[True], top[True][1:])), f"pre-norm top block shrinks with depth: {top[True]}"
assert top[False][-1] > top[False][0], f"post-norm top block grows with depth: {top[False]}"
chance = math.log(16)
pre, post = sum(losses[True][-10:]) / 10, sum(losses[False][-10:]) / 10
assert pre < chance - 0.4, f"pre-norm learns: last losses {pre:.3f}"
assert abs(post - chance) < 0.1, f"post-norm stays near chance: last losses {post:.3f}"
print("ok: pre-norm claims hold")
"""


def _execute(stage: str, extra: str, folder: Path) -> list:
    nb = make_notebook(get_stage(stage), "reference")
    nb["cells"].append(
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "test-claims",
            "metadata": {},
            "outputs": [],
            "source": extra,
        }
    )
    path = folder / f"{stage}.ipynb"
    path.write_text(json.dumps(nb))
    notebook = nbformat.read(path, as_version=4)
    asyncio.run(execute_in_kernel(notebook, folder, timeout=300))
    errors = [
        (i, o.get("ename"), o.get("evalue"))
        for i, c in enumerate(notebook.cells)
        if c.cell_type == "code"
        for o in c.outputs
        if o.get("output_type") == "error"
    ]
    assert not errors, errors
    return notebook.cells


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


def _images(cell) -> int:
    return sum("image/png" in o.get("data", {}) for o in cell.outputs)


def _demo_showing(cells, words: str):
    found = [c for c in cells if TAG_DEMO in c.metadata.get("tags", []) and words in c.source]
    assert len(found) == 1, words
    return found[0]


@pytest.mark.slow
def test_notebook_05_runs_and_shows_what_it_says(tmp_path):
    cells = _execute("05_multihead", _CHECK_05, tmp_path)
    checks = [_text(c) for c in cells if TAG_CHECK in c.metadata.get("tags", [])]
    assert len(checks) == 2 and all("public tests passed" in t for t in checks), checks
    split = _text(_demo_showing(cells, "the bare reshape"))
    assert "head 1: [[2.0, 3.0], [8.0, 9.0]]" in split and "head 1: [[4.0, 5.0], [6.0, 7.0]]" in split
    merge = _text(_demo_showing(cells, "back.view(1, 2, 6)"))
    assert (
        "contiguous after the transpose? False" in merge and "view refuses" in merge and "gives x back: True" in merge
    )
    mapping = _text(_demo_showing(cells, "in_proj_weight"))
    assert mapping.count("match") == 3 and "DIFFERENT" not in mapping, mapping
    assert _images(_demo_showing(cells, "plt.subplots(2, 4")) == 1
    assert "ok: 8 distinct causal maps" in _text(cells[-1])


@pytest.mark.slow
def test_notebook_06_runs_and_shows_what_it_says(tmp_path):
    cells = _execute("06_blocks", _CHECK_06, tmp_path)
    checks = [_text(c) for c in cells if TAG_CHECK in c.metadata.get("tags", [])]
    assert len(checks) == 3 and all("public tests passed" in t for t in checks), checks
    mapping = _text(_demo_showing(cells, "def twin_pair"))
    assert mapping.count("match") == 4 and "DIFFERENT" not in mapping, mapping
    assert _images(_demo_showing(cells, "def block_gradient_norms")) == 1
    assert _images(_demo_showing(cells, "def toy_training")) == 1
    assert "ok: pre-norm claims hold" in _text(cells[-1])
