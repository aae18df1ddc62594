"""The hostile catalogue (tests/attacks.py), graded for every stage.

Every attack gets the score it deserves and no more, a valid result, and leaves the
other submissions graded in the same batch (the reference among them) untouched.
Nothing it starts survives grading, and nothing it writes lands in the results. Each
stage's catalogue is graded in one batch with two workers and short limits; stages 01
and 05 get the whole catalogue, the others the attacks on verdicts, on the engine and
on reachable reference code (see ``attacks.catalogue``), and the tests about the
sandbox and resources run on the first two only.
"""

import csv
import dataclasses
import json
import os
import sys
import time
import zipfile
from pathlib import Path

import attacks
import leakscan
import pytest
from support import submission

from autograder.authoring import refscan
from autograder.build.fixtures import DEFAULT_DIR, stage_tests
from autograder.channels.local.folder import grade_into_folder
from autograder.channels.local.records import RECORD
from autograder.cli import score_table
from autograder.course import ROOT, all_stages, get_stage, questions
from autograder.engine import processes
from autograder.engine.judge import judge
from autograder.engine.results import cell_notes, gradescope_json
from autograder.engine.runner import Limits
from autograder.engine.sandbox import UID_BASE, best_level
from autograder.reports.feedback import feedback_markdown

STAGES = [s.id for s in all_stages()]
FAST = Limits(case_timeout=1.5, cell_timeout=3.0, grace=1.0, total_timeout=120.0)
# the timed tests of 02 and the training tests of 07 need more than 1.5 s; 07's training_works
# (a few hundred steps of the student's own GPT and train, which no attack here aims at) is
# left out of its batch: the catalogue grades it (tests/test_catalogue.py). So is 10's
# seq2seq_works: its tests make optimisers (the first imports torch._dynamo, seconds) and
# train the student's Seq2Seq for 200 steps, and no attack here aims at it
LIMITS = {
    "02_bpe": Limits(case_timeout=20.0, cell_timeout=3.0, grace=1.0, total_timeout=180.0),
    "07_gpt": Limits(case_timeout=10.0, cell_timeout=10.0, grace=1.0, total_timeout=300.0),
}
LEFT_OUT = {"07_gpt": ("training_works",), "10_encoders": ("seq2seq_works",)}


class Batch:
    """A stage's catalogue, graded at once with two workers."""

    def __init__(self, stage_id: str, folder: Path) -> None:
        self.stage = get_stage(stage_id)
        self.out = folder / "out"
        self.attacks = {a.name: a for a in attacks.catalogue(stage_id)}
        self.paths = attacks.write_catalogue(stage_id, folder / "submissions", self.out)
        tests = stage_tests(self.stage)
        self.tests = dataclasses.replace(
            tests, cases=tuple(c for c in tests.cases if c.qid not in LEFT_OUT.get(stage_id, ()))
        )
        self.limits = LIMITS.get(stage_id, FAST)
        graded = grade_into_folder(
            list(self.paths.values()), self.tests, self.out, self.limits, workers=2, progress=False
        )
        time.sleep(1.0)  # give anything left behind the chance to strike
        self.graded = {g.name: g for g in graded}
        self.maxima = dict(self.tests.questions())
        self.target = attacks.TARGETS[stage_id].qid

    def scores(self, name: str) -> dict[str, float]:
        per = {q: 0.0 for q in self.maxima}
        for r in self.graded[name].results:
            per[r.qid] += r.score
        return per


_BATCHES: dict[str, Batch] = {}


def _batch(stage_id: str, tmp_path_factory) -> Batch:
    if stage_id not in _BATCHES:
        _BATCHES[stage_id] = Batch(stage_id, tmp_path_factory.mktemp(f"hostile-{stage_id}"))
    return _BATCHES[stage_id]


@pytest.fixture(scope="module", params=STAGES)
def batch(request, tmp_path_factory):
    return _batch(request.param, tmp_path_factory)


@pytest.fixture(scope="module", params=attacks.FULL)
def full_batch(request, tmp_path_factory):
    """A stage graded with the whole catalogue (sandbox, resources, files, processes)."""
    return _batch(request.param, tmp_path_factory)


PAIRS = [
    pytest.param(stage, attack.name, id=f"{stage}:{attack.name}")
    for stage in STAGES
    for attack in attacks.catalogue(stage)
]


def test_reference_and_wrong_base_are_untouched_by_their_neighbours(batch):
    assert batch.scores("reference") == batch.maxima
    wrong = batch.scores("wrong")
    assert wrong[batch.target] < batch.maxima[batch.target]
    assert {q: s for q, s in wrong.items() if q != batch.target} == {
        q: m for q, m in batch.maxima.items() if q != batch.target
    }


