"""Grader precision (issues 25 and 29): comparisons that report and never raise, a dtype slip
charged to its own clause once, failures grouped by their root, no points for doing
nothing, redaction that leaves a student's own code alone, and the rules of ``gptcourse
check-stage`` that prove it stage by stage (each shown failing on a small case here;
every stage is held to them in ``test_rules.py``).
"""

import math
from types import SimpleNamespace

import pytest
import torch
from support import submission

from autograder.authoring.auto_variants import auto_variants, question_stubs
from autograder.authoring.catalogue import Variant, catalogue
from autograder.authoring.clauses import clause_problems, uncited_tests
from autograder.authoring.graded_rules import (
    building_earns_only_structure,
    dtype_slips_cost_only_their_clause,
    empty_answers_cost_their_own_question,
    every_clause_has_a_mistake,
    noops_earn_nothing,
)
from autograder.authoring.slips import _gptcourse_noop, _gptcourse_recast
from autograder.build.clauses import Clause, clause_rows, proving_partners
from autograder.build.fixtures import stage_tests
from autograder.course import get_stage
from autograder.engine.judge import TestResult as Result
from autograder.engine.judge import follows_from, judge
from autograder.engine.pipeline import grade_batch
from autograder.engine.results import explain_failures, gradescope_json
from autograder.engine.runner import Limits, Outcome
from autograder.engine.suites import StageTests
from autograder.kit import Suite, catch, close, close_number, dtypes, equal, near, raises, same_shape, satisfies
from autograder.kit.cases import Namespace, failure_roots, withheld_guards
from autograder.kit.check_cell import run_public
from autograder.kit.runtime import CheckFault, judge_output, run_probe
from autograder.reports.failures import classify

# --- comparisons that report, never raise ---------------------------------------------------------

EXPECTED = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
ODD_OUTPUTS = {
    "float64": EXPECTED.double(),
    "int32": torch.tensor([[1, 2], [3, 4]], dtype=torch.int32),
    "bool": torch.ones(2, 2, dtype=torch.bool),
    "complex": EXPECTED.to(torch.complex64),
    "wrong shape": torch.zeros(3),
    "0-d": torch.tensor(1.0),
    "sparse": EXPECTED.to_sparse(),
    "meta": torch.empty(2, 2, device="meta"),
    "parameter": torch.nn.Parameter(EXPECTED.clone()),
    "None": None,
    "list": [[1.0, 2.0], [3.0, 4.0]],
    "string": "1 2 3 4",
    "nested": {"a": (EXPECTED, None)},
}
CHECKS = {
    "close": close(1e-5, 1e-6),
    "close values only": close(1e-5, 1e-6, dtype=None),
    "equal": equal(),
    "equal values only": equal(dtype=None),
    "dtypes": dtypes(),
    "close_number": close_number(1e-6, 0),
    "raises": raises("ValueError"),
}


@pytest.mark.parametrize("output", ODD_OUTPUTS, ids=str)
@pytest.mark.parametrize("check", CHECKS, ids=str)
@pytest.mark.parametrize("public", [True, False], ids=["public", "hidden"])
def test_no_kit_comparison_raises_on_any_output(check, output, public):
    verdict = CHECKS[check](ODD_OUTPUTS[output], EXPECTED, public)
    assert verdict.passed in (True, False) and isinstance(verdict.message, str)
    assert same_shape(ODD_OUTPUTS[output], EXPECTED) in (True, False)
    assert near(ODD_OUTPUTS[output], EXPECTED) in (True, False)


def test_a_check_comparing_two_of_the_students_outputs_never_raises_either():
    for check in CHECKS.values():
        for got in ODD_OUTPUTS.values():
            for other in ODD_OUTPUTS.values():
                assert check(got, other, False).passed in (True, False)
                assert near(got, other) in (True, False)


