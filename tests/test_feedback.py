"""Feedback that names the real mistake: where an error happened, what IPython syntax did
not run, which failure to fix first, and hidden messages that give no expected value away.

The per-stage rules on the graded catalogue (hints, public tests, hidden messages of every
stage) are in ``test_stage_feedback.py``; here are the mechanisms, each shown on small
inputs and on stage 01 graded through the engine.
"""

import builtins
import json

import pytest
import torch

from autograder.authoring.feedback_rules import revealed
from autograder.authoring.variants import variant_notebook
from autograder.build.fixtures import stage_tests
from autograder.build.notebooks import write_notebook
from autograder.build.stubs import reference_source
from autograder.course import get_stage
from autograder.engine.judge import TestResult as Result
from autograder.engine.judge import by_cause, follows_from, hide_expected
from autograder.engine.pipeline import grade_batch
from autograder.engine.results import cell_notes, explain_failures, gradescope_json
from autograder.engine.runner import Limits
from autograder.engine.submission import code_cells, translate
from autograder.kit import MissingName, Namespace, Suite, catch, close, close_number, equal, failure_roots, satisfies
from autograder.kit.check_cell import run_public
from autograder.kit.runtime import describe_error, error_location, run_probe
from autograder.reports.feedback import feedback_markdown

STAGE = "01_tokenisation"


# --- a name the notebook does not define ------------------------------------------------------


def test_a_missing_name_is_not_taken_for_what_a_call_raised():
    # a test of "raises ValueError" that looks the function up inside catch() said
    # "expected ValueError, got MissingName" (an engine class) for a renamed function
    ns = Namespace({"shift_right": lambda tokens: tokens})
    with pytest.raises(MissingName):
        catch(lambda: ns.causal_mask(-1))
    suite = Suite(public=True)

    @suite.case("causal_mask", "a negative size raises ValueError", points=1, check=equal(), expected="ValueError")
    def _(names):
        return catch(lambda: names.causal_mask(-1))["raised"]

    output, error, _ = run_probe(suite.cases[0], ns)
    assert output is None and error == "`causal_mask` is not defined: run (or restore) the cell that defines it"


# --- where an error happened ---------------------------------------------------------------


def _raise(source: str, filename: str = "<code cell 5>"):
    names: dict = {}
    try:
        exec(compile(source, filename, "exec"), names)
    except Exception as exc:  # the test looks at what was raised
        return exc
    raise AssertionError("the source raised nothing")


def test_a_location_names_the_method_and_the_line(monkeypatch):
    source = (
        "class Model:\n    def forward(self, x):\n        return [x[i] for i in range(3)]\n\nModel().forward([1])\n"
    )
    monkeypatch.setitem(
        __import__("linecache").cache, "<code cell 5>", (len(source), None, source.splitlines(True), "<code cell 5>")
    )
    exc = _raise(source)
    message = describe_error(exc, {"<code cell 5>": "code cell 5"}.get)
    assert (
        message
        == "raised IndexError: list index out of range at line 3 of `Model.forward` in code cell 5: `return [x[i] for i in range(3)]`"
    )


def test_a_location_at_a_cells_top_level_names_no_function_and_not_the_current_cell_twice():
    exc = _raise("x = 1\ny = undefined + x\n")
    assert error_location(exc, {"<code cell 5>": "code cell 5"}.get) == "at line 2 in code cell 5"
    assert error_location(exc, {"<code cell 5>": "code cell 5"}.get, current="code cell 5") == "at line 2"


def test_code_that_is_not_the_students_is_never_named():
    exc = _raise("import torch\ntorch.zeros(2) @ torch.zeros(3)\n", "<hidden tests>")
    assert error_location(exc, {"<code cell 5>": "code cell 5"}.get) == ""
    assert describe_error(exc, {}.get).startswith("raised RuntimeError: ")


