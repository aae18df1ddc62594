"""Hostile and broken submissions: each gets a valid result and the score it deserves, no more."""

import json
import os
import time
from pathlib import Path

import pytest

from autograder.fixtures import DEFAULT_DIR, load_fixtures
from autograder.grading import grade_many
from autograder.runner import Limits
from autograder.stages import get_stage, questions

from conftest import submission

STAGE = "01_tokenisation"
FAST = Limits(case_timeout=3.0, cell_timeout=5.0, total_timeout=180.0)

WRONG_KN = '''
def kneser_ney_bigram(ids, vocab_size, discount=0.75):
    if not 0 <= discount <= 1:
        raise ValueError("bad discount")
    return torch.full((vocab_size, vocab_size), 1.0 / vocab_size)
'''

PATCH_COMPARISONS = '''
import numpy
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.Tensor.__eq__ = lambda *a, **k: True
numpy.allclose = lambda *a, **k: True
numpy.array_equal = lambda *a, **k: True
'''

DETACHED = '''
import subprocess, sys
attack = """
import json, os, time
target = {target!r}
fake = {{"score": 999, "tests": [{{"name": "build_vocab: fake", "score": 999, "max_score": 1}}]}}
for _ in range(100):
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as f:
            json.dump(fake, f)
        with open({csv!r}, "w") as f:
            f.write("submission,total\\\\nhostile,999\\\\n")
    except OSError:
        pass
    time.sleep(0.1)
"""
subprocess.Popen([sys.executable, "-c", "import os, subprocess, sys; os.setsid(); subprocess.Popen([sys.executable, '-c', sys.argv[1]], start_new_session=True)", attack], start_new_session=True)
'''

INPUT_TRANSFORMER = '''
ip = get_ipython()
ip.input_transformers_cleanup.append(lambda lines: ["pass\\n"])
'''


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    out = folder / "out"
    subs = {
        "syntax_error": submission(STAGE, folder, "syntax_error", {"build_vocab": "def build_vocab(text)\n    return {}, {}"}),
        "missing_function": submission(STAGE, folder, "missing_function", {"encode": "# I deleted my encode function"}),
        "raises": submission(STAGE, folder, "raises", {"get_batch": "def get_batch(data, block_size, batch_size, generator=None):\n    raise RuntimeError('oops')"}),
        "infinite_loop": submission(STAGE, folder, "infinite_loop", {"train_val_split": "def train_val_split(data, val_fraction=0.1):\n    while True:\n        pass"}),
        "toplevel_loop": submission(STAGE, folder, "toplevel_loop", extra_cells=["while True:\n    pass"]),
        "sys_exit": submission(STAGE, folder, "sys_exit", {"kneser_ney_bigram": "def kneser_ney_bigram(ids, vocab_size, discount=0.75):\n    import sys\n    sys.exit(0)"}, extra_cells=["import sys\nsys.exit(3)"]),
        "os_exit": submission(STAGE, folder, "os_exit", {"decode": "def decode(ids, itos):\n    import os\n    os._exit(0)"}),
        "toplevel_os_exit": submission(STAGE, folder, "toplevel_os_exit", extra_cells=["import os\nos._exit(1)"]),
        "memory_grab": submission(STAGE, folder, "memory_grab", {"build_vocab": "def build_vocab(text):\n    hog = bytearray(40 * 2**30)\n    return {}, {}"}, extra_cells=["hog = torch.ones(2**40, dtype=torch.uint8)"]),
        "wrong_kn": submission(STAGE, folder, "wrong_kn", {"kneser_ney_bigram": WRONG_KN}),
        "wrong_kn_patched": submission(STAGE, folder, "wrong_kn_patched", {"kneser_ney_bigram": WRONG_KN}, extra_cells=[PATCH_COMPARISONS]),
        "empty_patched": submission(STAGE, folder, "empty_patched", extra_cells=[PATCH_COMPARISONS], base="student"),
        "input_transformer": submission(STAGE, folder, "input_transformer", extra_cells=[INPUT_TRANSFORMER], base="student"),
        "detached": submission(STAGE, folder, "detached", base="student", extra_cells=[
            DETACHED.format(target=str(out / "detached" / "results.json"), csv=str(out / "grades.csv"))
        ]),
    }
    stage = get_stage(STAGE)
    graded = grade_many(stage, list(subs.values()), out, load_fixtures(stage, DEFAULT_DIR), FAST, workers=2, progress=False)
    time.sleep(1.5)  # give anything left behind the chance to strike
    return {g.name: g for g in graded}, out


def scores(graded) -> dict[str, float]:
    per: dict[str, float] = {}
    for r in graded.results:
        per[r.qid] = per.get(r.qid, 0.0) + r.score
    return per


MAXIMA = dict(questions(STAGE))


