"""Smoke tests of the benchmark code (benchmarks/, `make bench`) at tiny sizes: the measuring
tools, the naive BPE loop and its estimate, the class of submissions, and the report.
No timing is asserted; otter, nbgrader and kernels are not started here."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.course import get_stage  # noqa: E402
from benchmarks import bench_bpe, bench_grading, measure, plain_otter, run  # noqa: E402

TEXT = ("low " * 5 + "lowest " * 2 + "newer " * 6 + "wider " * 3 + "new " * 2 + "\n") * 20 + "the quick brown fox jumps over the lazy dog\n" * 7


def test_run_measured_reports_wall_time_memory_and_exit_status():
    done = measure.run_measured([sys.executable, "-c", "import sys; x = bytearray(60 * 2**20); print('hi'); sys.exit(3)"])
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


def test_class_mix_and_plain_otter_zip(tmp_path):
    paths, mix = bench_grading.class_notebooks(get_stage("01_tokenisation"), tmp_path / "class", 8)
    assert len(paths) == 8 == sum(mix.values()) and mix["empty stub"] == 2 and mix["mistake"] == 4
    assert len({p.name for p in paths}) == 8 and all(json.loads(p.read_text())["cells"] for p in paths)
    import zipfile

    with zipfile.ZipFile(plain_otter.write_zip(tmp_path / "plain.zip")) as archive:
        names = archive.namelist()
        assert "otter_config.json" in names and len([n for n in names if n.startswith("tests/")]) == len(plain_otter.CASES)
        for name in names:
            if name.startswith("tests/"):
                env: dict = {}
                exec(archive.read(name).decode(), env)  # a valid OK-format test file
                assert env["OK_FORMAT"] and env["test"]["suites"][0]["cases"]


def test_report_renders_from_recorded_figures():
    one = {"wall_s": 4.0, "tree_peak_mib": 300.0, "max_rss_mib": 250.0, "runs": [4.0], "ok": True}
    grading = {"repeats": 1, "stages": {"01_tokenisation": {
        "gptcourse": one, "otter": {**one, "wall_s": 12.0}, "nbgrader": {**one, "wall_s": 6.0}, "plain_otter": {**one, "wall_s": 11.0},
        "scores": {"gptcourse": 32.0, "otter": 32.0, "nbgrader": 32.0, "plain_otter": 19.0}, "nbgrader_generate_s": 5.0}},
        "plain_otter": {"stage": "01_tokenisation", "cases": 20, "questions": 6}}
    text = run.render_grading(grading)
    assert "| 01_tokenisation | 4.00 | 12.00 | **0.33** | yes |" in text and "Plain otter" in text
    row = {"workers": 1, "n": 8, "wall_s": 4.0, "tree_peak_mib": 300.0, "graded": 8, "per_submission_s": 0.5, "per_minute": 120.0, "first_result_s": 3.0, "quarters_s_per_sub": [0.1] * 4}
    text = run.render_class({"stage": "01_tokenisation", "mix": {"mistake": 4, "empty stub": 2, "reference or alternative": 2}, "runs": [row, {**row, "n": 16, "wall_s": 6.0}]})
    assert "the 8 extra ones cost 0.25 s each" in text
    checks = {"01_tokenisation": {"kernel_start_s": 0.5, "loading_s": 2.0, "checks": [{"cell": 'check("a")', "first_s": 2.5, "second_s": 2.0, "report": "a: public tests passed", "passed": True}]}}
    assert "Checks over the goal" in run.render_checks(checks)