def test_a_dtype_mismatch_names_both_sides_and_values_only_comparisons_pass_it():
    slipped = EXPECTED.double()
    assert close(1e-5, 1e-6)(slipped, EXPECTED).message == "expected dtype torch.float32, got torch.float64"
    assert close(1e-5, 1e-6, dtype=None)(slipped, EXPECTED).passed
    ids = torch.tensor([3, 1], dtype=torch.int32)
    assert equal()(ids, torch.tensor([3, 1])).message.startswith("expected dtype torch.int64, got torch.int32")
    assert equal(dtype=None)(ids, torch.tensor([3, 1])).passed
    assert not equal(dtype=None)(ids, torch.tensor([3, 2])).passed
    assert dtypes()((EXPECTED, slipped), (torch.float32, torch.float32)).message == (
        "result[1]: expected dtype torch.float32, got torch.float64"
    )
    assert dtypes()((EXPECTED, slipped), (EXPECTED, slipped)).passed  # tensors stand for their dtypes
    assert near(slipped, EXPECTED) and not near(slipped, EXPECTED + 1) and not near(None, EXPECTED)


def test_a_check_that_raises_is_the_courses_fault_in_grading_and_in_check():
    suite = Suite(public=True)
    suite.case("q", "values", points=1, check=satisfies(lambda got: "wrong" if got[5] else None))(lambda ns: ns.f())
    case = suite.cases[0]
    with pytest.raises(CheckFault):
        judge_output(case, [1.0], None)
    _, report, points = run_public(suite.cases, "q", {"f": lambda: [1.0]})
    assert "This is a fault of the course, not a verdict on your code" in report and points == 0
    tests = StageTests("x", (), tuple(suite.cases))
    (result,) = judge(tests, Outcome(values={case.key: [1.0]}))
    assert result.fault and "IndexError" in result.fault and "fault of the course" in result.message


# --- one slip, one root ---------------------------------------------------------------------------


def test_failures_with_one_cause_share_one_root():
    roots = failure_roots(
        [
            ("shape", (), False, "raised TypeError: x"),
            ("values", (), False, "raised TypeError: x"),
            ("more values", ("values",), False, "values differ"),
            ("dtype", (), False, "expected dtype torch.float32, got torch.float64"),
            ("passes", (), True, None),
        ]
    )
    assert roots == {"shape": [], "values": ["shape"], "more values": ["shape"], "dtype": []}


def _results(*rows):
    return [
        Result(f"q: {name}", "q", name, public, float(ok), 1.0, "" if ok else message, hint=hint)
        for name, public, ok, message, hint in rows
    ]


def test_feedback_and_results_json_mark_what_follows_from_the_same_mistake():
    results = _results(
        ("a", True, False, "raised KeyError: 'z'", None),
        ("b", True, False, "raised KeyError: 'z'", None),
        ("c", False, False, "values differ", "ids start at 1"),
        ("d", False, False, "other values differ", "ids start at 1"),
        ("e", True, True, "", None),
    )
    assert follows_from(results) == {"q: a": [], "q: b": ["q: a"], "q: c": [], "q: d": ["q: c"]}
    explained = explain_failures(results)
    assert explained["q: b"].startswith('This follows from the failure of "a"')
    assert "(1 later test(s) of q fail because of this one: start here.)" in explained["q: a"]
    doc = gradescope_json(results)
    extra = {t["name"]: t.get("extra_data", {}) for t in doc["tests"]}
    assert extra["q: b"] == {"follows_from": ["q: a"]} and extra["q: d"] == {
        "mistake": "ids start at 1",
        "follows_from": ["q: c"],
    }
    assert "follows_from" not in extra["q: a"] and extra["q: e"] == {}


def test_check_groups_public_failures_with_one_message_under_the_first():
    suite = Suite(public=True)
    for name in ("first", "second", "third"):
        suite.case("q", name, points=1, check=equal(), expected=1)(lambda ns: ns.f())
    _, report, _ = run_public(suite.cases, "q", {"f": lambda: {}["missing"]})
    lines = report.splitlines()
    assert lines[1] == "  [FAIL] first" and "(2 later test(s) fail because of this one: start here)" in report
    assert report.count('follows from the failure of "first"') == 2


# --- points only for doing something --------------------------------------------------------------


def _guarded_suite():
    suite = Suite(public=True)
    suite.case("q", "values", points=2, check=close(1e-6, 1e-6, dtype=None), expected=torch.ones(2))(
        lambda ns: ns.f(torch.ones(2))
    )
    suite.case("q", "the input is not modified", points=1, check=equal(), expected=torch.ones(2), guard=True)(
        lambda ns: _unchanged(ns)
    )
    suite.case("q", "dtype", points=1, check=dtypes(), expected=torch.float32)(lambda ns: ns.f(torch.ones(2)))
    suite.case("q", "raises", points=1, check=raises("ValueError"))(lambda ns: catch(ns.f, None))
    return suite


