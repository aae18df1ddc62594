"""The GPU check and the training benchmarks, run here in their CPU modes at tiny sizes.

``benchmarks/gpu_check.sh --cpu`` takes every step the GPU check takes on a CUDA machine
(nanoGPT's own train.py and the preset side by side, one judge for both kept checkpoints,
sampling with and without the KV cache, the notebooks 07-10 as plain Python, the gpu-marked
tests, the report), at tiny sizes on the CPU: what a GPU session will run is known to run.
No timing is asserted. The notebooks' runner and the tokenizer/position benchmark have
their own quicker tests.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import SHAKESPEARE

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import gpu_results, positions_tokenizers, run_notebook  # noqa: E402

needs_shakespeare = pytest.mark.skipif(
    not SHAKESPEARE.exists(), reason="no local copy of Tiny Shakespeare (tests/support.py says where it is looked for)"
)


def test_settings_replace_the_option_lines_of_a_cell():
    source = 'TOKENIZER = "char"  # or "byte-bpe"\nPOSITIONS = "learned"\nx = 1\n'
    changed, done = run_notebook.apply_settings(source, {"POSITIONS": '"rope"', "STEPS": "3"})
    assert changed == 'TOKENIZER = "char"  # or "byte-bpe"\nPOSITIONS = "rope"\nx = 1\n' and done == {"POSITIONS"}


def test_a_replacement_changes_the_text_wherever_it_stands_and_a_missing_one_stops_the_run(tmp_path, monkeypatch):
    source = "config = GPTConfig(n_embd=384, dropout=0.2)\nsettings = dict(steps=800, lr=1e-3)\n"
    changed = run_notebook.apply_replacements(source, [("dropout=0.2)", "dropout=0.0)"), ("steps=800,", "steps=9,")])
    assert changed == "config = GPTConfig(n_embd=384, dropout=0.0)\nsettings = dict(steps=9, lr=1e-3)\n"
    monkeypatch.chdir(tmp_path)  # main() moves into its work folder: this worker's others must not follow
    with pytest.raises(SystemExit) as stopped:
        run_notebook.main(["07_gpt", "--workdir", str(tmp_path), "--replace", "no such recipe", "x"])
    assert stopped.value.code == 2


@needs_shakespeare
def test_the_positions_and_tokenizers_benchmark_at_tiny_size(monkeypatch, capsys):
    monkeypatch.setenv("GPTCOURSE_SHAKESPEARE", str(SHAKESPEARE))
    assert (
        positions_tokenizers.main(
            ["--steps", "6", "--threads", "1", "--chars", "40000", "--eval-iters", "1", "--no-write"]
        )
        == 0
    )
    printed = capsys.readouterr().out
    for tokenizer in ("char", "byte-bpe"):
        for positions in ("learned", "sinusoidal", "rope", "none"):
            assert f"| {tokenizer} | {positions} |" in printed


@pytest.mark.slow
@needs_shakespeare
def test_the_gpu_check_runs_in_its_cpu_mode(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    env = {**os.environ, "OUT": str(out), "WORK": str(work), "PYTHON": sys.executable}
    env |= {"GPTCOURSE_SHAKESPEARE": str(SHAKESPEARE), "OMP_NUM_THREADS": "1", "GPTCOURSE_THREADS": "1"}
    done = subprocess.run(
        ["bash", "benchmarks/gpu_check.sh", "--cpu"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=3000
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    report = (out / "gpu_results.md").read_text()
    side = json.loads((out / "side_by_side.json").read_text())
    assert side["sampling"]["same_tokens"] and side["nanogpt"]["best_val_exact"] > 0
    assert "the texts are identical" in report and "| nanoGPT `shakespeare_char` |" in report
    for stage in ("07_gpt", "08_generation", "09_rnn", "10_encoders"):
        assert f"- `{stage}`:" in report
    assert (out / "losses.png").exists() and (out / "check.log").exists() and (out / "logs.tgz").exists()
    assert "- 1. the gpu-marked tests: passed" in report and "FAILED" not in report and "SKIPPED" not in report
    assert "tolerance margins on cpu (benchmarks/RESULTS_margins.md): passed" in report
    figures = json.loads((out / "gpu_results.json").read_text())
    assert figures["real_run_07"]["steps"] == 20 and figures["side_by_side"]["sampling"]["same_tokens"]
    assert [c["recipe"] for c in figures["real_run_07_candidates"]][0] == "no dropout"


@needs_shakespeare
def test_the_gpu_check_past_its_deadline_still_reports_and_fails(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "WORK": str(tmp_path / "work"), "PYTHON": sys.executable, "DEADLINE": "0"}
    env |= {"GPTCOURSE_SHAKESPEARE": str(SHAKESPEARE)}
    done = subprocess.run(
        ["bash", "benchmarks/gpu_check.sh", "--cpu"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-2000:]
    report = (out / "gpu_results.md").read_text()
    assert "- 1. the gpu-marked tests: SKIPPED (no time left)" in report
    assert "side by side: no record" in report and "- notebook07.json: no record" in report


def test_the_report_reads_the_notebook_records(tmp_path):
    records = {
        "07_gpt": [{"cell": 3, "tags": "gptcourse:train", "seconds": 60.0, "output": "kept the weights of step 8"}]
    }
    (tmp_path / "nb.json").write_text(json.dumps(records))
    lines = gpu_results.notebook_lines(tmp_path / "nb.json")
    assert lines[1] == "  - training cell 3: 60.0 s; T4 estimate 10.5 min; kept the weights of step 8"
