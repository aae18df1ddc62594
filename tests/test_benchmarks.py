"""Smoke tests of the benchmark code (benchmarks/, `make bench`) at tiny sizes: the measuring
tools, the naive BPE loop and its estimate, the class of submissions, the otter autograders,
one stage graded by every tool of the grading benchmark, and the report. No timing is
asserted; only the grading benchmark at tiny size (marked slow) starts otter, nbgrader and
kernels."""

import doctest
import json
import sys
import types
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.course import all_stages, get_stage  # noqa: E402
from benchmarks import bench_bpe, bench_grading, measure, plain_otter, run  # noqa: E402

TEXT = (
    "low " * 5 + "lowest " * 2 + "newer " * 6 + "wider " * 3 + "new " * 2 + "\n"
) * 20 + "the quick brown fox jumps over the lazy dog\n" * 7


def test_run_measured_reports_wall_time_memory_and_exit_status():
    done = measure.run_measured(
        [sys.executable, "-c", "import sys; x = bytearray(60 * 2**20); print('hi'); sys.exit(3)"]
    )
    assert done.returncode == 3 and done.output.strip() == "hi"
    assert done.wall_s > 0 and done.max_rss_mib >= 60 and done.tree_peak_mib >= 0
    m = measure.machine()
    assert m["cores"] >= 1 and m["torch"] and m["tokenizers"] != "not installed"


def test_naive_loop_and_the_state_after_some_merges_agree_with_the_reference():
    from solutions.bpe import train_bpe, word_frequencies

    reference = train_bpe(TEXT, 20)
    merges, _ = bench_bpe.naive_steps(word_frequencies(TEXT), 20)
    assert merges == reference
    state = bench_bpe.state_after(word_frequencies(TEXT), reference[:8])
    assert bench_bpe.naive_steps(state, 5)[0] == reference[8:13]


def test_bpe_benchmark_at_tiny_size_renders():
    result = bench_bpe.run(totals=(8, 16), repeats=1, window=2, prefix=4, text=TEXT, say=lambda *_: None)
    assert result["naive"]["same_merges_as_reference"]
    assert result["ours"][16]["merges"] == 16
    assert all(v[8]["merges"] > 0 for v in result["hf"].values())
    text = run.render_bpe(json.loads(json.dumps(result, default=str), object_hook=_int_keys))
    assert "naive loop (estimated)" in text and "tokenizers, WhitespaceSplit, 1 thread" in text


def _int_keys(d: dict) -> dict:
    return {int(k) if isinstance(k, str) and k.isdigit() else k: v for k, v in d.items()}


def test_class_mix(tmp_path):
    paths, mix = bench_grading.class_notebooks(get_stage("01_tokenisation"), tmp_path / "class", 8)
    assert len(paths) == 8 == sum(mix.values()) and mix["empty stub"] == 2 and mix["mistake"] == 4
    assert len({p.name for p in paths}) == 8 and all(json.loads(p.read_text())["cells"] for p in paths)


def _otter_tests(archive_path: Path, folder: Path) -> dict:
    """The zip's tests as otter reads them (``OKTestFile``), by question; fails unless it is an otter autograder."""
    from otter.test_files.ok_test import OKTestFile

    with zipfile.ZipFile(archive_path) as archive:
        names = archive.namelist()
        assert json.loads(archive.read("otter_config.json"))["lang"] == "python"
        archive.extractall(folder)
    tests = {}
    for name in names:
        if name.startswith("tests/"):
            env: dict = {}
            exec((folder / name).read_text(), env)
            assert env["OK_FORMAT"] is True, name
            tests[Path(name).stem] = OKTestFile.from_file(str(folder / name))
    return tests