@pytest.mark.parametrize("stage_id,name", PAIRS)
def test_each_attack_gets_what_it_deserves_and_no_more(stage_id, name, tmp_path_factory):
    batch = _batch(stage_id, tmp_path_factory)
    attack = batch.attacks[name]
    got, wrong, maxima = batch.scores(name), batch.scores("wrong"), batch.maxima
    messages = {r.key: r.message for r in batch.graded[name].results if not r.passed}
    if attack.expect == "same":
        assert got == wrong, messages
    elif attack.expect == "at_most":
        gained = {
            r.key: r.message
            for r in batch.graded[name].results
            if r.passed and not next(w for w in batch.graded["wrong"].results if w.key == r.key).passed
        }
        assert all(got[q] <= wrong[q] for q in maxima), (got, wrong, gained)
    elif attack.expect == "function":
        broken = batch.scores("broken")
        assert got[batch.target] <= wrong[batch.target], messages
        assert {q: s for q, s in got.items() if q != batch.target} == {
            q: s for q, s in broken.items() if q != batch.target
        }, messages
    else:
        assert got == maxima, messages


def test_every_result_is_valid_and_agrees_with_the_gradebook(batch):
    rows = {r["submission"]: r for r in csv.DictReader((batch.out / "grades.csv").open())}
    assert set(rows) == set(batch.paths) | {"(max)"}
    for name in batch.paths:
        doc = json.loads((batch.out / name / "results.json").read_text())
        assert len(doc["tests"]) == len(batch.graded[name].results)
        assert all(t["name"].split(":")[0] in batch.maxima and 0 <= t["score"] <= t["max_score"] for t in doc["tests"])
        assert doc["score"] == pytest.approx(sum(t["score"] for t in doc["tests"]))
        assert float(rows[name]["total"]) == pytest.approx(doc["score"])
        assert "FORGED" not in doc["output"] and "FORGED" not in json.dumps(doc["tests"])
        assert doc["score"] <= sum(batch.maxima.values()) and all(
            t["max_score"] <= max(batch.maxima.values()) for t in doc["tests"]
        )
        assert {t["name"]: (t["score"], t["max_score"]) for t in doc["tests"]} == {
            r.key: (r.score, r.max_score) for r in batch.graded[name].results
        }


def test_nothing_the_attacks_wrote_is_in_the_output_folder(batch):
    expected = {"grades.csv"} | set(batch.paths)
    assert {p.name for p in batch.out.iterdir()} == expected
    for name in batch.paths:
        assert {p.name for p in (batch.out / name).iterdir()} == {
            "results.json",
            "feedback.md",
            RECORD,
        }  # the record of what was graded
    rows = list(csv.DictReader((batch.out / "grades.csv").open()))
    assert {r["submission"] for r in rows} == set(batch.paths) | {"(max)"}
    assert all(float(r["total"]) <= sum(batch.maxima.values()) for r in rows)


def test_no_process_of_any_attack_survives(batch):
    mine = processes._subtree(os.getpid(), processes._children_map())  # strays are re-parented to us (subreaper)
    for pid in mine:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        assert str(batch.out).encode() not in cmdline, "the detached attacker is still running"
        uids = [int(x) for x in next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]]
        assert all(u < UID_BASE for u in uids) or "Z" in status.split("State:")[1][:4], (
            f"process {pid} of a child's user survived"
        )
    for pid in filter(str.isdigit, os.listdir("/proc")):  # and none escaped elsewhere
        try:
            assert str(batch.out).encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue


def _output(batch, name: str) -> str:
    return batch.graded[name].outcome.output


def test_the_child_is_confined(full_batch):
    isolation = full_batch.graded["read_files"].outcome.isolation
    assert isolation["level"] == best_level()
    if os.geteuid() == 0:
        assert isolation["uid"] >= UID_BASE
    report = _output(full_batch, "read_files")
    secrets = [line for line in report.splitlines() if line.startswith(("READ /", "LISTED /", "DENIED /"))]
    assert secrets, report[:2000]
    if isolation.get("level") in ("namespaces", "userns"):
        stage, folder = full_batch.stage, full_batch.paths["reference"].parent
        for secret in (
            stage.hidden,
            DEFAULT_DIR / f"{stage.id}.json",
            stage.reference,
            ROOT / "autograder" / "engine" / "judge.py",
            folder / "reference.ipynb",
            full_batch.out / "grades.csv",
            folder,
        ):
            assert f"DENIED {secret} " in report, secret
        listing = next(line for line in report.splitlines() if line.startswith(f"{ROOT}: "))
        venv = Path(sys.prefix).resolve()
        assert listing.split(": ", 1)[1].split() == (
            [venv.relative_to(ROOT).parts[0]] if venv.is_relative_to(ROOT) else []
        )
        assert not any(
            line.split()[1].startswith(("/proc/1", "/autograder")) for line in secrets if not line.startswith("DENIED")
        )