def _unchanged(ns):
    x = torch.ones(2)
    ns.f(x)
    return x


def _zeros(x):
    if x is None:
        raise ValueError("no input")
    return torch.zeros_like(x)


def _hidden_suite():
    suite = Suite(public=False)
    suite.case(
        "q", "values on another input", points=1, check=close(1e-6, 1e-6, dtype=None), expected=torch.full((3,), 2.0)
    )(lambda ns: ns.f(torch.full((3,), 2.0)))
    return suite


def test_guards_count_only_when_a_test_of_the_work_passes_in_grading_and_in_check():
    suite = _guarded_suite()
    assert [c.is_guard for c in suite.cases] == [False, True, True, True]
    cases = (*suite.cases, *_hidden_suite().cases)
    tests = StageTests("x", (), cases)
    for f, earned in ((_zeros, 0.0), (lambda x: x.clone() if x is not None else _zeros(x), 5.0)):
        values = {c.key: c.probe(SimpleNamespace(f=f)) for c in cases}
        assert sum(r.score for r in judge(tests, Outcome(values=values))) == earned + (earned > 0)
        assert run_public(suite.cases, "q", {"f": f})[2] == earned
    results = judge(tests, Outcome(values={c.key: c.probe(SimpleNamespace(f=_zeros)) for c in cases}))
    withheld = [r for r in results if r.withheld]
    assert [r.name for r in withheld] == ["the input is not modified", "dtype", "raises"]
    assert all(r.message.startswith("this passed, but no test of the work of q did") for r in withheld)
    assert follows_from(results) == {"q: values": [], "q: values on another input": []}  # nothing in a withheld guard
    _, report, _ = run_public(suite.cases, "q", {"f": _zeros})
    assert "start here" not in report and report.count("this passed, but no test of the work of q did") == 3
    assert withheld_guards([("a", "q", True, "guard"), ("b", "q", False, "work")]) == {"a"}


def test_a_test_of_structure_earns_its_points_but_unlocks_no_guard():
    suite = Suite(public=True)
    suite.case("q", "the table", points=1, check=equal(), expected=[2], structure=True)(lambda ns: [ns.f.size])
    suite.case("q", "values", points=2, check=equal(), expected=4)(lambda ns: ns.f(2))
    suite.case("q", "raises", points=1, check=raises("ValueError"))(lambda ns: catch(ns.f, None))
    assert [c.role for c in suite.cases] == ["structure", "work", "guard"]
    hidden = Suite(public=False)  # a public test of structure counts once a hidden one passes too
    hidden.case("q", "the table, again", points=1, check=equal(), expected=[2], structure=True)(lambda ns: [ns.f.size])
    cases = (*suite.cases, *hidden.cases)
    tests = StageTests("x", (), cases)

    def built(x):
        raise ValueError("raises on every call")

    built.size = 2
    runs = {c.key: run_probe(c, Namespace({"f": built})) for c in cases}
    values = {key: got for key, (got, error, _) in runs.items() if error is None}
    errors = {key: error for key, (_, error, _) in runs.items() if error is not None}
    results = judge(tests, Outcome(values=values, errors=errors))
    assert [(r.score, r.withheld) for r in results] == [(1.0, False), (0.0, False), (0.0, True), (1.0, False)]
    assert run_public(suite.cases, "q", {"f": built})[2] == 1.0
    with pytest.raises(ValueError, match="cannot be marked structure=True"):
        suite.case("q", "also raises", points=1, check=raises("ValueError"), structure=True)(lambda ns: catch(ns.f, 0))


EMBEDDING_BUILT = """class TokenPositionEmbedding(nn.Module):
    def __init__(self, vocab_size, embed_dim, max_seq_len):
        super().__init__()
        if vocab_size < 1 or embed_dim < 1 or max_seq_len < 1:
            raise ValueError("bad size")
        self.tok_emb = nn.Embedding(vocab_size, embed_dim)
        self.pos_emb = nn.Embedding(max_seq_len, embed_dim)

    def forward(self, idx):
        raise ValueError("not implemented")
"""