def test_in_a_kernel_a_location_names_the_cell_as_jupyter_shows_it():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_cell("def f(x):\n    return x[3]", store_history=True)
        count = shell.execution_count - 1
        shell.run_cell(
            "from autograder.kit.runtime import describe_error\ntry:\n    f([])\nexcept IndexError as exc:\n    message = describe_error(exc)",
            store_history=True,
        )
        assert (
            shell.user_ns["message"]
            == f"raised IndexError: list index out of range at line 2 of `f` in cell In[{count}]: `return x[3]`"
        )
    finally:
        InteractiveShell.clear_instance()
    assert not hasattr(builtins, "get_ipython")


def _code_cell_number(notebook: dict, name: str) -> int:
    codes = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    return next(
        i for i, c in enumerate(codes, start=1) if c.get("metadata", {}).get("gptcourse", {}).get("name") == name
    )


@pytest.fixture(scope="module")
def graded_01(tmp_path_factory):
    """Stage 01 graded on two notebooks: errors in several places, and IPython syntax."""
    folder = tmp_path_factory.mktemp("feedback-01")
    stage = get_stage(STAGE)
    ngram = reference_source("tokenisation", "NGramLM").replace(
        "        count = self.counts.get(key, {}).get(int(token), 0)\n",
        "        count = self.counts[key][int(token)]\n",
    )
    errors = variant_notebook(
        stage,
        {"NGramLM": ngram},
        [
            "def helper(values):\n    return values[3]\n",
            "first = 1\nhelper([first])\n",
            "x = 1\ny = not_defined + x\n",
            "def broken(:\n    pass\n",
        ],
    )
    for cell in errors["cells"]:
        if cell.get("metadata", {}).get("gptcourse", {}).get("name") == "NGramLM":
            cell["execution_count"] = 7
    encode = reference_source("tokenisation", "encode")
    ipython = variant_notebook(
        stage,
        {"encode": f"%%time\n!pip install nothing\n%matplotlib inline\ndisplay('loading')\n{encode}"},
        [
            "x = %time len('abc')\n%timeit len('abc')\nfiles = !ls\nlen?\n",
            "%%bash\necho never\n",
        ],
    )
    paths = [folder / "errors.ipynb", folder / "ipython.ipynb"]
    write_notebook(errors, paths[0])
    write_notebook(ipython, paths[1])
    graded = grade_batch(paths, ["errors", "ipython"], stage_tests(stage), Limits(), workers=2, progress=False)
    return {"errors": (errors, graded[0]), "ipython": (ipython, graded[1])}


def test_a_tests_error_names_the_method_its_line_and_its_code_cell(graded_01):
    notebook, graded = graded_01["errors"]
    number = _code_cell_number(notebook, "NGramLM")
    messages = [r.message for r in graded.results if r.qid == "ngram" and "KeyError" in r.message and r.public]
    assert messages, [r.message for r in graded.results if r.qid == "ngram"]
    assert f"of `NGramLM.prob` in code cell {number} (In [7]): `count = self.counts[key][int(token)]`" in messages[0], (
        messages[0]
    )


def test_a_cells_error_names_the_cell_once_and_the_code_where_it_happened(graded_01):
    notebook, graded = graded_01["errors"]
    total = sum(c["cell_type"] == "code" for c in notebook["cells"])
    notes = cell_notes(graded.outcome).splitlines()
    helper, caller, top, syntax = total - 3, total - 2, total - 1, total  # the four extra cells, after the hand-in cell
    assert (
        f"Code cell {caller} raised IndexError: list index out of range at line 2 of `helper` in code cell {helper}: `return values[3]`"
        in notes
    ), notes
    assert (
        f"Code cell {top} raised NameError: name 'not_defined' is not defined at line 2: `y = not_defined + x`" in notes
    ), notes
    assert f"Code cell {syntax} has a syntax error at line 1: invalid syntax: `def broken(:`" in notes, notes