def test_otter_zip_of_every_stage_runs_the_public_tests_of_each_question(tmp_path, monkeypatch):
    assert doctest.testmod(plain_otter).failed == 0
    for stage in all_stages():
        cases = stage.tests().cases  # the public suite; fixtures (hidden expected values) play no part
        public = plain_otter.public_points(cases)
        assert public and set(public) == {c.qid for c in cases if c.public}, stage.id
        tests = _otter_tests(plain_otter.write_stage_zip(cases, tmp_path / f"{stage.id}.zip"), tmp_path / stage.id)
        assert set(tests) == set(public), stage.id
        for qid, test in tests.items():
            assert test.possible == pytest.approx(public[qid], abs=1e-9) and len(test.test_cases) == 1, (stage.id, qid)
            asked = []

            def run_public(cases, question, names):  # the harness's, as check(question) calls it
                asked.append((cases, question, names["student_code"]))  # noqa: B023 (called in this iteration only)
                return earned == public[qid], "a report", earned  # noqa: B023

            harness = types.SimpleNamespace(
                suite=types.SimpleNamespace(cases="the public cases"), run_public=run_public
            )
            monkeypatch.setitem(sys.modules, "gptcourse_checks", harness)
            earned = public[qid]
            test.run({"student_code": "here"})
            assert test.passed_all and test.score == pytest.approx(public[qid]), (stage.id, qid, test.test_case_results)
            earned = public[qid] - 0.5  # a failed public test costs points: otter must see it
            test.run({"student_code": "here"})
            assert not test.passed_all and test.score == 0, (stage.id, qid)
            assert asked == [("the public cases", qid, "here")] * 2


def test_otter_doctest_zip_of_stage_01_parses(tmp_path):
    tests = _otter_tests(plain_otter.write_doctest_zip(tmp_path / "doctests.zip"), tmp_path / "doctests")
    assert {q: t.possible for q, t in tests.items()} == {q: p for q, p, _ in plain_otter.CASES}
    assert sum(len(t.test_cases) for t in tests.values()) == plain_otter.number_of_cases()


@pytest.mark.slow
def test_grading_benchmark_at_tiny_size(tmp_path):
    """Stage 01, one run of every tool (gptcourse, its Gradescope and otter zips, otter natively and
    with doctests, nbgrader): each exits 0 and gives the reference full marks, and the report renders."""
    said: list[str] = []
    result = bench_grading.one_submission([get_stage("01_tokenisation")], tmp_path, repeats=1, say=said.append)
    entry = result["stages"]["01_tokenisation"]
    tools = ("gptcourse", "gradescope", "otter_engine", "otter", "nbgrader", "otter_doctests")
    assert all(entry[t]["ok"] and len(entry[t]["runs"]) == 1 for t in tools), said
    assert entry["max"]["otter"] < entry["max"]["gptcourse"] == entry["max"]["gradescope"] == entry["max"]["nbgrader"]
    assert entry["max"]["otter_engine"] == entry["max"]["gptcourse"]
    assert {t: entry["scores"][t] for t in tools} == {t: entry["max"][t] for t in tools}, said
    assert run.not_full_marks(result) == []
    text = run.render_grading(json.loads(json.dumps(result, default=str)))
    assert "The reference earned full marks from every tool" in text and "**otter with hand-written doctests**" in text


