"""Grader integrity, held for every stage: no verdict where the student's code runs.

- The static rule (``autograder.authoring.verdicts``, part of ``gptcourse check-stage``):
  no probe, nor a suite helper it reaches, compares student-derived values. Shown on
  snippets it must refuse and allow, then applied to every stage's two suites.
- The judge refuses a boolean anywhere in a probe's output (``runtime.boolean_in``), as
  a fault of the test that ``TestResult.fault`` carries to ``check-stage`` and ``grade``.
- An output holding a tensor subclass (or an object the codec does not carry) fails its
  test before the check is asked anything (``runtime.refused_in``), in the parent and in
  the notebook alike.

The hostile catalogue (tests/test_hostile.py) shows that the attacks on verdicts gain
nothing; tests/test_reachable.py that no reference implementation is within reach.
"""

import textwrap

import pytest
import torch

from autograder.authoring.verdicts import verdict_problems
from autograder.course import all_stages
from autograder.engine import codec
from autograder.engine.judge import judge
from autograder.engine.runner import Outcome
from autograder.engine.suites import StageTests
from autograder.kit.cases import Suite
from autograder.kit.checks import equal
from autograder.kit.runtime import CheckFault, boolean_in, judge_output, refused_in

STAGES = all_stages()


def _suite(body: str) -> str:
    return (
        "import torch\nfrom autograder.kit import Suite, equal, randn\n\nsuite = Suite(public=False)\n_X = torch.zeros(3)\n\n"
        + textwrap.dedent(body)
    )


REFUSED = {
    "torch.equal on what the student changed": """
        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            x = _X.clone()
            ns.f(x)
            return torch.equal(x, _X)
        """,
    "== on an output": """
        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            return ns.f(1) == 3
        """,
    "is between two parameters (tied weights)": """
        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            m = ns.Model()
            return {"tied": m.head.weight is m.emb.weight}
        """,
    "a verdict laundered through a condition": """
        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            out = ns.f(randn(2, seed=1))
            return "same" if out.allclose(randn(2, seed=1)) else "different"
        """,
    ".all() on a comparison": """
        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            a, b = ns.f(), ns.g()
            return int((a == b).all())
        """,
    "isinstance of an output": """
        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            return [isinstance(ns.f(), torch.Tensor)]
        """,
    "a helper that compares what the probe hands it": """
        def _same(a, b):
            return {"same": torch.allclose(a, b)}

        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            return _same(ns.f(), _X)
        """,
    "a helper reached through another helper": """
        def _inner(value):
            return value != 0

        def _outer(value):
            return [_inner(value)]

        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            return _outer(ns.f())
        """,
    "a method of a class the student's code calls": """
        class _Spy:
            def __call__(self, x):
                self.seen = x.shape == (2, 3)
                return x

        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            spy = _Spy()
            ns.f(spy)
            return spy.seen
        """,
    "an object the student's code was handed": """
        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            words = {"a": 1}
            ns.merge(words)
            return list(words.items()) == [("a", 1)]
        """,
    "a list the outputs were appended to": """
        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            outs = []
            for seed in range(2):
                outs.append(ns.f(seed))
            return outs[0] in outs[1:]
        """,
    "a stand-in handed to the student's code": """
        def _stand_in(x, n):
            if x.dim() != 3:
                raise ValueError("x must be 3-D")
            return x

        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            return ns.f(randn(2, 3, 4, seed=0), helper=_stand_in)
        """,
}