def test_ipython_syntax_runs_as_a_kernel_would_and_the_student_is_told_what_did_not(graded_01):
    notebook, graded = graded_01["ipython"]
    assert graded.outcome.cell_errors == {}, graded.outcome.cell_errors
    failed = [r.key for r in graded.results if r.qid == "encode_decode" and not r.passed]
    assert failed == [], failed  # the %%time cell defined encode
    assert "'loading'" in graded.outcome.output  # display() printed, as a kernel would show it
    number = _code_cell_number(notebook, "encode")
    total = sum(c["cell_type"] == "code" for c in notebook["cells"])
    notes = cell_notes(graded.outcome).splitlines()
    assert notes == [
        f"Code cell {number}, line 2: `!pip install nothing` was not run: shell commands do not run when grading",
        f"Code cell {total - 1}, line 2: `%timeit len('abc')` was not run: timing is skipped when grading",
        f"Code cell {total - 1}, line 3: `!ls` was not run: shell commands do not run when grading; `files` is [] instead",
        f"Code cell {total}: the cell `%%bash` was not run: shell commands do not run when grading",
    ], notes


def test_cells_are_numbered_among_code_cells_with_their_execution_count():
    notebook = {
        "cells": [
            {"cell_type": "markdown", "source": "# title"},
            {"cell_type": "code", "source": "a = 1", "metadata": {}, "execution_count": 3},
            {"cell_type": "markdown", "source": "text"},
            {"cell_type": "code", "source": "b = 2", "metadata": {"tags": ["gptcourse:demo"]}, "execution_count": None},
            {"cell_type": "code", "source": "c = 3", "metadata": {}, "execution_count": None},
        ]
    }
    cells = code_cells(notebook)
    assert [(c.index, c.number, c.label) for c in cells] == [(1, 1, "code cell 1 (In [3])"), (4, 3, "code cell 3")]


# --- IPython syntax ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source,python,notes",
    [
        ("%time x = f(1)", "x = f(1)", []),
        ("y = %time f(1)", "y = f(1)", []),
        ("%matplotlib inline\n%config InlineBackend.figure_format = 'svg'", "pass\npass", []),
        ("model?\n??model.forward", "pass\npass", []),
        (
            "if True:\n    !ls\n    x = 1",
            "if True:\n    pass\n    x = 1",
            ["line 2: `!ls` was not run: shell commands do not run when grading"],
        ),
        (
            "%pip install torch",
            "pass",
            [
                "line 1: `%pip install torch` was not run: packages are not installed when grading (the grader has what the course needs)"
            ],
        ),
        (
            "%cd /tmp",
            "pass",
            ["line 1: `%cd /tmp` was not run: the grader's working folder and environment variables stay as they are"],
        ),
        (
            "%run other.ipynb",
            "pass",
            ["line 1: `%run other.ipynb` was not run: the magic %run is not available when grading"],
        ),
        ("%%time\nx = 1\n!ls", "\nx = 1\npass", ["line 3: `!ls` was not run: shell commands do not run when grading"]),
        (
            "%%capture out\nx = 1",
            "out = None\nx = 1",
            ["line 1: `%%capture out`: the cell ran, but `out` captures nothing when grading (it is None)"],
        ),
        (
            "%%writefile helpers.py\ndef f(): pass",
            "",
            [
                "the cell `%%writefile helpers.py` was not run: no file is written when grading (put the code in a cell of its own)"
            ],
        ),
        ("%%html\n<b>hi</b>", "", []),
        (
            "%%unknown\nx = 1",
            "",
            ["the cell `%%unknown` was not run: the cell magic %%unknown is not available when grading"],
        ),
        ("s = '''\n!not a shell line\n%not a magic\n'''", "s = '''\n!not a shell line\n%not a magic\n'''", []),
        ("total = (1 +\n% 2)\nrest = 7 % 3", "total = (1 +\n% 2)\nrest = 7 % 3", []),
        (
            "x = 1 + \\\n    2\n!ls",
            "x = 1 + \\\n    2\npass",
            ["line 3: `!ls` was not run: shell commands do not run when grading"],
        ),
    ],
)
def test_ipython_syntax_is_translated_where_a_statement_begins(source, python, notes):
    assert translate(source) == (python, notes)


SHELL = [
    "!touch {m}",
    "files = !touch {m}",
    "%system touch {m}",
    "%sx touch {m}",
    "%%bash\ntouch {m}",
    "%%sh\ntouch {m}",
    "%%script bash\ntouch {m}",
    "%%!\ntouch {m}",
    "%%time\n!touch {m}",
    "if True:\n    !touch {m}",
    "%%capture\n!touch {m}",
    "%%writefile {m}\nx = 1",
    "%pip install {m}",
    "%%python3\nopen('{m}', 'w')",
]