def test_report_renders_from_recorded_figures():
    def one(wall: float, scores: list[float]) -> dict:
        return {
            "wall_s": wall,
            "tree_peak_mib": 300.0,
            "max_rss_mib": 250.0,
            "runs": [wall],
            "scores": scores,
            "ok": True,
        }

    stage = {
        "gptcourse": one(4.0, [32.0]),
        "gradescope": one(5.0, [32.0]),
        "otter_engine": one(7.0, [32.0]),
        "otter": one(8.0, [19.0]),
        "nbgrader": one(6.0, [32.0]),
        "otter_doctests": one(10.0, [19.0]),
        "nbgrader_generate_s": 5.0,
        "scores": {
            "gptcourse": 32.0,
            "gradescope": 32.0,
            "otter_engine": 32.0,
            "otter": 19.0,
            "nbgrader": 32.0,
            "otter_doctests": 19.0,
        },
        "max": {
            "gptcourse": 32.0,
            "gradescope": 32.0,
            "otter_engine": 32.0,
            "otter": 19.0,
            "nbgrader": 32.0,
            "otter_doctests": 19.0,
        },
    }
    grading = {
        "repeats": 1,
        "stages": {"01_tokenisation": stage},
        "otter_doctests": {"stage": "01_tokenisation", "cases": 20, "questions": 6},
    }
    text = run.render_grading(grading)
    assert "| 01_tokenisation | 4.00 | 5.00 | **0.80** | 7.00 | **0.57** | 8.00 | **0.50** | 6.00 | **0.67** |" in text
    assert "| 32/32 / 32/32 / 32/32 / 19/19 / 32/32 |" in text and "full marks from every tool" in text
    assert "**otter zip (engine)**: `otter run -a release/otter/S.zip" in text
    assert "**otter with hand-written doctests**" in text and "public tests only" in text

    def without_otter_zip(e: dict) -> dict:  # as a run made before the otter zip recorded it
        drop = {k: v for k, v in e.items() if k != "otter_engine"}
        return {**drop, **{k: {t: v for t, v in e[k].items() if t != "otter_engine"} for k in ("scores", "max")}}

    older = {**grading, "stages": {sid: without_otter_zip(e) for sid, e in grading["stages"].items()}}
    assert "| 01_tokenisation | 4.00 | 5.00 | **0.80** | 8.00 | **0.50** |" in run.render_grading(older)
    summary = run.render_summary({"grading": grading})
    assert "- **gptcourse grade / otter zip (engine)** (one submission, median of 1-3 runs): 01 0.57." in summary
    assert "- **gptcourse grade / otter (public, in kernel)** (one submission, median of 1-3 runs): 01 0.50." in summary
    short = {**stage, "gradescope": one(5.0, [32.0, 30.0]), "scores": {**stage["scores"], "gradescope": 30.0}}
    grading["stages"]["01_tokenisation"] = short
    assert run.not_full_marks(grading) == ["01_tokenisation gradescope: 32, 30 of 32"]
    assert "**Not full marks on the reference**" in run.render_grading(grading)
    row = {
        "workers": 1,
        "n": 8,
        "wall_s": 4.0,
        "tree_peak_mib": 300.0,
        "graded": 8,
        "per_submission_s": 0.5,
        "per_minute": 120.0,
        "first_result_s": 3.0,
        "quarters_s_per_sub": [0.1] * 4,
    }
    text = run.render_class(
        {
            "stage": "01_tokenisation",
            "mix": {"mistake": 4, "empty stub": 2, "reference or alternative": 2},
            "runs": [row, {**row, "n": 16, "wall_s": 6.0}],
        }
    )
    assert "the 8 extra ones cost 0.25 s each" in text
    checks = {
        "01_tokenisation": {
            "kernel_start_s": 0.5,
            "loading_s": 2.0,
            "checks": [
                {
                    "cell": 'check("a")',
                    "first_s": 2.5,
                    "second_s": 2.0,
                    "report": "a: public tests passed",
                    "passed": True,
                }
            ],
        }
    }
    assert "Checks over the goal" in run.render_checks(checks)


def test_a_run_of_some_sections_carries_the_others_over_and_says_so():
    recorded = {
        "started": "2026-11-23 20:22",
        "command": "make bench        # = .venv/bin/python benchmarks/run.py",
        "load": {"sections": {"4. BPE": {"mean": 5.15, "max": 5.37, "minutes": 0.8}}},
        "grading": {"stages": {}},
        "class": {"runs": []},
        "class_heavy": {"runs": []},
        "bpe": {"totals": []},
    }
    carried = run.carry_over(recorded, ["grading"])
    assert set(carried) == {"carried", "class", "class_heavy", "bpe"} and "grading" not in carried
    assert carried["carried"]["bpe"] == {
        "started": "2026-11-23 20:22",
        "command": recorded["command"],
        "load": recorded["load"]["sections"]["4. BPE"],
    }
    text = run.render_carried(carried["carried"])
    assert "- 4. BPE: made on 2026-11-23 20:22 (UTC) by `make bench`, load mean 5.15, max 5.37" in text
    assert "- 2. a class: made on 2026-11-23 20:22 (UTC) by `make bench`" in text
    again = run.carry_over({**recorded, **carried, "started": "later", "command": "x"}, ["grading"])
    assert again["carried"] == carried["carried"]  # carried twice: still the run that made it
    assert run.carry_over(recorded, list(run.SECTIONS)) == {}