@pytest.mark.parametrize(
    "name,lost",
    [
        ("syntax_error", "build_vocab"),
        ("missing_function", "encode_decode"),
        ("raises", "get_batch"),
        ("infinite_loop", "train_val_split"),
        ("sys_exit", "kneser_ney"),
        ("os_exit", "encode_decode"),
        ("memory_grab", "build_vocab"),
        ("wrong_kn", "kneser_ney"),
        ("wrong_kn_patched", "kneser_ney"),
    ],
)
def test_a_broken_question_costs_only_its_own_points(hostile, name, lost):
    graded, out = hostile
    got = scores(graded[name])
    assert got[lost] < MAXIMA[lost]
    assert {q: s for q, s in got.items() if q != lost} == {q: m for q, m in MAXIMA.items() if q != lost}
    doc = json.loads((out / name / "results.json").read_text())
    assert all(t["name"].split(":")[0] in MAXIMA for t in doc["tests"])


@pytest.mark.parametrize("name", ["toplevel_loop", "toplevel_os_exit"])
def test_a_hostile_extra_cell_is_skipped_and_costs_nothing(hostile, name):
    graded, out = hostile
    assert scores(graded[name]) == MAXIMA
    output = json.loads((out / name / "results.json").read_text())["output"]
    assert "Cell" in output and ("skipped" in output or "stopped" in output)


def test_patched_comparisons_earn_nothing(hostile):
    graded, _ = hostile
    assert scores(graded["wrong_kn_patched"]) == scores(graded["wrong_kn"])
    assert sum(scores(graded["empty_patched"]).values()) == 0


def test_input_transformer_has_no_effect(hostile):
    graded, _ = hostile
    assert sum(scores(graded["input_transformer"]).values()) == 0


def test_detached_process_cannot_overwrite_results(hostile):
    graded, out = hostile
    doc = json.loads((out / "detached" / "results.json").read_text())
    assert doc["score"] == 0 and all(t["max_score"] > 0 for t in doc["tests"])
    assert "999" not in (out / "grades.csv").read_text()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        assert b"fake = " not in cmdline, "the detached attacker is still running"


def test_timeouts_and_crashes_explain_themselves(hostile):
    graded, _ = hostile
    loop = [r.message for r in graded["infinite_loop"].results if r.qid == "train_val_split"]
    assert all("did not finish" in m for m in loop)
    exits = [r.message for r in graded["os_exit"].results if not r.passed]
    assert exits and all("ended the process" in m or "before this test began" in m or "raised" in m for m in exits)
    syntax = graded["syntax_error"].outcome.cell_errors
    assert any("syntax error" in m for m in syntax.values())


LEAK = '''
def build_vocab(text):
    import sys
    paths = [m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", "") and "suites" in m.__file__]
    raise ValueError("\\n".join(open(p).read() for p in paths))
'''

NETNS = '''
import os
print("NETNS=" + os.readlink("/proc/self/ns/net"))
'''


def test_hidden_tests_never_reach_student_visible_output(tmp_path):
    stage = get_stage(STAGE)
    path = submission(STAGE, tmp_path, "leak", {"build_vocab": LEAK})
    grade_many(stage, [path], tmp_path / "out", load_fixtures(stage, DEFAULT_DIR), FAST, progress=False)
    visible = (tmp_path / "out" / "leak" / "results.json").read_text()
    assert "raised ValueError" in visible
    hidden = stage.suite_files[1].read_text()
    for line in hidden.splitlines():
        line = line.strip()
        if len(line) >= 16 and not line.startswith(("import ", "from ", "#")):
            assert json.dumps(line)[1:-1] not in visible, line


@pytest.mark.skipif(os.geteuid() != 0, reason="a new network namespace needs root")
def test_child_runs_without_the_graders_network(tmp_path):
    stage = get_stage(STAGE)
    path = submission(STAGE, tmp_path, "netns", extra_cells=[NETNS])
    graded = grade_many(stage, [path], tmp_path / "out", load_fixtures(stage, DEFAULT_DIR), FAST, progress=False)
    seen = [line for line in graded[0].outcome.output.splitlines() if line.startswith("NETNS=")]
    assert seen and seen[0] != "NETNS=" + os.readlink("/proc/self/ns/net")


def test_grading_is_deterministic(tmp_path):
    stage = get_stage(STAGE)
    fixtures = load_fixtures(stage, DEFAULT_DIR)
    from autograder.mistakes import catalogue
    from autograder.submissions import write_variant

    mistake = next(m for m in catalogue(STAGE)[0] if m.qid == "get_batch")
    path = write_variant(stage, mistake, tmp_path)
    runs = []
    for workers in (1, 2):
        graded = grade_many(stage, [path] * 5, tmp_path / f"out{workers}", fixtures, FAST, workers=workers, progress=False)
        runs += [[(r.key, r.score, r.message) for r in g.results] for g in graded]
    assert len(runs) == 10 and all(run == runs[0] for run in runs)