@pytest.mark.parametrize("cell", SHELL)
def test_no_shell_command_and_no_file_write_survives_translation(cell, tmp_path):
    marker = tmp_path / "ran"
    python, notes = translate(cell.format(m=marker))
    exec(compile(python, "<cell>", "exec"), {})
    assert not marker.exists() and str(marker) not in python
    assert notes, "the student is told what did not run"


# --- which failure to fix first ------------------------------------------------------------


def test_failure_roots_follow_builds_on_through_failed_tests_only():
    tests = [
        ("a", (), False),
        ("b", ("a",), True),
        ("c", ("b",), False),
        ("d", ("a", "c"), False),
        ("e", (), False),
        ("f", ("e", "a"), False),
    ]
    assert failure_roots(tests) == {"a": [], "c": [], "d": ["a", "c"], "e": [], "f": ["e", "a"]}


def _result(name, public, passed, builds_on=(), qid="q"):
    return Result(
        f"{qid}: {name}",
        qid,
        name,
        public,
        1.0 if passed else 0.0,
        1.0,
        "" if passed else f"{name} failed",
        builds_on=builds_on,
    )


RESULTS = [
    _result("shape", True, False),
    _result("values", True, False, ("shape",)),
    _result("other", True, False),
    _result("fine", True, True),
    _result("hidden shape", False, False, ("shape",)),
    _result("hidden values", False, False, ("hidden shape",)),
]


def test_each_failure_says_what_it_follows_from_and_a_public_one_names_no_hidden_test():
    explained = explain_failures(RESULTS)
    assert follows_from(RESULTS)["q: hidden values"] == ["q: shape"]
    assert explained["q: values"] == 'This follows from the failure of "shape": fix that first.\nvalues failed'
    assert explained["q: hidden values"].startswith('This follows from the failure of "shape": fix that first.')
    assert (
        explained["q: shape"] == "shape failed\n(1 later test(s) of q fail because of this one: start here.)"
    )  # the hidden ones are not counted
    assert explained["q: other"] == "other failed"
    doc = gradescope_json(RESULTS)
    assert [t["output"] for t in doc["tests"]] == [explained.get(r.key, "public test passed") for r in RESULTS]


def test_feedback_starts_each_question_from_its_most_basic_failure():
    assert [r.name for r in by_cause(RESULTS)] == ["shape", "other", "values", "hidden shape", "hidden values", "fine"]
    text = feedback_markdown("s", STAGE, RESULTS, show_hidden=True)
    order = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("- ")]
    assert order == ["shape", "other", "values", "hidden shape", "hidden values", "fine"]
    assert (
        text.count("later test(s)") == 1 and "1 later test(s) of q fail because of this one" in text
    )  # a public test counts public tests only
    public_only = feedback_markdown("s", STAGE, RESULTS)
    assert "hidden" not in public_only.split("## q")[1] and "1 later test(s)" in public_only


def test_check_reports_the_most_basic_failure_first():
    suite = Suite(public=True)

    @suite.case(
        "q", "returns a list", points=1, check=satisfies(lambda got: None if isinstance(got, list) else "not a list")
    )
    def _(ns):
        return ns.f()

    @suite.case("q", "a passing test", points=1, check=equal(), expected=1)
    def _(ns):
        return 1

    @suite.case("q", "the values", points=1, check=equal(), expected=[1, 2], builds_on=("returns a list",))
    def _(ns):
        return ns.f()

    ok, report, _ = run_public(suite.cases, "q", {"f": lambda: (1, 3)})
    lines = report.splitlines()
    assert not ok and lines[1:3] == ["  [FAIL] returns a list", "         not a list"]
    assert lines[3] == "         (1 later test(s) fail because of this one: start here)"
    assert lines[4:6] == ["  [FAIL] the values", '         follows from the failure of "returns a list"']
    assert lines[-1] == "  [ok  ] a passing test"


