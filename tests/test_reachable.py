"""Nothing a student or the child process can reach computes a reference answer.

``public.py`` ships in every notebook and sits in the grading child's modules before the
student's cells run; ``hidden.py`` sits there while the hidden probes run. Neither may
hold an implementation of a graded function of its stage, whether copied (found by
structure) or written another way (found by behaviour: a suite function that returns
what the reference returns on the reference's own test inputs). See ``refscan``.

The modules the child has loaded while the cells and the hidden probes run are listed by
the hostile catalogue (``modules_cell``, ``modules_function``) and scanned the same way
in tests/test_hostile.py.

First the scan is shown to find what it must (a renamed copy, a re-implementation in
another style, a helper with an extra parameter, a copy of a graded module class) and to
spare what it must (a table of literal answers, a wrong implementation); then it is
applied to every stage.
"""

import textwrap
import types

import pytest
import torch

from autograder.authoring import refscan
from autograder.authoring.run_rules import suites_hold_no_reference
from autograder.authoring.static_rules import Subject
from autograder.build.stubs import reference_source
from autograder.course import all_stages, get_stage
from autograder.kit.cases import randn

STAGES = all_stages()


def _module(source: str) -> types.ModuleType:
    module = types.ModuleType("scratch_suite")
    exec(compile(textwrap.dedent(source), "<scratch suite>", "exec"), module.__dict__)
    return module


def _calls(function, inputs) -> list[refscan.Call]:
    return [refscan.Call(args, {}, function(*args), None) for args in inputs]


def test_a_renamed_copy_is_found_by_structure():
    source = reference_source("attention", "apply_rope")
    for old, new in (
        ("apply_rope", "_turn"),
        ("positions", "where"),
        ("inv_freq", "speeds"),
        ("angles", "theta"),
        ("rotated", "out"),
        ("even", "a"),
        ("odd", "b"),
    ):
        source = source.replace(old, new)
    found = refscan.structural_matches(source, "scratch.py", refscan.reference_units(get_stage("03")))
    assert len(found) == 1 and "_turn" in found[0] and "reference apply_rope" in found[0], found
    assert (
        refscan.structural_matches(
            "def _f(x):\n    return x.sum() * 2\n", "scratch.py", refscan.reference_units(get_stage("03"))
        )
        == []
    )


SPLITS = """
import torch

def _loop_heads(x, h):  # another style: one slice of features per head
    B, T, C = x.shape
    return torch.stack([x[:, :, i * (C // h):(i + 1) * (C // h)] for i in range(h)], dim=1)

def _with_a_sign(x, h, sign):  # wants one more argument
    B, T, C = x.shape
    return sign * x.view(B, T, h, C // h).permute(0, 2, 1, 3)

def _mixed_positions(x, h):  # wrong: positions and heads mixed up
    B, T, C = x.shape
    return x.reshape(B, h, T, C // h)

_KNOWN = {(1, 2, 6): torch.arange(12.0).view(1, 2, 3, 2).transpose(1, 2)}

def _table(x, h):  # literal answers to one input
    return _KNOWN[tuple(x.shape)]

class _Heads:
    def __call__(self, x, h):
        B, T, C = x.shape
        return x.unflatten(-1, (h, C // h)).transpose(1, 2)
"""


def test_a_reimplementation_is_found_by_behaviour_and_a_table_is_not():
    from solutions.multihead import split_heads

    inputs = [
        (torch.arange(12.0).view(1, 2, 6), 3),
        (randn(2, 5, 8, seed=1), 2),
        (randn(3, 4, 12, seed=2), 4),
        (randn(1, 3, 6, seed=3), 1),
    ]
    calls = {"split_heads": _calls(split_heads, inputs)}
    found = refscan.behavioural_matches(_module(SPLITS), {"split_heads": split_heads}, calls, "scratch.py")
    flagged = {line.split(": ")[1].split()[0] for line in found}
    assert flagged == {"_loop_heads", "_with_a_sign", "_Heads()"}, found
    assert any("(1,)" in line for line in found if "_with_a_sign" in line)