def _two_clause_suites():
    """A question of two parts, each with a public and a hidden test: f(x) doubles x, g(x) negates it."""
    public, hidden = Suite(public=True), Suite(public=False)
    for suite, x in ((public, torch.ones(2)), (hidden, torch.full((3,), 2.0))):
        for name, fn, want in (("double", "f", 2 * x), ("negate", "g", -x)):
            suite.case("q", f"{name} {'shown' if suite.public else 'unseen'}", points=1, check=equal(), expected=want)(
                lambda ns, fn=fn, x=x: getattr(ns, fn)(x)
            )
    return [*public.cases, *hidden.cases]


def test_a_public_test_counts_once_a_hidden_test_of_its_own_clause_passes():
    """The cheater audit's F3: code that doubles (passing the hidden test of doubling) and returns
    the notebook's printed answer for the one negation it was shown earns the doubling's points
    alone once the tests name their clauses; a question-wide rule gave it the shown negation too."""
    cases = _two_clause_suites()
    ns = SimpleNamespace(f=lambda x: 2 * x, g=lambda x: -x if x.shape == (2,) else x)
    outcome = Outcome(values={c.key: c.probe(ns) for c in cases})
    per_question = judge(StageTests("x", (), tuple(cases)), outcome)
    assert sum(r.score for r in per_question) == 3
    table = clause_rows(
        "## q\n| id | clause | tests |\n|---|---|---|\n"
        "| double | f doubles | `q: double shown`, `q: double unseen` |\n"
        "| negate | g negates | `q: negate shown`, `q: negate unseen` |\n"
    )
    partners = proving_partners(table, cases)
    assert partners == {"q: double shown": ["q: double unseen"], "q: negate shown": ["q: negate unseen"]}
    results = judge(StageTests("x", (), tuple(cases), partners=partners), outcome)
    assert {r.name: r.score for r in results} == {
        "double shown": 1,
        "negate shown": 0,
        "double unseen": 1,
        "negate unseen": 0,
    }
    (taken,) = [r for r in results if r.awaits_hidden]
    assert taken.message.startswith("this passed, but no hidden test of what it checks did")
    assert "unseen" not in taken.message  # students read it before the hidden tests' results: it names none
    assert classify({"output": taken.message}).kind == "withheld"  # the class report names it so
    honest = SimpleNamespace(f=lambda x: 2 * x, g=lambda x: -x)
    full = judge(
        StageTests("x", (), tuple(cases), partners=partners), Outcome(values={c.key: c.probe(honest) for c in cases})
    )
    assert sum(r.score for r in full) == 4


def test_a_hidden_test_that_checks_more_than_a_public_test_does_not_prove_it():
    """Honest code with a mistake in one clause fails every hidden test citing that clause: such a
    test is no partner of a public test of another clause, which its code passes honestly."""
    cases = _two_clause_suites()
    table = clause_rows(
        "## q\n| id | clause | tests |\n|---|---|---|\n"
        "| double | f doubles | `q: double shown`, `q: double unseen` |\n"
        "| negate | g negates | `q: negate shown`, `q: negate unseen`, `q: double unseen` |\n"
    )
    assert proving_partners(table, cases) == {"q: negate shown": ["q: negate unseen"]}  # double shown: none


def test_a_constructor_alone_earns_only_the_structure_points_of_03_embedding(tmp_path):
    """The cheater audit's F2: a correct __init__ and a forward raising ValueError on every call
    earned forward's error tests (unlocked by the tables test); it earns the tables alone."""
    stage = get_stage("03")
    tests = stage_tests(stage)
    path = submission("03", tmp_path, "built", {"TokenPositionEmbedding": EMBEDDING_BUILT}, base="student")
    (graded,) = grade_batch([path], ["built"], tests, Limits(), progress=False)
    mine = [r for r in graded.results if r.qid == "embedding"]
    structure = {c.key for c in tests.cases if c.qid == "embedding" and c.role == "structure"}
    assert structure and {r.key for r in mine if r.score > 0} == structure
    assert {r.key for r in mine if r.withheld} >= {
        "embedding: a sequence longer than max_seq_len raises ValueError",
        "embedding: 1-D ids raise ValueError",
    }


