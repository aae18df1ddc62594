"""A plain otter-grader autograder for stage 01, for comparison with the engine's plugin.

Our Gradescope zip makes ``otter run`` hand grading to the gptcourse engine through a
plugin, so timing it measures otter's own start-up plus our engine. To show what otter
costs when it grades natively, this module writes the zip that ``otter assign`` would
give for stage 01: ``otter_config.json`` and OK-format doctest files in ``tests/`` (the
tests run in the student's kernel, as otter does), and a copy of the submission whose
check, demonstration and training cells are tagged ``otter_ignore``.

The tests cover the same six questions with 20 cases (ours has 26); they exist only to
time otter's machinery, not to grade anyone.
"""

import json
import zipfile
from pathlib import Path

# (question, points, [doctest case, ...]); each case is ">>> " lines and expected output
CASES: list[tuple[str, int, list[str]]] = [
    ("build_vocab", 2, [
        ">>> build_vocab('hello')\n({'e': 0, 'h': 1, 'l': 2, 'o': 3}, {0: 'e', 1: 'h', 2: 'l', 3: 'o'})",
        ">>> stoi, itos = build_vocab('été à Noël')\n>>> sorted(stoi.values()) == list(range(len(stoi)))\nTrue",
        ">>> build_vocab('a')\n({'a': 0}, {0: 'a'})",
    ]),
    ("encode_decode", 4, [
        ">>> stoi, itos = build_vocab('to be or not')\n>>> decode(encode('to be or not', stoi), itos)\n'to be or not'",
        ">>> stoi, itos = build_vocab('abc')\n>>> encode('cab', stoi)\n[2, 0, 1]",
        ">>> import torch\n>>> stoi, itos = build_vocab('more lovely')\n>>> decode(torch.tensor(encode('more lovely', stoi)), itos)\n'more lovely'",
        ">>> try:\n...     encode('abz', {'a': 0, 'b': 1})\n... except ValueError as e:\n...     print('z' in str(e))\nTrue",
    ]),
    ("train_val_split", 3, [
        ">>> import torch\n>>> tr, va = train_val_split(torch.arange(10), val_fraction=0.2)\n>>> tr.tolist(), va.tolist()\n([0, 1, 2, 3, 4, 5, 6, 7], [8, 9])",
        ">>> import torch\n>>> tr, va = train_val_split(torch.arange(101))\n>>> len(tr), len(va), tr.dtype\n(90, 11, torch.int64)",
        ">>> import torch\n>>> tr, va = train_val_split(torch.arange(7), val_fraction=0.5)\n>>> torch.equal(torch.cat([tr, va]), torch.arange(7))\nTrue",
    ]),
    ("get_batch", 3, [
        ">>> import torch\n>>> data = torch.arange(100, 160)\n>>> x, y = get_batch(data, 8, 4, generator=torch.Generator().manual_seed(0))\n>>> tuple(x.shape), tuple(y.shape), x.dtype\n((4, 8), (4, 8), torch.int64)",
        ">>> import torch\n>>> data = torch.arange(100, 160)\n>>> x, y = get_batch(data, 8, 4, generator=torch.Generator().manual_seed(0))\n>>> torch.equal(x[:, 1:], y[:, :-1])\nTrue",
        ">>> import torch\n>>> data = torch.arange(10)\n>>> x, y = get_batch(data, 9, 200, generator=torch.Generator().manual_seed(1))\n>>> sorted(set(x[:, 0].tolist()))\n[0]",
    ]),
    ("ngram", 4, [
        ">>> lm = NGramLM(2, 3, alpha=1.0).fit([0, 1, 2, 0, 1, 2, 0, 1])\n>>> round(lm.prob([0], 1), 6)\n0.666667",
        ">>> lm = NGramLM(1, 3, alpha=1.0).fit([0, 0, 1])\n>>> round(lm.prob([], 0), 6)\n0.5",
        ">>> lm = NGramLM(2, 3, alpha=1.0).fit([0, 1, 2, 0, 1, 2, 0, 1])\n>>> isinstance(lm.perplexity([0, 1, 2, 0]), float)\nTrue",
        ">>> lm = NGramLM(3, 4, alpha=0.1).fit([0, 1, 2, 3] * 20)\n>>> round(lm.prob([9, 9, 0, 1], 2), 4) == round(lm.prob([0, 1], 2), 4)\nTrue",
    ]),
    ("kneser_ney", 3, [
        ">>> import torch\n>>> P = kneser_ney_bigram(torch.tensor([0, 1, 2, 1, 0, 2, 2, 1]).tolist(), 4)\n>>> tuple(P.shape)\n(4, 4)",
        ">>> import torch\n>>> P = kneser_ney_bigram([0, 1, 2, 1, 0, 2, 2, 1], 4)\n>>> bool(torch.allclose(P.sum(1), torch.ones(4)))\nTrue",
        ">>> try:\n...     kneser_ney_bigram([0, 1], 2, discount=-0.1)\n... except ValueError:\n...     print('raised')\nraised",
    ]),
]


def test_file(question: str, points: int, cases: list[str]) -> str:
    test = {
        "name": question,
        "points": points,
        "suites": [{
            "cases": [{"code": code, "hidden": i > 0, "locked": False} for i, code in enumerate(cases)],
            "scored": True, "setup": "", "teardown": "", "type": "doctest",
        }],
    }
    return "OK_FORMAT = True\n\ntest = " + repr(test) + "\n"


def write_zip(path: Path) -> Path:
    """The autograder zip: otter_config.json and tests/<question>.py, as otter assign makes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("otter_config.json", json.dumps({"lang": "python", "show_stdout": False}))
        for question, points, cases in CASES:
            archive.writestr(f"tests/{question}.py", test_file(question, points, cases))
    return path


def otter_notebook(notebook: dict, skip_tags: set[str]) -> dict:
    """The submission with the cells the engine skips tagged ``otter_ignore`` (otter drops them)."""
    nb = json.loads(json.dumps(notebook))
    for cell in nb["cells"]:
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if skip_tags & set(tags):
            tags.append("otter_ignore")
    return nb


def number_of_cases() -> int:
    return sum(len(cases) for _, _, cases in CASES)
