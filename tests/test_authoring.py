"""``gptcourse check-stage`` catches what an author can get wrong, shown on scratch copies of
stage 01 with one thing broken each (every stage is held to every rule in ``test_rules.py``).
"""

import doctest
import importlib
import pkgutil
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from autograder.authoring.catalogue import catalogue
from autograder.authoring.grades import CatalogueGrades
from autograder.authoring.lint import lint_stage, static_problems
from autograder.authoring.rules import apply, get_rule
from autograder.authoring.static_rules import Subject, doctest_problems, stub_leaks
from autograder.build.fixtures import stage_tests
from autograder.build.notebooks import harness_module, student_path
from autograder.build.release import build_student
from autograder.build.stubs import reference_source
from autograder.course import ROOT, all_stages, get_stage
from solutions.data import load_corpus


def test_the_command_reports_ok_and_its_exit_status(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "autograder.cli", "check-stage", "01", "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("01_tokenisation: OK (static rules; 6 questions")


@pytest.fixture
def scratch(tmp_path):
    """A copy of stage 01's folder and of its committed student notebook in a scratch course, to
    break one thing at a time."""
    folder = tmp_path / "assignments" / "01_tokenisation"
    shutil.copytree(get_stage("01").folder, folder, ignore=shutil.ignore_patterns("__pycache__"))
    stage = get_stage("01", root=folder.parent)
    student_path(stage, tmp_path / "release").parent.mkdir(parents=True)
    shutil.copy(student_path(stage, ROOT / "release"), student_path(stage, tmp_path / "release"))
    return stage


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_scratch_copy_is_clean(scratch):
    assert static_problems(scratch) == []


def test_a_release_notebook_not_rebuilt_is_caught_and_nothing_is_written(scratch, tmp_path):
    # an author changed the notebook's text and a public test's points, forgot `gptcourse build`,
    # and check-stage said OK while students were handed the old notebook
    committed = student_path(scratch, tmp_path / "release")
    before = committed.read_text(encoding="utf-8")
    _replace(scratch.source, "# Stage 01", "# Stage 01 (new)")
    problems = static_problems(scratch)
    assert problems == [
        f"[release up to date] {committed} is stale, not what a fresh build writes (cell 0 differs first: "
        "markdown cell '# Stage 01 (new) · The language-modelling task'): "
        "run `gptcourse build --stages 01` and commit what it writes"
    ]
    report = lint_stage(scratch, grade=False)
    assert not report.ok and report.summary  # the graded rules would run: they read the sources, not the release
    assert committed.read_text(encoding="utf-8") == before
    build_student(scratch, tmp_path / "release", log=lambda _: None)
    assert static_problems(scratch) == []
    text = scratch.public.read_text(encoding="utf-8")
    scratch.public.write_text(text.replace("points=1,", "points=2,", 1), encoding="utf-8")
    assert "(cell 1 differs first: the check harness, which holds the kit and public.py)" in str(
        static_problems(scratch)
    )
    committed.unlink()
    assert static_problems(scratch) == [
        f"[release up to date] {committed} does not exist: run `gptcourse build --stages 01` and commit what it writes"
    ]


def test_a_stub_whose_message_or_docstring_gives_the_answer_away_is_caught(scratch):
    # the stub block's text becomes the stub's NotImplementedError message, which students read
    _replace(
        scratch.source,
        "```python stub decode\n",
        '```python stub decode\nhint: return "".join(itos[int(i)] for i in ids), after tolist()\n',
    )
    problems = static_problems(scratch)
    assert problems == [
        '[stubs give no answer] `stub decode`: its message holds `return "".join(itos[int(i)] for i in ids)` '
        "of the reference's body: students read the answer"
    ], problems
    source = (
        "class Model:\n"
        "    def forward(self, x, state):\n"
        '        """Run it: ``y = self.proj(x) * 2`` once, then ``out, state = self.cell(y, state)``."""\n'
        "        y = self.proj(x) * 2  # first\n"
        "        out, state = self.cell(y, state)\n"
        "        return out, state\n"
    )
    assert stub_leaks("Model", source, "") == [
        "`stub Model`: the docstring of forward holds `y = self.proj(x) * 2` of the reference's body: "
        "students read the answer",
        "`stub Model`: the docstring of forward holds `out, state = self.cell(y, state)` of the reference's body: "
        "students read the answer",
    ]
    # calling what the function is given is its interface, which a docstring may state; `return x` is no answer
    assert (
        stub_leaks("run", "def run(model, idx):\n    'Calls ``out = model(idx)``.'\n    out = model(idx)\n", "") == []
    )


def test_a_test_name_used_twice_in_one_suite_is_named_with_its_file_and_lines(scratch):
    text = scratch.hidden.read_text(encoding="utf-8")
    last = text[text.rindex("@suite.case(") :]
    first = text.count("\n", 0, text.rindex("@suite.case(")) + 1
    scratch.hidden.write_text(text + "\n\n" + last, encoding="utf-8")
    assert static_problems(scratch) == [
        "[suites load] ValueError: duplicate test name 'kneser_ney: fewer than two tokens raise ValueError' in "
        f"{scratch.hidden}, lines {first} and {first + last.count(chr(10)) + 2}"
    ]


def test_a_suite_that_reads_a_default_instead_of_calling_the_function_is_caught(scratch):
    # an author checked a default with inspect.signature: that test's outcome then depends on
    # code it never runs, and check-stage's reuse would take the reference's output for it
    helper = (
        "def _default(fn, name):\n    import inspect\n\n    return inspect.signature(fn).parameters[name].default\n"
    )
    _replace(scratch.hidden, "suite = Suite(public=False)\n", "suite = Suite(public=False)\n\n\n" + helper)
    assert static_problems(scratch) == [
        "[tests depend only on what they call] hidden.py reads code without running it (signature(): a test would "
        "depend on a function it never calls"
    ]


def test_a_change_that_makes_a_figure_of_the_readme_false_is_caught(scratch):
    # one more mistake in the catalogue and one more line in a graded function's reference
    _replace(scratch.mistakes, "MISTAKES = [\n", "MISTAKES = [\n" + _first_variant(scratch.mistakes, "2"))
    _replace(
        scratch.reference,
        "    n_train = int(len(data) * (1 - val_fraction))\n",
        "    n_train = int(len(data) * (1 - val_fraction))\n    n_train = min(n_train, len(data))\n",
    )
    figures = [p for p in static_problems(scratch) if p.startswith("[README's figures current]")]
    total = sum(len(catalogue(s)[0]) for s in all_stages()) + 1
    assert figures == [
        f"[README's figures current] README.md says {total - 1} catalogued mistakes in all; the course has {total}: "
        f"write {total}",
        "[README's figures current] README.md's table of what each stage asks has '| `01_tokenisation` | 7 | 90 | 2 "
        "| 3.5 to 5 hours |' for 01_tokenisation; as measured: '| `01_tokenisation` | 7 | 91 | 2 | 3.5 to 5 hours |'"
        " (python benchmarks/stage_load.py prints the table)",
    ]


def _first_variant(mistakes: Path, suffix: str) -> str:
    """The catalogue's first mistake, written again under another name."""
    text = mistakes.read_text(encoding="utf-8")
    start = text.index("    Variant(", text.index("MISTAKES = ["))
    end = text.index("\n    ),\n", start) + len("\n    ),\n")
    first = text[start:end]
    name = re.search(r'"build_vocab",\n        "([^"]+)"', first)[1]
    return first.replace(f'"{name}"', f'"{name} ({suffix})"', 1)


def test_an_introduction_cut_to_its_title_is_caught(scratch):
    text = scratch.source.read_text(encoding="utf-8")
    title = text.splitlines()[0]
    scratch.source.write_text(title + "\n\n" + text[text.index("```python harness") :], encoding="utf-8")
    words = len(title.split())
    assert [p for p in static_problems(scratch) if p.startswith("[notebook opens")] == [
        f"[notebook opens with its introduction] the text before the harness has {words} words: open with at "
        "least 60 (what the stage is about), which a preview or an export shows first"
    ]


def test_a_line_of_a_reference_body_in_the_student_notebook_is_caught(scratch):
    # an author's demonstration, meant to show the vocabulary, built it the reference's way
    # (07's harness once held `activation="gelu",` of the reference GPT, in a test helper's signature)
    notebook = scratch.folder / "notebook.md"
    _replace(notebook, "```python demo\n", "```python demo\nstoi = {ch: i for i, ch in enumerate(chars)}\n")
    assert (
        "[release keeps the answers] the student notebook holds `stoi = {ch: i for i, ch in enumerate(chars)}`, a line of the reference's build_vocab: students read the answer"
        in static_problems(scratch)
    )


def test_a_hidden_test_s_name_in_the_student_notebook_is_caught(scratch):
    # the text promised what a hidden test checks, in its own words
    _replace(
        scratch.source,
        "```python demo\n",
        "We will try a passage with capitals, punctuation and newlines.\n\n```python demo\n",
    )
    assert [p for p in static_problems(scratch) if not p.startswith("[release up to date]")] == [
        "[release keeps the answers] the student notebook holds 'a passage with capitals, punctuation and newlines', "
        "the name of a hidden test: students learn what it checks"
    ]


def test_a_rubric_line_in_the_text_and_a_fifth_written_question_are_caught(scratch):
    rubric = "- 1 point: the validation perplexity therefore comes out *lower* (better) than the model"
    _replace(scratch.source, "```python demo\n", rubric + "\n\n```python demo\n")
    text = scratch.source.read_text(encoding="utf-8")
    written = text[text.index("```written split 2") : text.index("```", text.index("<!-- rubric -->"))] + "```\n"
    extra = "".join(written.replace("split 2", f"split{n} 2") + "\n" for n in range(3))
    scratch.source.write_text(text + "\n" + extra, encoding="utf-8")
    problems = [p for p in static_problems(scratch) if p.startswith("[questions complete]")]
    assert problems == ["[questions complete] 5 written questions: a stage asks 2 to 4"]
    # the rule that reads the release runs once the others hold
    scratch.source.write_text(text, encoding="utf-8")
    assert [p for p in static_problems(scratch) if not p.startswith("[release up to date]")] == [
        f"[release keeps the answers] the student notebook holds `{rubric}`, a line of the rubric of written "
        "question split"
    ]


def test_a_line_of_a_withheld_earlier_answer_in_the_student_notebook_is_caught(tmp_path):
    # a 05 demonstration built its mask the way 04's answer does, while 05 withholds 04's answers
    root = tmp_path / "assignments"  # the whole course: 05's notebook is built with 04's answers withheld
    shutil.copytree(ROOT / "assignments", root, ignore=shutil.ignore_patterns("__pycache__"))
    folder = root / "05_multihead"
    line = "return torch.ones(T, T, dtype=torch.bool, device=device).triu(diagonal=1)"
    _replace(
        folder / "notebook.md", "```python demo\n", f"```python demo\ndef upper(T, device=None):\n    {line}\n\n\n"
    )
    problems = [p for p in static_problems(get_stage("05", root=folder.parent)) if "[release keeps the answers]" in p]
    assert problems == [
        f"[release keeps the answers] the student notebook holds `{line}`, a line of the earlier answer "
        "masking.causal_mask, which it withholds"
    ]


def test_a_return_dtype_stated_without_a_dtype_clause_is_caught(scratch):
    # an author stated `torch.long` for a new question's result, tested values with equal(dtype=None)
    # and wrote no dtype clause: a student returning int32 or float earned full marks
    spec = scratch.folder.parent / "SPEC.md"
    spec.write_text((ROOT / "assignments" / "SPEC.md").read_text(encoding="utf-8"), encoding="utf-8")
    _replace(
        spec,
        "`decode(encode(s, stoi), itos) == s`.",
        "`decode(encode(s, stoi), itos) == s`. It returns a `torch.long` tensor.",
    )
    assert static_problems(scratch) == [
        "[stated dtypes tested] question encode_decode: SPEC.md § 01_tokenisation states torch.long for what it "
        "returns, but no clause of encode_decode whose id starts with dtype cites a test: add a test "
        "(check=dtypes()) and a `dtype` clause citing it"
    ]
    # get_batch's docstring says "both LongTensors": its clause `dtype` cites the tests that check it
    clauses = scratch.folder / "clauses.md"
    _replace(clauses, "| dtype | `x` and `y` are long", "| long | `x` and `y` are long")
    problems = [p for p in static_problems(scratch) if p.startswith("[stated dtypes tested]")]
    assert len(problems) == 2 and problems[1].startswith(
        "[stated dtypes tested] question get_batch: the docstring of get_batch states LongTensors for what it returns"
    ), problems


def test_an_exception_a_docstring_names_and_the_specification_does_not_is_caught(scratch):
    # an author dropped train_val_split's ValueError from SPEC.md while its docstring still tells
    # students it raises: the contract no longer says what the notebook does
    spec = scratch.folder.parent / "SPEC.md"
    spec.write_text((ROOT / "assignments" / "SPEC.md").read_text(encoding="utf-8"), encoding="utf-8")
    _replace(spec, "(no\n  shuffling). A `val_fraction` outside `[0, 1)` raises `ValueError`.", "(no\n  shuffling).")
    assert static_problems(scratch) == [
        "[stated exceptions specified] question train_val_split: the docstring of train_val_split names "
        "ValueError, which its item in SPEC.md § 01_tokenisation does not: say there when train_val_split raises it"
    ]


def test_a_typo_in_a_check_cell_is_caught(scratch):
    _replace(scratch.source, "```python check build_vocab", "```python check build_vocabb")
    problems = static_problems(scratch)
    assert any("`check build_vocabb` names no question" in p for p in problems), problems
    assert any("question build_vocab has no check cell" in p for p in problems), problems
    assert not any("[release up to date]" in p for p in problems), problems  # a broken stage may not build


def test_a_missing_or_misspelt_catalogue_is_an_error_not_an_empty_one(scratch):
    _replace(scratch.mistakes, "MISTAKES = [", "MISTAKE = [")
    assert any("must define MISTAKES" in p for p in static_problems(scratch))
    scratch.mistakes.unlink()
    assert static_problems(scratch) == [f"[files] {scratch.folder} has no mistakes.py"]


def test_too_few_mistakes_for_a_question_are_caught(scratch):
    text = scratch.mistakes.read_text(encoding="utf-8")
    start = text.index('    Variant(\n        "build_vocab",\n        "ids start at 1"')
    end = text.index('    Variant(\n        "build_vocab",\n        "maps returned in the wrong order"')
    scratch.mistakes.write_text(text[:start] + text[end:], encoding="utf-8")
    assert any("question build_vocab has 3 catalogued mistakes; at least 4" in p for p in static_problems(scratch))


@pytest.mark.parametrize(
    "change,expected",
    [
        ("suite = Suite(public=True)", "suite = Suite(public=True)\nNOTE = '''pasted'''"),
        (
            "from autograder.kit import ",
            "def _later():\n    from autograder.kit import equal\n\n\nfrom autograder.kit import ",
        ),
        ("suite = Suite(public=True)", "suite = Suite(public=True)\n\n\ndef run_public(*args):\n    return None"),
    ],
)
def test_a_public_suite_that_cannot_be_pasted_is_caught(scratch, change, expected):
    text = scratch.public.read_text(encoding="utf-8")
    scratch.public.write_text(text.replace(change, expected, 1), encoding="utf-8")
    problems = static_problems(scratch)
    assert any(word in p for p in problems for word in ("three single quotes", "at the top", "defines run_public")), (
        problems
    )


def test_a_kit_import_over_several_lines_is_pasted(scratch):
    text = scratch.public.read_text(encoding="utf-8")
    line = next(line for line in text.splitlines() if line.startswith("from autograder.kit import "))
    names = line[len("from autograder.kit import ") :].split(", ")
    scratch.public.write_text(text.replace(line, "from autograder.kit import (\n    " + ",\n    ".join(names) + ",\n)"))
    assert static_problems(scratch) == []
    assert "from autograder" not in harness_module(scratch)


def test_a_hidden_helper_copied_from_the_public_suite_is_caught(scratch):
    """A renamed copy with a docstring of its own is still a copy; a helper that differs is not."""
    copy = (
        "\n\ndef _model_fitted(ns, ids, *args, **kwargs):\n"
        '    """Fitted."""\n'
        "    lm = ns.NGramLM(*args, **kwargs)\n"
        "    lm.fit(ids)\n"
        "    return lm\n"
    )
    with scratch.hidden.open("a", encoding="utf-8") as handle:
        handle.write(copy + copy.replace("_model_fitted", "_other").replace("lm.fit(ids)", "lm.fit(ids[1:])"))
    assert [p for p in static_problems(scratch) if "repeats" in p] == [
        "[hidden suite repeats no public helper] hidden.py: _model_fitted repeats public.py: _fitted "
        "(import it: from public import _fitted)"
    ]


def test_a_docstring_example_that_is_wrong_is_caught():
    module = types.ModuleType("scratch_reference")
    exec('def double(x):\n    """Twice x.\n\n    >>> double(2)\n    5\n    """\n    return 2 * x\n', module.__dict__)
    module.double.__module__ = module.__name__
    assert doctest_problems(module) == ["docstring example of scratch_reference.double fails (1 of 1 lines)"]


def test_the_graded_check_catches_a_mistake_that_earns_full_marks_or_costs_elsewhere(scratch, tmp_path):
    _replace(
        scratch.mistakes,
        "MISTAKES = [",
        """MISTAKES = [
    Variant("build_vocab", "a correct answer filed as a mistake", {"build_vocab": \'\'\'
        def build_vocab(text):
            chars = sorted(set(text))
            return {c: i for i, c in enumerate(chars)}, dict(enumerate(chars))
    \'\'\'}),
    Variant("encode_decode", "breaks build_vocab too", {"encode": "def encode(text, stoi):\\n    raise ValueError('no')", "build_vocab": "def build_vocab(text):\\n    return {}, {}"}),
""",
    )
    _replace(
        scratch.mistakes,
        "ALTERNATIVES = [",
        """ALTERNATIVES = [
    Variant("ngram", "not an alternative at all", {"NGramLM": "class NGramLM:\\n    pass"}),
""",
    )
    grades = CatalogueGrades(scratch, tmp_path / "graded")
    report = lint_stage(scratch, grades=grades)
    assert not report.ok and report.graded
    text = "\n".join(report.problems)
    assert "mistake 'build_vocab-a-correct-answer-filed-as-a-mistake' earns full marks on build_vocab" in text
    assert "mistake 'encode_decode-breaks-build-vocab-too' also loses points on build_vocab" in text
    assert "alternative 'ngram-not-an-alternative-at-all' fails ngram:" in text


def test_docstring_examples_outside_the_stages_run():
    """The references' examples run in every stage's check; these are the package's and the corpora's."""
    import autograder
    import solutions.data

    modules = [solutions.data] + [
        importlib.import_module(i.name) for i in pkgutil.walk_packages(autograder.__path__, "autograder.")
    ]
    examples = 0
    for module in modules:
        assert doctest_problems(module) == [], module.__name__
        examples += sum(len(t.examples) for t in doctest.DocTestFinder().find(module))
    assert examples >= 3


def test_a_failing_reference_is_one_problem_with_each_failures_message():
    # an author who broke one test of the reference met 68 problems: the first named the failed
    # test, and every variant then "failed" it too; the later graded rules now wait for the reference
    from autograder.authoring.lint import LintReport, run_rules
    from autograder.authoring.rules import RULES
    from autograder.engine.judge import TestResult

    def graded(*results):
        return types.SimpleNamespace(results=list(results), total=sum(r.score for r in results))

    failed = TestResult("q: sums", "q", "sums", True, 0.0, 1.0, "values differ at index 2:\n  expected 3, got 4")
    passed = TestResult("q: shape", "q", "shape", True, 1.0, 1.0, "")
    empty = TestResult("q: shape", "q", "shape", True, 0.0, 1.0, "not implemented")
    grades = types.SimpleNamespace(
        by_name={"reference": graded(failed, passed), "empty": graded(empty)},
        maxima={"q": 2.0},
        scores=lambda name: {"q": 1.0},
    )
    report = LintReport("99_fake")
    assert not run_rules([r for r in RULES if r.graded], grades, report)
    assert report.broken == {
        "reference full": [
            "the reference does not earn full marks: it fails q: sums (values differ at index 2: expected 3, got 4)."
            " The other graded rules compare every variant with the reference, so they run once it earns full marks"
        ]
    }


def test_a_clause_asking_for_an_exception_or_dtype_the_question_never_names_is_refused(tmp_path):
    from autograder.authoring.static_rules import clauses_stated

    (tmp_path / "clauses.md").write_text(
        "## f\n\n| id | clause | tests |\n|---|---|---|\n"
        "| empty | an empty list raises `ValueError` | `f: empty` |\n"
        "| dtype | returns float32 | `f: dtype` |\n"
        "| long | returns a torch.long tensor | `f: long` |\n",
        encoding="utf-8",
    )

    def cell(text, tags=()):
        return {"source": text, "metadata": {"tags": list(tags)}}

    prose = "`f(xs)` returns an int64 tensor; an empty `xs` raises `TypeError`. Returns float32 values."
    subject = types.SimpleNamespace(
        stage=types.SimpleNamespace(folder=tmp_path),
        student_cells=[cell("ValueError is stated for g only"), cell('check("g")', ["gptcourse:check"]), cell(prose)]
        + [cell('check("f")', ["gptcourse:check"])],
    )
    assert clauses_stated(subject) == [
        "question f, clause 'empty' asks for ValueError, which students never read for f (its prose, stubs and"
        " docstrings): state it there, or the clause asks more than the notebook"
    ]


def test_the_last_rules_report_side_by_side_and_wait_for_the_others():
    # a clause students never read and a stale release, found together: neither hides the other
    from autograder.authoring.lint import LintReport, run_rules
    from autograder.authoring.rules import Rule

    def finding(text):
        return lambda subject: [text] if text else []

    lasts = [
        Rule("clauses stated to students", finding("a clause asks for KeyError"), last=True),
        Rule("release up to date", finding("the release is stale"), last=True),
    ]
    report = LintReport("99_fake")
    run_rules(lasts, None, report)
    assert report.broken == {
        "clauses stated to students": ["a clause asks for KeyError"],
        "release up to date": ["the release is stale"],
    }
    report = LintReport("99_fake")  # a rule that is not last broken: the last rules do not run
    run_rules([Rule("names exist", finding("no such stub")), *lasts], None, report)
    assert report.broken == {"names exist": ["no such stub"]}


def _sizes_problems(folder: Path, old: str, new: str) -> list[str]:
    """check-stage's "probe sizes apart" problems of a copy of stage 05 with one change to its hidden suite."""
    shutil.copytree(get_stage("05").folder, folder, ignore=shutil.ignore_patterns("__pycache__"))
    _replace(folder / "hidden.py", old, new)
    return [p for p in static_problems(get_stage("05", root=folder.parent)) if p.startswith("[probe sizes apart]")]


def test_a_probe_whose_sizes_repeat_is_caught(tmp_path):
    # an author changed 05's heads probes to T = 6, the width of a head (C / H = 30 / 5): a
    # split_heads that swaps T and D then reshapes into the right shape and can pass by luck
    problems = _sizes_problems(tmp_path / "a" / "05_multihead", "B, T, C, H = 4, 7, 30, 5", "B, T, C, H = 4, 6, 30, 5")
    assert problems[0] == (
        "[probe sizes apart] heads: split_heads on a 4 x 7 x 30 input with 5 heads, every value checked: "
        "split_heads is called with sizes (4, 6, 30, 5, 6) (SIZES_APART), where 6 repeats: make every size "
        "differ, so that no transpose or reshape that mixes them passes by luck"
    )
    assert len(problems) == 4 and all("where 6 repeats" in p for p in problems)
    # a declaration gone stale is named
    problems = _sizes_problems(tmp_path / "b" / "05_multihead", '"merge_heads": lambda x', '"merge_head": lambda x')
    assert problems == ["[probe sizes apart] SIZES_APART names merge_head, which the notebook does not define"]
    # and so is a name the notebook defines but no probe calls (the rule would hold by default)
    problems = _sizes_problems(
        tmp_path / "c" / "05_multihead", "SIZES_APART = {", "SIZES_APART = {'padding_mask': len,"
    )
    assert problems == ["[probe sizes apart] no probe calls padding_mask, which SIZES_APART names"]


def test_a_demo_cell_that_raises_and_a_check_cell_that_fails_are_caught(scratch):
    # grading never runs demonstrations: an undefined name in one passes every graded rule, and a
    # demonstration that rebinds a function leaves the reference's grades whole
    _replace(scratch.source, 'print(f"{len(text):,} characters', 'print(f"{len(txt):,} characters')
    _replace(
        scratch.source,
        "```python check train_val_split\n",
        "```python demo\ntrain_val_split = lambda data, val_fraction=0.1: (data, data)\n```\n\n"
        "```python check train_val_split\n",
    )
    rule = get_rule("reference notebook runs")
    assert not rule.static  # --quick does not run it
    problems = apply(rule, Subject(scratch))
    assert len(problems) == 2, problems
    assert problems[0] == (
        "cell 8 [gptcourse:demo] 'text = load_corpus(\"shakespeare\")' raised "
        "NameError: name 'txt' is not defined (line 3)"
    )
    assert problems[1].startswith(
        "cell 11 [gptcourse:check] 'check(\"train_val_split\")': its public tests did not all pass; its report "
        "begins:\n    train_val_split: 6 of 6 public tests failed.\n      [FAIL] ten items, val_fraction=0.2\n"
        "             result[0]: expected length 8, got 10\n"
    )


@pytest.mark.parametrize("ci", [False, True], ids=["terminal", "ci"])
def test_a_stage_test_that_fails_is_named_with_its_output(scratch, tmp_path, monkeypatch, ci):
    # on a CI machine (CI set) pytest prints an assertion's full diff after the assertion, so
    # what was raised must not depend on the last lines of the output
    if ci:
        monkeypatch.setenv("CI", "true")
    else:
        monkeypatch.delenv("CI", raising=False)
    rule = get_rule("the stage's own tests pass")
    assert not rule.static
    assert apply(rule, Subject(scratch)) == []  # 01 has no test file of its own: nothing to run
    folder = tmp_path / "other" / "04_masking"
    shutil.copytree(get_stage("04").folder, folder, ignore=shutil.ignore_patterns("__pycache__"))
    _replace(
        folder / "test_masking.py", "assert causal_mask(0).shape == (0, 0)", "assert causal_mask(0).shape == (1, 1)"
    )
    problems = apply(rule, Subject(get_stage("04", root=folder.parent)))
    assert len(problems) == 1, problems
    head, output = problems[0].split("\n", 1)
    assert head.endswith("test_masking.py::test_causal_mask_values failed: assert torch.Size([0, 0]) == (1, 1)"), head
    assert output.rstrip().endswith("test_masking.py:38: AssertionError"), output


def test_a_copy_of_a_graded_function_in_a_suite_is_caught(scratch):
    # a hidden helper that computes the answer itself sits in the grading child while the
    # student's code runs: a copy of the reference's get_batch under another name
    rule = get_rule("no suite holds the reference")
    assert not rule.static
    helper = reference_source("tokenisation", "get_batch").replace("def get_batch(", "def _batch_of(", 1)
    _replace(scratch.hidden, "suite = Suite(public=False)\n", "suite = Suite(public=False)\n\n\n" + helper + "\n\n")
    problems = apply(rule, Subject(scratch))
    found = [p.split(": ", 1)[1] for p in problems]  # by its statements, and by what it returns (draws aside)
    assert len(found) == 2 and found[0] == (
        "_batch_of holds 3 of the 3 statements of the reference get_batch: a suite must not compute the answer"
    )
    assert re.fullmatch(r"_batch_of reproduces the reference get_batch on \d+ of \d+ recorded calls: .*", found[1])


def test_a_stated_number_its_measurement_does_not_give_is_caught(scratch):
    # the range an author gave a claim no longer holds what the code measures
    rule = get_rule("stated numbers true")
    assert not rule.static
    _replace(scratch.folder / "claims.py", "low=95, high=105", "low=110, high=120")
    assert apply(rule, Subject(scratch)) == [
        "the notebook says 'about 100 distinct symbols)', but the measurement gives "
        f"{len(set(load_corpus('default')))} (its words allow 110 to 120)"
    ]


def test_a_tolerance_only_the_reference_fits_and_an_exact_check_on_floats_are_caught(tmp_path):
    # an author tightened a tolerance to what the reference alone reaches, and judged a float
    # output exactly: a correct solution computing in another order (or float64) fails both
    rule = get_rule("tolerances keep a margin")
    assert not rule.static
    folder = tmp_path / "other" / "05_multihead"
    shutil.copytree(get_stage("05").folder, folder, ignore=shutil.ignore_patterns("__pycache__"))
    hidden = folder / "hidden.py"
    _replace(
        hidden,
        "check=close(rtol=1e-4, atol=1e-5, dtype=None, hints=_UNMASKED_HINTS)",
        "check=close(rtol=0.0, atol=1e-9, dtype=None, hints=_UNMASKED_HINTS)",
    )
    _replace(
        hidden,
        "_PLAIN_OUT,\n    points=2,\n    check=close(rtol=1e-4, atol=1e-5, dtype=None),",
        "_PLAIN_OUT,\n    points=2,\n    check=equal(dtype=None),",
    )
    problems = apply(rule, Subject(get_stage("05", root=folder.parent)))
    weights = "mha: fixed weights, 4 heads of width 6, no mask: per-head attention weights (rtol 0, atol 1e-09) under "
    tight = [p for p in problems if p.startswith(weights)]
    assert tight and all(p.endswith("x where 2x is the least: loosen the tolerance") for p in tight), problems
    exact = "mha: fixed weights, 4 heads of width 6, no mask: output under float64: an exact-match test whose result"
    assert exact + " changes (judge it with a tolerance)" in problems
    assert len(problems) == len(tight) + 1, problems


def test_a_rubric_figure_no_claim_measures_is_caught(scratch):
    # an author reported a reference run in a rubric and measured only part of it
    rule = get_rule("rubric figures measured")
    assert apply(rule, Subject(scratch)) == []
    _replace(
        scratch.source,
        "whose estimates are noisy.",
        "whose estimates are noisy (the 5-gram's validation loss is 2.43, $\\ln 11.4 = 2.43$).",
    )
    assert apply(rule, Subject(scratch)) == [
        "the rubric of written question context states 2.43 with no claim that measures it: tie it to a measurement"
        " in claims.py (a Claim whose words hold it), or write a formula as math ($...$)"
    ]


def test_an_expected_value_in_the_student_notebook_is_caught(scratch):
    # an author printed, in the text, what the reference's encode gives on a hidden test's input
    value = "[34, 24, 21, 21, 1, 33, 35, 28, 28, 21, 32, 3, 33, 1, 20, 17, 38]"
    _replace(scratch.source, "```python demo\n", f"For example: {value}.\n\n```python demo\n")
    rule = get_rule("release holds no expected value")
    graded = types.SimpleNamespace(stage=scratch, fixtures=stage_tests(get_stage("01")).fixtures)  # the project's
    assert apply(rule, graded) == [
        "the release holds the expected value of 'encode_decode: encode gives the ids of stoi, as a list' "
        f"({value[:57]}...)"
    ]