def test_public_points_count_in_grading_only_once_a_hidden_test_of_the_work_passes():
    """Code that returns the notebook's printed answer for the public input passes every public
    test in check() (5 points) and earns nothing in grading, where the hidden test of the work fails."""
    cases = (*_guarded_suite().cases, *_hidden_suite().cases)

    def printed(x):  # the answer for the public example, zeros for anything else
        return x.clone() if x is not None and x.shape == (2,) else _zeros(x)

    assert run_public(_guarded_suite().cases, "q", {"f": printed})[2] == 5
    results = judge(
        StageTests("x", (), cases), Outcome(values={c.key: c.probe(SimpleNamespace(f=printed)) for c in cases})
    )
    assert sum(r.score for r in results) == 0
    assert [r.name for r in results if r.awaits_hidden] == ["values"]
    assert next(r for r in results if r.awaits_hidden).message.startswith(
        "this passed, but no hidden test of the work of q did"
    )
    assert [r.name for r in results if r.withheld and not r.awaits_hidden] == [
        "the input is not modified",
        "dtype",
        "raises",
    ]


# --- redaction leaves the student's own code alone -----------------------------------------------

STUDENT_LINE = "seq_out, new_state = self.lstm(self.emb(idx), state)  # (B, T, H), ..."


def test_redaction_never_alters_a_students_own_line_but_hides_a_glued_hidden_one():
    tests = get_stage("09").tests()
    hidden_line = "out, new_state = self.lstm(self.emb(idx), state)"
    assert hidden_line in tests.secrets  # 09's hidden stand-in has this line: the cause of the report
    case = next(c for c in tests.cases if not c.public)
    message = f"raised RuntimeError: input.size(-1) must be equal to input_size at line 4 of `RNNLM.forward`: `{STUDENT_LINE}`"
    own = f"class RNNLM(nn.Module):\n    def forward(self, idx, state=None):\n        {STUDENT_LINE}\n"
    errors = dict.fromkeys((c.key for c in tests.cases), "not run")
    results = judge(tests, Outcome(errors={**errors, case.key: message}, code=own))
    shown = next(r for r in results if r.key == case.key).message
    assert STUDENT_LINE in shown and "[hidden test code]" not in shown
    stolen = judge(tests, Outcome(errors={**errors, case.key: "x" + hidden_line}, code=own.replace("seq_out", "y")))
    assert next(r for r in stolen if r.key == case.key).message == "x[hidden test code]"


# --- variants made from the reference -------------------------------------------------------------


