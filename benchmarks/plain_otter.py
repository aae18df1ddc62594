"""otter-grader autograders for the benchmark: how otter grades a stage natively.

An instructor who wraps the course in otter-grader would give otter an autograder zip
of its own kind: ``otter_config.json`` and OK-format test files ``tests/<question>.py``,
which ``otter run`` runs in the student's kernel. This module writes two such zips:

- ``write_stage_zip``, for any stage: one test per question, whose doctest runs that
  question's PUBLIC tests in the kernel through the notebook's own harness (the
  ``run_public`` that ``check(qid)`` runs, which returns the points earned and prints
  nothing) and expects the question's public points. otter then runs the public tests
  only, in the student's kernel: no hidden tests, no fixtures, no confinement. It does
  less work than ``gptcourse grade`` and the Gradescope zip, which run every public and
  hidden test in a confined child;
- ``write_doctest_zip``, stage 01 only: hand-written doctests (``CASES``: 20 cases in the
  six questions; our suites have more), otter's most native form.

``otter_notebook`` tags the submission's check, demonstration and training cells
``otter_ignore``, so that otter skips what the engine skips. The zips exist to time
otter's machinery, not to grade anyone.

>>> print(question_test("ngram", 4).splitlines()[-1])
4.0
"""

import json
import zipfile
from pathlib import Path

# (question, points, [doctest case, ...]); each case is ">>> " lines and expected output
CASES: list[tuple[str, int, list[str]]] = [
    (
        "build_vocab",
        2,
        [
            ">>> build_vocab('hello')\n({'e': 0, 'h': 1, 'l': 2, 'o': 3}, {0: 'e', 1: 'h', 2: 'l', 3: 'o'})",
            ">>> stoi, itos = build_vocab('été à Noël')\n>>> sorted(stoi.values()) == list(range(len(stoi)))\nTrue",
            ">>> build_vocab('a')\n({'a': 0}, {0: 'a'})",
        ],
    ),
    (
        "encode_decode",
        4,
        [
            ">>> stoi, itos = build_vocab('to be or not')\n>>> decode(encode('to be or not', stoi), itos)\n'to be or not'",
            ">>> stoi, itos = build_vocab('abc')\n>>> encode('cab', stoi)\n[2, 0, 1]",
            ">>> import torch\n>>> stoi, itos = build_vocab('more lovely')\n>>> decode(torch.tensor(encode('more lovely', stoi)), itos)\n'more lovely'",
            ">>> try:\n...     encode('abz', {'a': 0, 'b': 1})\n... except ValueError as e:\n...     print('z' in str(e))\nTrue",
        ],
    ),
    (
        "train_val_split",
        3,
        [
            ">>> import torch\n>>> tr, va = train_val_split(torch.arange(10), val_fraction=0.2)\n>>> tr.tolist(), va.tolist()\n([0, 1, 2, 3, 4, 5, 6, 7], [8, 9])",
            ">>> import torch\n>>> tr, va = train_val_split(torch.arange(101))\n>>> len(tr), len(va), tr.dtype\n(90, 11, torch.int64)",
            ">>> import torch\n>>> tr, va = train_val_split(torch.arange(7), val_fraction=0.5)\n>>> torch.equal(torch.cat([tr, va]), torch.arange(7))\nTrue",
        ],
    ),
    (
        "get_batch",
        3,
        [
            ">>> import torch\n>>> data = torch.arange(100, 160)\n>>> x, y = get_batch(data, 8, 4, generator=torch.Generator().manual_seed(0))\n>>> tuple(x.shape), tuple(y.shape), x.dtype\n((4, 8), (4, 8), torch.int64)",
            ">>> import torch\n>>> data = torch.arange(100, 160)\n>>> x, y = get_batch(data, 8, 4, generator=torch.Generator().manual_seed(0))\n>>> torch.equal(x[:, 1:], y[:, :-1])\nTrue",
            ">>> import torch\n>>> data = torch.arange(10)\n>>> x, y = get_batch(data, 9, 200, generator=torch.Generator().manual_seed(1))\n>>> sorted(set(x[:, 0].tolist()))\n[0]",
        ],
    ),
    (
        "ngram",
        4,
        [
            ">>> lm = NGramLM(2, 3, alpha=1.0).fit([0, 1, 2, 0, 1, 2, 0, 1])\n>>> round(lm.prob([0], 1), 6)\n0.666667",
            ">>> lm = NGramLM(1, 3, alpha=1.0).fit([0, 0, 1])\n>>> round(lm.prob([], 0), 6)\n0.5",
            ">>> lm = NGramLM(2, 3, alpha=1.0).fit([0, 1, 2, 0, 1, 2, 0, 1])\n>>> isinstance(lm.perplexity([0, 1, 2, 0]), float)\nTrue",
            ">>> lm = NGramLM(3, 4, alpha=0.1).fit([0, 1, 2, 3] * 20)\n>>> round(lm.prob([9, 9, 0, 1], 2), 4) == round(lm.prob([0, 1], 2), 4)\nTrue",
        ],
    ),
    (
        "kneser_ney",
        3,
        [
            ">>> import torch\n>>> P = kneser_ney_bigram(torch.tensor([0, 1, 2, 1, 0, 2, 2, 1]).tolist(), 4)\n>>> tuple(P.shape)\n(4, 4)",
            ">>> import torch\n>>> P = kneser_ney_bigram([0, 1, 2, 1, 0, 2, 2, 1], 4)\n>>> bool(torch.allclose(P.sum(1), torch.ones(4)))\nTrue",
            ">>> try:\n...     kneser_ney_bigram([0, 1], 2, discount=-0.1)\n... except ValueError:\n...     print('raised')\nraised",
        ],
    ),
]