def test_the_fork_bomb_is_capped_and_the_network_is_off(full_batch):
    forked = [
        int(line.split()[1]) for line in _output(full_batch, "fork_bomb").splitlines() if line.startswith("FORKED")
    ]
    assert forked and forked[0] < FAST.max_processes + 1
    if full_batch.graded["network"].outcome.isolation.get("offline"):
        lines = [line for line in _output(full_batch, "network").splitlines() if line.startswith("NETWORK")]
        assert len(lines) == 2 and all("unreachable" in line for line in lines)


def test_a_flood_of_output_is_cut_off_and_explained(full_batch):
    graded = full_batch.graded["flood_cell"]
    assert any("printed more than" in m for m in graded.outcome.cell_errors.values())
    assert len(graded.outcome.output) < 30_000
    flood = [
        r.message for r in full_batch.graded["flood_function"].results if r.qid == full_batch.target and not r.passed
    ]
    assert any("printed more than" in m for m in flood)


def test_timeouts_exits_and_syntax_errors_explain_themselves(full_batch):
    loop = [
        r.message for r in full_batch.graded["loop_function"].results if r.qid == full_batch.target and not r.passed
    ]
    assert loop and all("did not finish" in m or "raised ValueError" in m or "ValueError" in m for m in loop)
    exits = [
        r.message for r in full_batch.graded["os_exit_function"].results if r.qid == full_batch.target and not r.passed
    ]
    assert exits and all("ended the process" in m or "before this test began" in m or "ValueError" in m for m in exits)
    assert any("syntax error" in m for m in full_batch.graded["syntax_error"].outcome.cell_errors.values())
    assert any("stopped" in m for m in full_batch.graded["signals_ignored"].outcome.cell_errors.values())


def _visible(batch, name: str) -> str:
    """Everything a student (or, after the deadline, the whole class) may read about a submission."""
    graded = batch.graded[name]
    doc = json.loads((batch.out / name / "results.json").read_text())
    texts = [leakscan.visible_strings(doc), (batch.out / name / "feedback.md").read_text()]
    texts.append(feedback_markdown(name, batch.stage.id, graded.results, cell_notes(graded.outcome), show_hidden=True))
    return "\n".join(texts)


def test_no_visible_output_carries_hidden_tests_fixtures_or_reference_code(batch):
    hidden = leakscan.hidden_lines(batch.stage)
    fixtures = leakscan.fixture_fragments(batch.stage)
    shared = (batch.out / "grades.csv").read_text() + score_table(list(batch.graded.values()), batch.tests)
    assert hidden and fixtures
    assert not leakscan.find(shared, hidden + fixtures + attacks.fake_markers())
    for name, path in batch.paths.items():
        visible = _visible(batch, name)
        cells = json.loads(path.read_text())["cells"]
        own = "\n".join(c["source"] if isinstance(c["source"], str) else "".join(c["source"]) for c in cells)
        reference = leakscan.reference_lines(
            batch.stage, own
        )  # the submission's own code, as it wrote it (not JSON-escaped)
        assert not leakscan.find(visible, hidden), name
        assert not leakscan.find(visible, fixtures), name
        assert not leakscan.find(visible, reference), name


def test_no_message_quotes_an_expected_value(batch):
    """The same outcomes judged against canary fixtures: no canary may surface."""
    canaries = batch.tests.with_fixtures({key: leakscan.canary(value) for key, value in batch.tests.fixtures.items()})
    for name, graded in batch.graded.items():
        results = judge(canaries, graded.outcome)
        text = json.dumps(gradescope_json(results), ensure_ascii=False) + feedback_markdown(
            name, batch.stage.id, results, "", True
        )
        assert not leakscan.find(text, list(leakscan.CANARY_MARKERS)), (
            name,
            [r.message for r in results if "CANARY" in r.message or "0.12345" in r.message],
        )