def test_no_op_and_recast_stand_ins_do_what_they_say():
    def double(x, scale=2.0):
        return {"y": x * scale, "n": int(x.numel()), "ids": torch.arange(3)}

    x = torch.ones(2)
    assert _gptcourse_noop(double, "none")(x) is None and _gptcourse_noop(double, "input")(x) is x
    zeros = _gptcourse_noop(double, "zeros")(x)
    assert torch.equal(zeros["y"], torch.zeros(2)) and zeros["n"] == 0 and torch.equal(x, torch.ones(2))
    recast = _gptcourse_recast(double)(x)
    assert recast["y"].dtype == torch.float64 and recast["ids"].dtype == torch.int32 and recast["n"] == 2

    class Scale(torch.nn.Module):
        def __init__(self, width):
            super().__init__()
            if width < 1:
                raise ValueError("width")
            self.weight = torch.nn.Parameter(torch.ones(width))

        def forward(self, x):
            return x * self.weight

    assert _gptcourse_noop(Scale, "none")(3)(x) is None
    assert list(_gptcourse_noop(Scale, "none")(3).parameters()) == []  # nothing was built
    assert torch.equal(_gptcourse_noop(Scale, "zeros")(2)(x), torch.zeros(2))
    with pytest.raises(ValueError):
        _gptcourse_noop(Scale, "zeros")(0)  # the twin raises what the reference raises
    module = _gptcourse_recast(Scale)(2)
    assert isinstance(module, Scale) and module(x).dtype == torch.float64 and module.weight.dtype == torch.float32

    class Twice(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(2, 2)

        def step(self, x):
            return self.linear(x)

        def forward(self, x):
            return self.step(self.step(x))  # its own call of step gets float32, as the reference's would

    twice = _gptcourse_recast(Twice)()
    assert twice(x).dtype == torch.float64 and twice.step(x).dtype == torch.float64


def test_each_stage_gets_three_no_ops_and_an_audit_per_question_with_stubs():
    stage = get_stage("02")
    stubs = question_stubs(stage)
    assert stubs["efficiency"] == [] and stubs["byte_bpe"] == ["train_byte_bpe", "byte_bpe_encode", "byte_bpe_decode"]
    slugs = [v.slug for v in auto_variants(stage)]
    assert slugs[:3] == ["noop-none", "noop-input", "noop-zeros"]
    assert "audit-efficiency" not in slugs and "audit-byte_bpe" in slugs


# --- the rules, each failing on a small case ------------------------------------------------------


def _grades(
    results_by_name, *, clauses=None, mistakes=(), noops=(), audits=(), guards=frozenset(), builders=(), roles=None
):
    maxima = {"q": 3.0}

    def scores(name):
        return {"q": sum(r.score for r in results_by_name[name])}

    return SimpleNamespace(
        tests=SimpleNamespace(
            guard_tests=frozenset(guards),
            cases=[SimpleNamespace(key=key, role=role) for key, role in (roles or {}).items()],
        ),
        by_name={name: SimpleNamespace(results=rs) for name, rs in results_by_name.items()},
        scores=scores,
        maxima=maxima,
        clauses=clauses or {},
        mistakes=list(mistakes),
        noops=list(noops),
        builders=list(builders),
        audits=list(audits),
    )


def _r(name, ok, message="wrong", withheld=False):
    return Result(f"q: {name}", "q", name, True, float(ok), 1.0, "" if ok else message, withheld=withheld)


def test_the_no_op_rule_names_the_test_a_no_op_passes():
    noop = SimpleNamespace(slug="noop-none", what="the no-op notebook noop-none (every stub returns None)")
    grades = _grades({"noop-none": [_r("values", False), _r("shape", True), _r("raises", True)]}, noops=[noop])
    (problem,) = noops_earn_nothing(grades)
    assert "noop-none (every stub returns None) earns 2 of 3 points on q" in problem
    assert "'q: shape', 'q: raises'" in problem and "mark it guard=True" in problem
    grades = _grades({"noop-none": [_r("values", False), _r("shape", True)]}, noops=[noop], guards={"q: shape"})
    assert "passes 'q: shape'" not in noops_earn_nothing(grades)[0]  # a guard is never the culprit
    grades = _grades({"noop-none": [_r("values", True), _r("raises", True)]}, noops=[noop], guards={"q: raises"})
    (problem,) = noops_earn_nothing(grades)
    assert "it passes 'q: values', which is no guard (and so unlocks 1 point of the guard 'q: raises')" in problem


def test_the_builder_rule_names_each_test_beyond_structure_it_passes_and_each_structure_test_it_fails():
    built = SimpleNamespace(slug="builds-only", what="the notebook builds-only")
    roles = {"q: tables": "structure", "q: shapes": "work", "q: raises": "guard", "q: values": "work"}
    fair = [_r("tables", True), _r("shapes", False), _r("raises", False, withheld=True), _r("values", False)]
    assert building_earns_only_structure(_grades({"builds-only": fair}, builders=[built], roles=roles)) == []
    unfair = [_r("tables", False), _r("shapes", True), _r("raises", True), _r("values", False)]
    grades = _grades({"builds-only": unfair}, builders=[built], roles=roles)
    passes, fails = building_earns_only_structure(grades)
    assert passes == (
        "the notebook builds-only passes 'q: shapes' of q (and so unlocks 1 point of the guard 'q: raises'): "
        "mark it structure=True, or make it check behaviour"
    )
    assert "fails 'q: tables' of q, marked structure=True" in fails


def _empty_answers(lost: dict[str, dict[str, list]], uses: dict) -> SimpleNamespace:
    """Grades of empty-answer variants (``lost``: variant's question -> results per question) under a
    hidden suite declaring ``QUESTIONS_USE = uses``."""
    hidden = {"QUESTIONS_USE": uses}
    exec("def probe(ns):\n    return None\n", hidden)
    maxima = {"p": 2.0, "q": 1.0, "r": 1.0}
    by_name = {f"empty-{v}": SimpleNamespace(results=[r for rs in per.values() for r in rs]) for v, per in lost.items()}
    return SimpleNamespace(
        tests=SimpleNamespace(
            cases=[SimpleNamespace(public=True), SimpleNamespace(public=False, probe=hidden["probe"])]
        ),
        maxima=maxima,
        empties=[SimpleNamespace(slug=f"empty-{v}", qid=v, what=f"the notebook empty-{v}") for v in lost],
        by_name=by_name,
        scores=lambda name: {
            qid: sum(r.score for r in by_name[name].results if r.qid == qid) if qid in lost[name[6:]] else maxima[qid]
            for qid in maxima
        },
    )


def _q(qid, name, ok, message="NotImplementedError: Write p"):
    return Result(f"{qid}: {name}", qid, name, True, float(ok), 1.0, "" if ok else message)


def test_the_empty_answer_rule_allows_only_the_declared_uses():
    # empty p: p earns nothing, q runs p's code by design (declared), r should not lose anything
    lost = {"p": {"p": [_q("p", "a", False), _q("p", "b", False)], "q": [_q("q", "trains", False)]}}
    assert empty_answers_cost_their_own_question(_empty_answers(lost, {"q": ("p",)})) == []
    lost["p"]["r"] = [_q("r", "shape", False)]
    (problem,) = empty_answers_cost_their_own_question(_empty_answers(lost, {"q": ("p",)}))
    assert problem == (
        "the notebook empty-p also loses 1 points on r ('r: shape': NotImplementedError: Write p): give its tests "
        "a stand-in for the student's p, or, if they run it by design, say so in hidden.py "
        "(QUESTIONS_USE = {'r': ('p',)})"
    )
    # a declaration nothing needs, and one naming no question of the stage
    lost = {"p": {"p": [_q("p", "a", False)]}}
    assert empty_answers_cost_their_own_question(_empty_answers(lost, {"q": ("p",), "s": ("p",)})) == [
        "QUESTIONS_USE names 's', which is not a question of the stage",
        "the notebook empty-p loses nothing on q, which QUESTIONS_USE says runs p's code: drop it there",
    ]


def test_the_audit_rule_allows_only_the_dtype_clauses_tests():
    audit = SimpleNamespace(slug="audit-q", qid="q", what="the dtype audit audit-q (f returning float64)")
    clauses = {"q": [Clause("dtype", "f returns float32", ["q: dtype"]), Clause("values", "f is right", ["q: values"])]}
    grades = _grades({"audit-q": [_r("dtype", False), _r("values", True)]}, clauses=clauses, audits=[audit])
    assert dtype_slips_cost_only_their_clause(grades) == []
    grades = _grades(
        {"audit-q": [_r("dtype", False), _r("values", False, "expected dtype")]}, clauses=clauses, audits=[audit]
    )
    (problem,) = dtype_slips_cost_only_their_clause(grades)
    assert "audit-q (f returning float64) fails 'q: values', which no dtype or device clause of q cites" in problem


def test_the_clause_rule_wants_a_mistake_breaking_each_clause_and_exactly_the_clauses_declared():
    clauses = {
        "q": [
            Clause("a", "clause a", ["q: one"]),
            Clause("b", "clause b", ["q: two"]),
            Clause("", "a clause with no id", ["q: one"]),
        ]
    }
    exact = Variant("q", "breaks a", {}, clauses=("a",))
    wrong = Variant("q", "breaks b, says a", {}, clauses=("a",))
    both = Variant("q", "breaks both", {}, clauses=("a", "b"))  # declared right, but covers neither alone
    grades = _grades(
        {
            exact.slug: [_r("one", False), _r("two", True)],
            wrong.slug: [_r("one", True), _r("two", False)],
            both.slug: [_r("one", False), _r("two", False)],
        },
        clauses=clauses,
        mistakes=[exact, wrong, both],
    )
    problems = every_clause_has_a_mistake(grades)
    assert any("q: 1 clause(s) have no id" in p for p in problems), problems
    assert any(
        "'q-breaks-b-says-a' declares it breaks [a] 'clause a' of q, but passes every test" in p for p in problems
    )
    assert any("'q-breaks-b-says-a' fails 'q: two', which no clause it declares cites" in p for p in problems)
    assert any("no catalogued mistake breaks [b] 'clause b' of q alone" in p for p in problems), problems
    assert not any("[a] 'clause a' of q alone" in p for p in problems)
    assert not any("q-breaks-both" in p for p in problems)


def test_clause_tables_with_ids_parse_and_every_test_must_be_cited(tmp_path):
    text = "## q\n\n| id | clause | tests |\n|---|---|---|\n| dtype-out | y is float32 | `q: one` |\n| x | x | `q: one` |\n| x | again | `q: two` |\n"
    rows = clause_rows(text)["q"]
    assert [(c.id, c.about_dtype) for c in rows] == [("dtype-out", True), ("x", False), ("x", False)]
    path = tmp_path / "clauses.md"
    path.write_text(text)
    assert clause_problems(path, {"q": {"q: one", "q: two"}}) == ["clauses.md: q: the id 'x' names two clauses"]
    assert uncited_tests(path, {"q": ["q: one", "q: three"]}) == [
        "clauses.md: q: the test 'q: three' is cited by no clause: add it to the clause it enforces"
    ]


# --- issue 29's student: a float64 apply_rope ----------------------------------------------------

ROPE_VARIANT = "rope-angles-in-float64-never-cast-back"


def test_a_float64_apply_rope_keeps_every_value_point_and_loses_the_dtype_tests_once(graded_catalogue):
    grades = graded_catalogue("03")
    graded = grades.by_name[ROPE_VARIANT]
    rope = [r for r in graded.results if r.qid == "rope"]
    failed = [r.key for r in rope if not r.passed]
    assert failed == [
        "rope: a float32 input gives a float32 output, a float64 input a float64 one",
        "rope: the output keeps the input's dtype (float32, float64)",
    ]
    assert not graded.faults and all(r.score == r.max_score for r in graded.results if r.qid != "rope")
    lost = sum(r.max_score for r in rope) - sum(r.score for r in rope)
    assert lost == 2 and all(r.passed for r in rope if "dtype" not in r.name and "float32 output" not in r.name)
    roots = follows_from(graded.results)
    assert [k for k, on in roots.items() if not on] == [failed[0]]  # one root, the public test: start there
    assert "expected dtype torch.float32, got torch.float64" in explain_failures(graded.results)[failed[0]]


def test_check_on_a_float64_apply_rope_fails_the_dtype_test_alone_and_never_faults():
    variant = next(v for v in catalogue("03")[0] if v.slug == ROPE_VARIANT)
    names = {"torch": torch, "math": math}
    exec(variant.cells["apply_rope"], names)
    public = [c for c in get_stage("03").tests().cases if c.public]
    ok, report, _ = run_public(public, "rope", names)
    lines = [line for line in report.splitlines() if line.startswith("  [")]
    assert not ok and [line for line in lines if "FAIL" in line] == [
        "  [FAIL] a float32 input gives a float32 output, a float64 input a float64 one"
    ]
    assert "fault of the course" not in report and "expected dtype torch.float32, got torch.float64" in report


def test_an_untouched_stub_shows_one_place_to_start_whatever_its_tests_expected():
    def apply_rope(x, base=10000.0):
        raise NotImplementedError("Write apply_rope")

    public = [c for c in get_stage("03").tests().cases if c.public]
    _, report, _ = run_public(public, "rope", {"apply_rope": apply_rope})
    assert report.count("start here") == 1 and "(8 later test(s) fail because of this one: start here)" in report


def test_a_count_of_differing_elements_is_no_hidden_value():
    """Zeros for an answer make "19 of 20 elements differ" common; the count is no expected value."""
    from autograder.authoring.feedback_rules import revealed

    message = "19 of 20 elements differ, the first at index (0, 1), where you have 0"
    assert revealed(message, torch.arange(1, 21), torch.zeros(20, dtype=torch.long)) == []
    assert revealed("your value 3.125 is not the expected one", [19.25], [3.125]) == []  # the student's own
    assert revealed("expected 19.25", [19.25], [3.0]) == ["an expected value, 19.25"]