# --- hidden messages -----------------------------------------------------------------------


HIDDEN = [  # (check, expected, got): each fails; the expected value is distinctive
    (equal(), [list(range(13))], [list(range(14))]),
    (equal(), {"zebra-key": 1, "b": 2}, {"b": 2}),
    (equal(), [{"keyword": 4242}], [{"keyword": 19}]),
    (equal(), "hidden expected text", "hidden expected tex"),
    (equal(), torch.arange(17), torch.arange(18)),
    (equal(), torch.tensor([5, 61, 7]), torch.tensor([5, 6, 7])),
    (equal(), torch.tensor([0.25, 0.73125]), torch.tensor([0.25, 0.32434681057929993])),
    (equal(), (4.1875, None), (4.0, 3)),
    (
        close(rtol=1e-5, atol=1e-6),
        torch.tensor([[0.7312, 0.25], [0.5, 0.125]]),
        torch.tensor([[0.5, 0.25], [0.5, 0.125]]),
    ),
    (close(rtol=1e-5, atol=1e-6), torch.zeros(17, 3), torch.zeros(16, 3)),
    (close_number(rtol=1e-6, atol=0), 2.718281, 3.14159),
]


@pytest.mark.parametrize("check,expected,got", HIDDEN)
def test_a_hidden_message_says_what_failed_and_reveals_no_expected_value(check, expected, got):
    verdict = check(got, expected, False)
    assert not verdict.passed and verdict.message
    assert revealed(verdict.message, expected, got) == [], verdict.message
    public = check(got, expected, True).message  # a public test may say it: the scan sees it there
    assert revealed(public, expected, got), public


def test_a_hidden_close_message_does_not_give_the_size_of_the_error():
    message = close(rtol=1e-5, atol=1e-6)(torch.tensor([0.5]), torch.tensor([0.7312]), False).message
    assert "0.2312" not in message and "0.231" not in message and "where you returned 0.5" in message
    assert "0.2312" in close_number(rtol=1e-6, atol=0)(0.5, 0.7312, True).message


def test_the_judge_hides_expected_text_but_not_the_students_own():
    message = "[0]['own']: your value 3 is not the expected one; missing 'secret'"
    assert (
        hide_expected(message, [{"own": 1, "secret": 2}], [{"own": 3}])
        == "[0]['own']: your value 3 is not the expected one; missing [a hidden expected value]"
    )


@pytest.mark.parametrize(
    "message,expected,got",
    [  # messages today's grader wrote (stage 01, 02, 04 catalogues)
        (
            "[0][0]: expected length 13, got 14",
            ([list(range(13)), [13, 14]], [list(range(7)), []]),
            ([list(range(14)), [14]], [list(range(7)), []]),
        ),
        (
            "result: strings differ from character 1 on (lengths 21 and 11 expected)",
            "more lovely",
            "m o r e   l o v e l y",
        ),
        (
            "[0]: expected shape (17,), got (18,)",
            (torch.arange(17), torch.arange(17, 20)),
            (torch.arange(18), torch.arange(18, 20)),
        ),
        ("[0]: missing key 'zebra' (1 keys missing)", [{"zebra": 1}], [{}]),
        ("off by 0.223 (rtol=1e-09, atol=0); you returned 5.92287, expected 6.14587", 6.145873, 5.922871),
    ],
)
def test_the_scan_finds_what_todays_messages_reveal(message, expected, got):
    assert revealed(message, expected, got)


def test_what_a_submission_sees_holds_no_hidden_value(graded_01):
    """The feedback built for stage 01's graded notebooks: every hidden failure, scanned."""
    tests = stage_tests(get_stage(STAGE))
    for _, graded in graded_01.values():
        for result in graded.results:
            case = next(c for c in tests.cases if c.key == result.key)
            if case.public or result.passed or result.key in graded.outcome.errors:
                continue
            expected = tests.fixtures.get(case.key, case.expected)
            assert revealed(result.message, expected, graded.outcome.values[result.key]) == [], result.message
        assert json.dumps(gradescope_json(graded.results))