def test_hidden_tests_are_out_of_reach_until_the_public_ones_are_over(full_batch):
    """Code that searches the process for the hidden tests finds none in a cell or a public test."""
    for name in ("introspect_cell", "introspect_function"):
        graded = full_batch.graded[name]
        early = list(graded.outcome.cell_errors.values()) + [r.message for r in graded.results if r.public]
        found = [m for m in early if "FOUND_HIDDEN" in m]
        assert found and all("FOUND_HIDDEN 0 " in m for m in found), found


def test_the_course_code_of_earlier_answers_is_not_in_the_child_as_text(batch):
    """A notebook that runs the course's version of earlier answers (given cells) finds only
    their compiled form in its process: a cell that looks for their text finds none."""
    found = [m for m in batch.graded["given_text"].outcome.cell_errors.values() if "GIVEN_TEXT" in m]
    assert found and all("GIVEN_TEXT 0 characters" in m for m in found), found
    if batch.stage.id >= "04":  # the stages whose notebooks hold earlier answers (release/answers.md)
        assert batch.tests.given, batch.stage.id


def _unreadable(folder: Path) -> dict[str, Path]:
    bomb = folder / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("notebook.ipynb", "w", force_zip64=True) as member:
            chunk = b" " * (1 << 20)
            for _ in range(200):  # 200 MB of spaces in a zip of a few hundred KB
                member.write(chunk)
    huge = folder / "huge.ipynb"
    with open(huge, "wb") as handle:
        handle.write(b'{"cells": [], "pad": "')
        handle.truncate(100 * 1024**2)
    deep = folder / "deep.ipynb"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    garbage = folder / "garbage.ipynb"
    garbage.write_bytes(bytes(range(256)) * 64)
    return {"bomb": bomb, "huge": huge, "deep": deep, "garbage": garbage}


def test_unreadable_files_get_a_valid_zero_and_a_reason(tmp_path):
    stage = get_stage("01_tokenisation")
    paths = _unreadable(tmp_path)
    reference = submission(stage.id, tmp_path, "reference")
    graded = grade_into_folder(
        [*paths.values(), reference], stage_tests(stage), tmp_path / "out", FAST, workers=2, progress=False
    )
    by_name = {g.name: g for g in graded}
    assert by_name["reference"].total == sum(dict(questions(stage.id)).values())
    for name in paths:
        doc = json.loads((tmp_path / "out" / name / "results.json").read_text())
        assert doc["score"] == 0 and len(doc["tests"]) == len(by_name["reference"].results)
        assert "could not be graded" in doc["output"], doc["output"]
    assert "larger than" in by_name["bomb"].outcome.fatal and "larger than" in by_name["huge"].outcome.fatal
    assert "nested too deeply" in by_name["deep"].outcome.fatal


def _modules(batch, name: str, when: str) -> list[tuple[str, str | None, list[str]]]:
    lines = [line for line in _output(batch, name).splitlines() if line.startswith(f"MODULES {when} ")]
    assert lines, _output(batch, name)[-2000:]
    return [tuple(entry) for entry in json.loads(lines[0].split(" ", 2)[2])]


def test_the_child_holds_no_reference_code_while_cells_and_hidden_probes_run(batch):
    """What the child has loaded (beyond the standard library and the installed packages)
    is the kit, the engine, the stage's suites, the submission and modules made at run
    time from none of the project's files: no solutions module, no stage file, and
    nothing in them that is a graded function of the stage."""
    units = refscan.reference_units(batch.stage)
    suites = {"cells": ["gptcourse_suite_0"], "hidden": ["gptcourse_suite_0", "gptcourse_suite_1"]}
    for name, when in (("modules_cell", "cells"), ("modules_function", "hidden")):
        modules = _modules(batch, name, when)
        names = [n for n, _, _ in modules]
        assert "submission" in names and sorted(n for n in names if n.startswith("gptcourse_suite")) == suites[when], (
            names
        )
        found = []
        for module, path, sources in modules:
            if module == "submission" or module.startswith("gptcourse_suite"):
                continue  # the student's cells; the suites (tests/test_reachable.py scans those)
            if (
                path is None or not Path(path).is_absolute()
            ):  # made at run time (by a compiled package, torch.classes): its functions come from no file of ours
                assert not [s for s in sources if s.startswith(str(ROOT)) or s.endswith(" tests>")], (module, sources)
                continue
            assert Path(path).resolve().is_relative_to(ROOT / "autograder"), (
                module,
                path,
            )  # the kit, the engine, the child's script
            found += refscan.structural_matches(Path(path).read_text(encoding="utf-8"), module, units)
        assert not found, found