FEEDFORWARDS = """
import torch.nn as nn

class _Known(nn.Module):  # the graded FeedForward under another name
    def __init__(self, embed_dim, ff_dim, activation="gelu", dropout=0.0):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(embed_dim, ff_dim), nn.Linear(ff_dim, embed_dim)
        self.act = nn.GELU() if activation == "gelu" else nn.ReLU()
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.drop(self.fc2(self.act(self.fc1(x))))

class _Other(nn.Module):  # other parameter names: not the graded module
    def __init__(self, embed_dim, ff_dim, activation="gelu", dropout=0.0):
        super().__init__()
        self.up = nn.Linear(embed_dim, ff_dim)

    def forward(self, x):
        return self.up(x)
"""


def _feedforward_calls(FeedForward) -> list:
    """Three recorded calls of the reference FeedForward, as the scan records them."""
    calls = []
    for seed, activation in ((1, "gelu"), (2, "relu"), (3, "gelu")):
        torch.manual_seed(seed)
        module = FeedForward(6, 10, activation=activation).eval()
        x = randn(2, 3, 6, seed=seed)
        state = {k: v.detach().clone() for k, v in module.state_dict().items()}
        calls.append(
            refscan.ModuleCall(((6, 10), {"activation": activation}), state, False, (x,), {}, module(x).detach())
        )
    return calls


def test_a_copy_of_a_graded_module_class_is_found_by_behaviour():
    from solutions.blocks import FeedForward

    calls = _feedforward_calls(FeedForward)
    found = refscan.behavioural_matches(
        _module(FEEDFORWARDS), {"FeedForward": FeedForward}, {"FeedForward": calls}, "scratch.py"
    )
    assert len(found) == 1 and found[0].startswith(
        "scratch.py: _Known reproduces the reference FeedForward on 3 of 3"
    ), found


NESTED = """
import torch.nn as nn

def _known_parts(ns, log=None):  # the graded FeedForward defined inside a function, from the notebook's names
    class _Inner(nn.Module):
        def __init__(self, embed_dim, ff_dim, activation="gelu", dropout=0.0):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(embed_dim, ff_dim), nn.Linear(ff_dim, embed_dim)
            self.act = ns.nn.GELU() if activation == "gelu" else nn.ReLU()
            self.drop = nn.Dropout(dropout)

        def forward(self, x):
            return self.drop(self.fc2(self.act(self.fc1(x))))

    class _Outer(nn.Module):  # uses its sibling
        def __init__(self, *args, **kwargs):
            super().__init__()
            self.inner = _Inner(*args, **kwargs)

        def forward(self, x):
            return self.inner(x)

    return {"FeedForward": _Inner}
"""


def test_a_copy_of_a_graded_module_class_defined_inside_a_function_is_found():
    from solutions.blocks import FeedForward

    calls = _feedforward_calls(FeedForward)
    module = _module(NESTED)
    assert (
        refscan.behavioural_matches(module, {"FeedForward": FeedForward}, {"FeedForward": calls}, "scratch.py") == []
    )  # unseen without the source
    found = refscan.behavioural_matches(
        module,
        {"FeedForward": FeedForward},
        {"FeedForward": calls},
        "scratch.py",
        source=textwrap.dedent(NESTED),
        context={"nn": torch.nn},
    )
    assert len(found) == 1 and found[0].startswith(
        "scratch.py: _known_parts.<locals>._Inner reproduces the reference FeedForward on 3 of 3"
    ), found


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.id)
def test_no_suite_holds_an_implementation_of_a_graded_function(stage):
    # check-stage's rule "no suite holds the reference" (refscan in a process of its own)
    problems = suites_hold_no_reference(Subject(stage))
    assert not problems, "\n".join(problems)