def question_test(qid: str, points: float) -> str:
    """The doctest of one question: its public tests through the notebook's harness, which must earn ``points``.

    The harness cell registers its module as ``gptcourse_checks``; its ``run_public`` is what
    ``check(qid)`` runs, and returns the points earned without printing the report.
    """
    return (
        ">>> import sys\n"
        ">>> _harness = sys.modules['gptcourse_checks']\n"
        f">>> _passed, _report, _earned = _harness.run_public(_harness.suite.cases, {qid!r}, globals())\n"
        ">>> print(round(float(_earned), 6))\n"
        f"{round(float(points), 6)!r}"
    )


def public_points(cases) -> dict[str, float]:
    """Each question's public points, in the order the public suite introduces them.

    ``cases``: a stage's test cases (``autograder.build.fixtures.stage_tests(stage).cases``);
    only the public ones count.
    """
    points: dict[str, float] = {}
    for case in cases:
        if case.public:
            points[case.qid] = points.get(case.qid, 0.0) + case.points
    return points


def test_file(question: str, points: float, cases: list[str]) -> str:
    """An OK-format test file: one doctest suite of ``cases``, all but the first hidden."""
    test = {
        "name": question,
        "points": points,
        "suites": [
            {
                "cases": [{"code": code, "hidden": i > 0, "locked": False} for i, code in enumerate(cases)],
                "scored": True,
                "setup": "",
                "teardown": "",
                "type": "doctest",
            }
        ],
    }
    return "OK_FORMAT = True\n\ntest = " + repr(test) + "\n"


def _write(path: Path, tests: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("otter_config.json", json.dumps({"lang": "python", "show_stdout": False}))
        for question, text in tests.items():
            archive.writestr(f"tests/{question}.py", text)
    return path


def write_stage_zip(cases, path: Path) -> Path:
    """The otter autograder of a stage: per question, its public tests in the kernel (see above)."""
    return _write(
        path, {qid: test_file(qid, pts, [question_test(qid, pts)]) for qid, pts in public_points(cases).items()}
    )


def write_doctest_zip(path: Path) -> Path:
    """Stage 01's otter autograder with hand-written doctests (``CASES``), as ``otter assign`` makes."""
    return _write(path, {question: test_file(question, points, cases) for question, points, cases in CASES})


def otter_notebook(notebook: dict, skip_tags: set[str]) -> dict:
    """The submission with the cells the engine skips tagged ``otter_ignore`` (otter drops them)."""
    nb = json.loads(json.dumps(notebook))
    for cell in nb["cells"]:
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if skip_tags & set(tags):
            tags.append("otter_ignore")
    return nb


def number_of_cases() -> int:
    """How many hand-written doctest cases ``CASES`` has."""
    return sum(len(cases) for _, _, cases in CASES)