ALLOWED = {
    "raw outputs, before and after": """
        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            x = _X.clone()
            out = ns.f(x)
            return {"before": _X.clone(), "after": x, "out": out}
        """,
    "a mask built from the test's own inputs": """
        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            mask = torch.rand(3, 4, generator=torch.Generator().manual_seed(0)) < 0.5
            return ns.attention(randn(3, 4, seed=1), mask)
        """,
    "identity as data_ptr values": """
        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            m = ns.Model()
            return [m.head.weight.data_ptr(), m.emb.weight.data_ptr()]
        """,
    "state as a word and a missing bias as None": """
        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            m = ns.Model().eval()
            return {"mode": "train" if m.training else "eval", "bias": m.head.bias}
        """,
    "is None steering a helper": """
        def _loss(logits, targets=None):
            if targets is None:
                return None
            return torch.nn.functional.cross_entropy(logits, targets)

        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            return _loss(ns.f(), None)
        """,
    "a helper called with the test's constants only": """
        def _text(size, length):
            return "ab" * size if size < length else "a"

        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            return ns.f(_text(3, 5))
        """,
    "comparisons in a check, which runs in the parent": """
        def _problem(got):
            return None if got == 3 and torch.equal(torch.zeros(1), torch.zeros(1)) else "wrong"

        @suite.case("q", "t", points=1, check=equal())
        def _(ns):
            return ns.f()
        """,
}


@pytest.mark.parametrize("name", REFUSED)
def test_the_rule_refuses_a_comparison_of_student_derived_values(name):
    problems = verdict_problems(_suite(REFUSED[name]), "hidden.py")
    assert problems and all("compares student-derived values" in p for p in problems), problems


@pytest.mark.parametrize("name", ALLOWED)
def test_the_rule_allows_raw_outputs_and_comparisons_of_the_tests_own_values(name):
    assert verdict_problems(_suite(ALLOWED[name]), "hidden.py") == []


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.id)
def test_no_probe_of_any_stage_computes_a_verdict(stage):
    problems = [
        p
        for path in (stage.public, stage.hidden)
        for p in verdict_problems(path.read_text(encoding="utf-8"), f"{stage.id}/{path.name}")
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "value,where",
    [
        (True, "output"),
        ({"same": False}, "output['same']"),
        ([1, (2, torch.tensor(True))], "output[1][1]"),
        ({True: 1}, "output (a key)"),
    ],
)
def test_a_boolean_anywhere_in_an_output_is_found(value, where):
    assert boolean_in(value) == where


@pytest.mark.parametrize(
    "value", [1, 0.5, "train", None, torch.tensor([True, False]), torch.zeros((), dtype=torch.long), {"mode": "eval"}]
)
def test_raw_outputs_hold_no_boolean(value):
    assert boolean_in(value) is None


def test_the_judge_refuses_a_boolean_as_a_fault_of_the_test():
    suite = Suite(public=False)

    @suite.case("q", "a probe that returns a verdict", points=2, check=equal(), expected=True)
    def _(ns):
        return ns.f() == 3

    @suite.case("q", "a raw probe", points=1, check=equal(), expected=3)
    def _(ns):
        return ns.f()

    verdict, raw = suite.cases
    with pytest.raises(CheckFault, match="holds a boolean"):
        judge_output(verdict, True, True)
    tests = StageTests("scratch", (), tuple(suite.cases))
    results = judge(tests, Outcome(values={verdict.key: True, raw.key: 3}))
    assert [r.score for r in results] == [0.0, 1.0]
    assert "holds a boolean" in results[0].fault and results[1].fault is None


class _Sneaky(torch.Tensor):
    def __eq__(self, other):
        return True


def _never_asked(got, expected, reveal=True):
    raise AssertionError("the check was asked to judge a refused output")


@pytest.mark.parametrize(
    "got,words",
    [
        (
            codec.loads(codec.dumps((torch.zeros(2), torch.zeros(2).as_subclass(_Sneaky)))),
            "output[1] is an instance of test_integrity._Sneaky, a subclass of torch.Tensor",
        ),
        (
            {"w": torch.nn.Parameter(torch.zeros(2))},
            "output['w'] is an instance of Parameter, a subclass of torch.Tensor",
        ),
        (
            codec.loads(codec.dumps([torch.zeros(2).numpy()])),
            "output[0] is an object of type numpy.ndarray, which the grader does not accept",
        ),
    ],
)
def test_a_tensor_subclass_or_a_foreign_object_fails_before_the_check(got, words):
    suite = Suite(public=False)
    suite.case("q", "t", points=1, check=_never_asked)(lambda ns: None)
    verdict = judge_output(suite.cases[0], got, None)
    assert not verdict.passed and verdict.message.startswith(words), verdict.message
    assert refused_in([1, "a", None, torch.zeros(1), {"k": (2.0,)}]) is None


