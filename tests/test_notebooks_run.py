"""Every stage's notebook, run from top to bottom in a real Jupyter kernel (nbclient, the
project's ipykernel), every cell, demonstrations and training included, offline:

- **reference**: the reference solution in every stub cell, the local Tiny Shakespeare
  (``GPTCOURSE_SHAKESPEARE``). No cell may raise, every check cell reports that its public
  tests passed, and ``package_submission()`` packs the saved notebook.
- **own**: the reference notebook of a stage that builds on earlier stages, with every
  earlier stage's answer (the cells a student fills by pasting their own earlier work, while
  the instructor withholds the course's) replaced by a student's own version: a catalogued
  alternative of that stage (correct code in another style, ``ALTERNATIVES`` in its
  ``mistakes.py``), under the imports its own notebook made. It runs as clean as the
  reference: no later cell may lean on more of an earlier answer than its contract names
  (09's n-gram row once read ``ngram.counts``, an attribute stage 01 never asks for).
- **student**: the release as a student gets it, and no local corpus, so that the corpus
  loader meets the dead network and falls back to the default corpus (and says so). Check
  cells report failures without raising. A demonstration or training cell may stop only
  because it calls a function the student has not written yet: its error must be a stub's
  own ``NotImplementedError`` ("Write NAME: ...", or "Paste your NAME of stage NN" for an earlier
  stage's answer not yet released), never anything else (a ``NameError``
  included: a demonstration does not lean on a variable an earlier, failed one would have
  made). Every other cell (harness, given code, stubs, check cells, hand-in) runs clean.

The network is unreachable in the kernel: a ``sitecustomize`` on the kernel's
``PYTHONPATH`` (the text of ``autograder/authoring/offline.py``, which the rule "reference
notebook runs" uses too) makes every Internet socket fail at once (and name lookups with it), and
``GPTCOURSE_CACHE`` points at an empty folder, so no cached download can stand in for it.
Demonstrations and training run at a reduced size: the kernel has ``GPTCOURSE_QUICK=1``,
which the notebooks read into ``QUICK``. It also has one torch thread (``OMP_NUM_THREADS=1``):
the models are small, and on a busy 2-core machine two threads per kernel made 07 eight
times slower (230 s against 27 s), its threads waiting for each other at every operation.

The kernels run two at a time, each with one torch thread: measured on this project's
2-core machine, two notebooks took 35 s at once against 54 s one after the other, for the
same 16 s of CPU time. So the first of these tests to run waits for all of them (its
duration is theirs); each test then reads its own notebook's outputs.
"""

import ast
import asyncio
import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from kernels import execute_in_kernel
from support import SHAKESPEARE

from autograder.authoring import offline
from autograder.authoring.catalogue import catalogue
from autograder.build.answers import given_answers
from autograder.build.notebooks import make_notebook
from autograder.course import all_stages, get_stage
from autograder.engine.submission import TAG_ANSWER, TAG_CHECK, TAG_DEMO, TAG_GIVEN, TAG_STUB, TAG_TRAIN

STAGES = all_stages()
NAME = "my notebook.ipynb"
KERNELS_AT_ONCE = 2  # one torch thread each: both cores busy


