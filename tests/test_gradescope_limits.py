"""The worst submissions of stage 07 (81 tests) under Gradescope's default limits: 768 MB of
memory, half a CPU, 10 minutes.

The zip's ``run_autograder`` runs as Gradescope runs it (``gptcourse gradescope-run``'s
``run_root``) inside a cgroup made for the test (root, cgroup v1 or v2 with the memory and
cpu controllers); where no cgroup can be made it runs under ``ulimit -d`` and ``taskset``
instead. Either way the test prints which it used (``-s`` or the captured output of a
failure shows it). The subprocess is given Gradescope's 10 minutes: a run that has not
written its results by then fails the test, as Gradescope would fail the submission.

- every function hangs (an endless loop in each stub): every test ends with a time-out or
  "not run", results.json is the engine's (not the watchdog's "not graded in time");
- one function grabs memory until the kernel stops it and another is a fork bomb (every
  process forks for ever): those two questions lose their points and every other question
  is scored as the reference is (none of its tests runs out of time, memory or turns;
  each has tests that pass).
"""

import pytest
from support import submission

from autograder.build.fixtures import DEFAULT_DIR, stage_tests
from autograder.build.gradescope_tryout import MEMORY_BYTES, make_root, run_root
from autograder.build.gradescope_zip import build_gradescope_zip
from autograder.channels.gradescope.entry import LATE
from autograder.course import get_stage
from autograder.reports.failures import classify

STAGE = "07_gpt"
GRADESCOPE_TIMEOUT = 600.0
HANG = "\n    while True:\n        pass\n"
HANGING = {
    "GPT": "class GPT(nn.Module):\n    def __init__(self, config):\n        super().__init__()"
    + HANG.replace("\n", "\n    ")
    + "\n    def forward(self, idx, targets=None):"
    + HANG.replace("\n", "\n    "),
    **{
        name: f"def {name}(*args, **kwargs):" + HANG
        for name in (
            "num_parameters",
            "get_device",
            "train_step",
            "estimate_loss",
            "train",
        )
    },
}
# stage 08's functions, whose tests run the grader's own models (never a student's GPT)
HANGING_08 = {name: f"def {name}(*args, **kwargs):" + HANG for name in ("sample_next", "generate", "generate_cached")}
FORK_BOMB = """
def get_device():
    import os
    while True:
        try:
            os.fork()
        except OSError:
            pass
"""
DISTURBED = ("time", "not run", "process", "unreadable", "output")  # failure kinds a memory grab elsewhere could cause
GRAB = """
def num_parameters(config):
    hoard = []
    while True:
        hoard.append(torch.ones(16 * 2**20 // 4))  # 16 MB at a time, every page written
"""


@pytest.fixture(scope="module")
def zip_07(tmp_path_factory):
    stage = get_stage(STAGE)
    tests = stage_tests(stage)
    return build_gradescope_zip(stage, tmp_path_factory.mktemp("gradescope"), DEFAULT_DIR / f"{STAGE}.json"), tests


def run_limited(zip_path, notebook, folder):
    tried = run_root(make_root(zip_path, folder, notebook), gradescope_limits=True, timeout=GRADESCOPE_TIMEOUT)
    peak = f", peak {tried.peak_memory / 2**20:.0f} MB" if tried.peak_memory else ""
    print(f"\n{notebook.stem}: confined by {tried.confined}; {tried.seconds:.0f} s{peak}")
    assert tried.returncode == 0, tried.stderr[-3000:]
    return tried


def per_question(doc: dict) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    for test in doc["tests"]:
        qid = test["name"].split(":", 1)[0]
        got, worth = out.get(qid, (0.0, 0.0))
        out[qid] = (got + test["score"], worth + test["max_score"])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("stage_id, hanging", [(STAGE, HANGING), ("08_generation", HANGING_08)], ids=["07", "08"])
def test_every_function_hanging_is_graded_inside_gradescopes_limits(stage_id, hanging, tmp_path):
    stage = get_stage(stage_id)
    tests = stage_tests(stage)
    (tmp_path / "gradescope").mkdir()
    zip_path = build_gradescope_zip(stage, tmp_path / "gradescope", DEFAULT_DIR / f"{stage_id}.json")
    notebook = submission(stage_id, tmp_path, "hangs", replace=hanging)
    tried = run_limited(zip_path, notebook, tmp_path / "hangs-root")
    doc = tried.results
    assert [t["name"] for t in doc["tests"]] == [c.key for c in tests.cases]
    assert doc["score"] == 0
    assert not any(LATE in t["output"] for t in doc["tests"]), (
        "the watchdog wrote the results: grading did not finish in time"
    )
    stopped = ("did not finish", "not run", "ran out of time")
    unexplained = [t["name"] for t in doc["tests"] if not any(s in t["output"] for s in stopped)]
    assert not unexplained, [(t["name"], t["output"]) for t in doc["tests"] if t["name"] in unexplained][:3]


@pytest.mark.slow
def test_a_memory_grab_and_a_fork_bomb_cost_their_questions_only_inside_gradescopes_limits(zip_07, tmp_path):
    zip_path, tests = zip_07
    notebook = submission(STAGE, tmp_path, "grabs", replace={"num_parameters": GRAB, "get_device": FORK_BOMB})
    tried = run_limited(zip_path, notebook, tmp_path / "grabs-root")
    if tried.peak_memory is not None:
        assert tried.peak_memory <= MEMORY_BYTES
    scores = per_question(tried.results)
    assert set(scores) == {q for q, _ in tests.questions()}
    assert scores["params"][0] < scores["params"][1] and scores["device"][0] == 0
    stopped = {
        t["name"] for t in tried.results["tests"] if t["score"] < t["max_score"] and classify(t).kind == "process"
    }
    assert stopped and all(name.startswith("params: ") for name in stopped), (
        stopped
    )  # the grab ended its own tests' process
    # every other question is scored as if nothing had happened: nothing of it ran out of time, memory or turns
    others = [t for t in tried.results["tests"] if t["name"].split(":", 1)[0] not in ("params", "device")]
    disturbed = [
        (t["name"], t["output"][:200]) for t in others if t["score"] < t["max_score"] and classify(t).kind in DISTURBED
    ]
    assert not disturbed, disturbed
    passed = {t["name"].split(":", 1)[0] for t in others if t["score"] >= t["max_score"]}
    assert passed == set(scores) - {"params", "device"}