def test_a_function_that_always_raises_earns_nothing_from_the_error_tests(tmp_path):
    """Error tests pass for a function that raises on every call; their points count only
    when another test of the question passed (here: none, so the question scores 0)."""
    from support import submission

    from autograder.build.fixtures import stage_tests
    from autograder.channels.local.folder import grade_into_folder
    from autograder.course import get_stage

    raising = {
        "kneser_ney_bigram": "def kneser_ney_bigram(ids, vocab_size, discount=0.75):\n    raise ValueError('no table')"
    }
    path = submission("01_tokenisation", tmp_path, "always-raises", replace=raising)
    graded = grade_into_folder([path], stage_tests(get_stage("01")), tmp_path / "out", progress=False)[0]
    per = {}
    for result in graded.results:
        per[result.qid] = per.get(result.qid, 0.0) + result.score
    assert per["kneser_ney"] == 0
    taken = [
        r for r in graded.results if r.qid == "kneser_ney" and "but no test of the work of kneser_ney did" in r.message
    ]
    assert taken and all(r.score == 0 for r in taken)


def test_the_public_tests_answers_copied_from_the_notebook_earn_nothing_without_hidden_work(tmp_path):
    """An empty notebook whose one cell answers every public test with the answer the notebook
    prints for it (here by replacing the engine's run_probe): its public points count only
    once a hidden test of the question's work passes, and none does."""
    import attacks
    from support import submission

    from autograder.build.fixtures import stage_tests
    from autograder.channels.local.folder import grade_into_folder
    from autograder.course import get_stage
    from autograder.engine.judge import PUBLIC_UNPROVEN

    path = submission("03", tmp_path, "lookup", extra_cells=[attacks.PUBLIC_LOOKUP_CELL], base="student")
    graded = grade_into_folder([path], stage_tests(get_stage("03")), tmp_path / "out", progress=False)[0]
    taken = [r for r in graded.results if r.public and r.withheld and r.message.startswith(PUBLIC_UNPROVEN[:40])]
    assert sum(r.score for r in graded.results) == 0
    assert len({r.qid for r in taken}) == 4  # every question had public tests answered from the notebook


def test_copied_public_answers_earn_nothing_beside_code_that_does_another_part_of_the_question(tmp_path):
    """The cheater audit's F3: code whose encode works (a hidden test of encode_decode passes) but
    whose decode refuses a tensor, and which copies the notebook's answer for the public test of
    decoding a LongTensor, earns nothing for that test: no hidden test of the same clauses
    (clauses.md) passed. A question-wide rule paid it."""
    import attacks
    from support import submission

    from autograder.authoring.catalogue import catalogue
    from autograder.build.fixtures import stage_tests
    from autograder.course import get_stage
    from autograder.engine.pipeline import grade_batch
    from autograder.engine.runner import Limits

    (mistake,) = [v for v in catalogue("01")[0] if v.slug == "encode_decode-decode-cannot-take-a-tensor"]
    tests = stage_tests(get_stage("01"))
    copied = "encode_decode: decode accepts a 1-D LongTensor"
    paths = [
        submission("01", tmp_path, "honest", mistake.cells),
        submission("01", tmp_path, "copies", mistake.cells, extra_cells=[attacks.PUBLIC_LOOKUP_CELL]),
    ]
    honest, copies = (
        {r.key: r for r in g.results} for g in grade_batch(paths, ["honest", "copies"], tests, Limits(), progress=False)
    )
    assert not honest[copied].passed and not honest[copied].awaits_hidden  # the honest code fails the test
    assert copies[copied].awaits_hidden and copies[copied].score == 0  # the copied answer passes it, for nothing
    assert "no hidden test of what it checks did" in copies[copied].message
    assert not any(honest[key].passed for key in tests.partners[copied])
    assert any(r.passed and not r.public and r.qid == "encode_decode" for r in honest.values())  # encode works
    assert sum(r.score for r in copies.values()) <= sum(r.score for r in honest.values())