def _tags(cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def _errors(cell) -> list:
    return [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


async def run_async(notebook: dict, folder, shakespeare: bool) -> nbformat.NotebookNode:
    """Run a notebook, saved as ``folder/work/my notebook.ipynb``, in an offline kernel, top to
    bottom (with the local corpus, or without it and so with the default corpus)."""
    (folder / "site").mkdir()
    (folder / "site" / "sitecustomize.py").write_text(Path(offline.__file__).read_text())  # no network at start-up
    (folder / "cache").mkdir()
    env = {key: value for key, value in os.environ.items() if key not in {"GPTCOURSE_SHAKESPEARE", "PYTHONPATH"}}
    env |= {
        "PYTHONPATH": str(folder / "site"),
        "GPTCOURSE_CACHE": str(folder / "cache"),
        "GPTCOURSE_QUICK": "1",
        "OMP_NUM_THREADS": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    if shakespeare:
        env["GPTCOURSE_SHAKESPEARE"] = str(SHAKESPEARE)
    work = folder / "work"
    work.mkdir()
    path = work / NAME
    path.write_text(json.dumps(notebook))  # package_submission() finds it here
    notebook = nbformat.read(path, as_version=4)
    await execute_in_kernel(notebook, work, timeout=300, env=env)
    return notebook


def _imports(source: str) -> list[str]:
    """The import statements at the top level of a cell's code.

    Example:
        >>> _imports("import math\n\nQUICK = True\nfrom torch import nn\n")
        ['import math', 'from torch import nn']
    """
    tree = ast.parse(source)
    return [ast.get_source_segment(source, n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]


def _defined(source: str) -> list[str]:
    """The functions and classes a cell's code defines at its top level."""
    return [n.name for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]


@functools.cache
def _alternatives(stage_id: str) -> list:
    """A stage's catalogued alternatives (read once per stage)."""
    return catalogue(get_stage(stage_id))[1]


@functools.cache
def _given_imports(stage_id: str) -> list[str]:
    """The import statements of a stage's given cells (its own notebook's imports; built once per stage)."""
    cells = make_notebook(get_stage(stage_id), "reference")["cells"]
    return [line for c in cells if TAG_GIVEN in _tags(c) for line in _imports(c["source"])]


def own_earlier_answers(stage) -> dict:
    """``stage``'s reference notebook with each earlier stage's answer replaced by one of that
    stage's catalogued alternatives (picked by ``stage``'s number, so that the later stages
    try different ones), under the imports of the cell it replaces and of its own stage's
    notebook, as a student pastes their own earlier work."""
    notebook = make_notebook(stage, "reference")
    student = make_notebook(stage, "student")
    for answer in given_answers(stage):
        alternatives = [v.cells[answer.short] for v in _alternatives(answer.stage.id) if answer.short in v.cells]
        assert alternatives, f"{answer.stage.id} has no catalogued alternative for {answer.short}"
        code = alternatives[int(stage.id[:2]) % len(alternatives)]
        at = next(
            i
            for i, (cell, theirs) in enumerate(zip(notebook["cells"], student["cells"]))
            if TAG_ANSWER in _tags(theirs) and answer.short in _defined(cell["source"])
        )
        imports = dict.fromkeys(_imports(notebook["cells"][at]["source"]) + _given_imports(answer.stage.id))
        notebook["cells"][at]["source"] = "\n".join(imports) + "\n\n\n" + code
    return notebook


RUNS = {
    "test_reference_notebook_runs_clean_offline": "reference",
    "test_a_notebook_runs_with_a_student_s_own_earlier_answers": "own",
    "test_released_notebook_fails_only_where_a_stub_is_called": "student",
}


@pytest.fixture(scope="module")
def executed(request, tmp_path_factory) -> dict:
    """The notebooks of the selected tests of this module, run two kernels at a time:
    ``{(stage id, variant): notebook, or the exception that stopped its run}``."""
    wanted = [
        (item.callspec.params["stage"], RUNS[item.originalname])
        for item in request.session.items
        if item.module is request.module and item.originalname in RUNS
    ]
    wanted = [(stage, variant) for stage, variant in wanted if variant == "student" or SHAKESPEARE.exists()]
    build = {"own": own_earlier_answers}

    async def run_all():
        gate = asyncio.Semaphore(KERNELS_AT_ONCE)

        async def one(stage, variant):
            async with gate:
                folder = tmp_path_factory.mktemp(f"{stage.id}-{variant}")
                notebook = build.get(variant, lambda stage: make_notebook(stage, variant))(stage)
                return await run_async(notebook, folder, shakespeare=variant != "student")

        return await asyncio.gather(*(one(stage, variant) for stage, variant in wanted), return_exceptions=True)

    return {(stage.id, variant): result for (stage, variant), result in zip(wanted, asyncio.run(run_all()))}


def _ran(executed: dict, stage, variant: str) -> nbformat.NotebookNode:
    result = executed[(stage.id, variant)]
    if isinstance(result, BaseException):
        raise result
    return result


def _where(index: int, cell) -> str:
    return f"cell {index} ({', '.join(sorted(_tags(cell))) or cell.cell_type}): {cell.source.splitlines()[0][:70]!r}"


def stub_messages(notebook) -> set[str]:
    """The messages of the ``NotImplementedError``s the stub cells raise (and the cells of earlier
    stages' answers, which hold stubs until the instructor releases them)."""
    messages = set()
    for cell in notebook.cells:
        if {TAG_STUB, TAG_ANSWER} & _tags(cell):
            for node in ast.walk(ast.parse(cell.source)):
                if (
                    isinstance(node, ast.Raise)
                    and isinstance(node.exc, ast.Call)
                    and getattr(node.exc.func, "id", "") == "NotImplementedError"
                ):
                    messages.add(node.exc.args[0].value)
    return messages


@pytest.mark.slow
@pytest.mark.skipif(
    not SHAKESPEARE.exists(), reason="no local copy of Tiny Shakespeare (tests/support.py says where it is looked for)"
)
@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.id)
def test_reference_notebook_runs_clean_offline(stage, executed):
    notebook = _ran(executed, stage, "reference")
    _assert_runs_clean(notebook)
    output = "\n".join(_text(c) for c in notebook.cells)
    for claim in CLAIMS.get(stage.id, ()):
        assert re.search(claim, output), f"no output matches {claim!r}"


@pytest.mark.slow
@pytest.mark.skipif(
    not SHAKESPEARE.exists(), reason="no local copy of Tiny Shakespeare (tests/support.py says where it is looked for)"
)
@pytest.mark.parametrize("stage", [s for s in STAGES if given_answers(s)], ids=lambda s: s.id)
def test_a_notebook_runs_with_a_student_s_own_earlier_answers(stage, executed):
    _assert_runs_clean(_ran(executed, stage, "own"))


def _assert_runs_clean(notebook) -> None:
    """No cell raised, every check cell passed, the corpus was the local one, and the hand-in packed."""
    failed = [
        f"{_where(i, c)}\n  {e['ename']}: {e['evalue']}" for i, c in enumerate(notebook.cells) for e in _errors(c)
    ]
    assert not failed, "\n".join(failed)
    for index, cell in enumerate(notebook.cells):
        if TAG_CHECK in _tags(cell):
            assert "public tests passed" in _text(cell), f"{_where(index, cell)}\n{_text(cell)}"
    output = "\n".join(_text(c) for c in notebook.cells)
    assert "Could not download" not in output and "DIFFERENT" not in output
    assert _text(notebook.cells[-1]).startswith(f"Packaged {NAME}"), _text(notebook.cells[-1])


# What the text of a notebook says a demonstration shows, as it must show it even at the quick sizes.
CLAIMS = {
    # the masked model's loss on new windows is the same in one pass and prefix by prefix
    "04_masking": [r"causal mask +training loss \d\.\d\d   new windows: one pass (\d\.\d\d), honest \1\n"],
    "05_multihead": [r"merge_heads gives x back: True"],
    # the block and PyTorch's layer, holding the same parts, agree in all four arrangements
    "06_blocks": [r"(?:norm_first=(?:True|False) +(?:gelu|relu):  max \|difference\| = \S+  match\n){4}"],
    "08_generation": [r"same tokens: True"],
}


@pytest.mark.slow
@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.id)
def test_released_notebook_fails_only_where_a_stub_is_called(stage, executed):
    notebook = _ran(executed, stage, "student")
    messages = stub_messages(notebook)
    assert messages
    wrong = []
    for index, cell in enumerate(notebook.cells):
        for error in _errors(cell):
            if not (
                {TAG_DEMO, TAG_TRAIN} & _tags(cell)
                and error["ename"] == "NotImplementedError"
                and error["evalue"] in messages
            ):
                wrong.append(f"{_where(index, cell)}\n  {error['ename']}: {error['evalue']}")
        if TAG_CHECK in _tags(cell):
            assert "not implemented yet" in _text(cell), f"{_where(index, cell)}\n{_text(cell)}"
        if (
            "load_corpus(" in cell.source
            and {TAG_DEMO, TAG_TRAIN} & _tags(cell)
            and "Could not download Tiny Shakespeare" not in _text(cell)
        ):
            wrong.append(
                f"{_where(index, cell)}\n  the offline fallback to the default corpus said nothing: {_text(cell)[:200]!r}"
            )
    assert not wrong, "\n".join(wrong)
    assert _text(notebook.cells[-1]).startswith(f"Packaged {NAME}"), _text(notebook.cells[-1])


@pytest.mark.slow
def test_the_block_demo_compares_like_with_like(tmp_path):
    """06's comparison with nn.TransformerEncoderLayer agrees with check("block") whatever the
    student's LayerNorm and FeedForward: like the tests of that question, it puts PyTorch's
    own LayerNorm and feed-forward layers into the block, and it uses their tolerance. (It
    used the student's parts and a tolerance of 1e-5: the catalogued LayerNorm mistakes,
    which check("block") rightly ignores, made it say DIFFERENT.)"""
    stage = get_stage("06_blocks")
    cells = make_notebook(stage, "reference")["cells"]
    check_block = next(i for i, c in enumerate(cells) if c["source"] == 'check("block")')
    demo = next(c for c in cells if TAG_DEMO in _tags(c) and "nn.TransformerEncoderLayer(" in c["source"])
    kept = [c for c in cells[: check_block + 1] if not {TAG_DEMO, TAG_TRAIN} & _tags(c)]
    mistakes = [v for v in catalogue(stage)[0] if v.qid in {"layernorm", "feedforward"}]
    assert len(mistakes) >= 8
    for index, mistake in enumerate(mistakes):
        kept += [
            nbformat.v4.new_code_cell(source, id=f"m{index}-cell{n}") for n, source in enumerate(mistake.cells.values())
        ]
        kept += [
            nbformat.v4.new_code_cell('check("block")', id=f"m{index}-check"),
            nbformat.v4.new_code_cell(demo["source"], id=f"m{index}-demo"),
        ]
    notebook = asyncio.run(run_async({**make_notebook(stage, "reference"), "cells": kept}, tmp_path, shakespeare=False))
    assert not [e for c in notebook.cells for e in _errors(c)]
    output = {cell.id: _text(cell) for cell in notebook.cells}
    for index, mistake in enumerate(mistakes):
        assert "public tests passed" in output[f"m{index}-check"], (mistake.name, output[f"m{index}-check"])
        compared = output[f"m{index}-demo"]
        assert compared.count("match") == 4 and "DIFFERENT" not in compared, (mistake.name, compared)


def test_the_kernels_sitecustomize_cuts_off_the_internet_and_keeps_local_sockets(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(Path(offline.__file__).read_text())
    probe = """
import socket
for call in (lambda: socket.create_connection(("192.0.2.1", 80), timeout=5),
             lambda: socket.getaddrinfo("example.org", 80),
             lambda: socket.socket().connect_ex(("192.0.2.1", 80))):
    try:
        call()
        print("reached")
    except OSError as error:
        print(error.errno, error.strerror)
a, b = socket.socketpair()  # a local socket, as a kernel's own
a.sendall(b"ok")
print(b.recv(2).decode())
"""
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"101 {offline.MESSAGE}"] * 3 + ["ok"]
