"""gptcourse train / sample: real (tiny) training runs on CPU, checkpoints, resuming, sampling.

Everything here trains the reference GPT for real, at sizes that take seconds. The
GPU tests (marker ``gpu``) run the CUDA path with bf16 autocast and torch.compile.
"""

import argparse
import json
import math

import pytest
import torch

from solutions.data import load_corpus
from training import checkpoint, loop
from training.cli import main, sample_text
from training.data import prepare
from training.presets import CPU, GPU, PRESETS, TINY, get_preset

# a one-layer model that learns visibly in a few dozen steps
SMALL = TINY.replace(
    name="test",
    n_layer=1,
    n_head=2,
    n_embd=32,
    block_size=32,
    batch_size=16,
    steps=60,
    lr=3e-3,
    min_lr=3e-4,
    warmup=10,
    eval_interval=20,
    eval_iters=4,
    sample_tokens=0,
    threads=None,
)
CPU_DEVICE = torch.device("cpu")


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    """One thread: on a busy 2-core machine a second one mostly waits at every barrier
    (GPTCOURSE_THREADS: also in the training loop and the commands, which set their own)."""
    monkeypatch.setenv("GPTCOURSE_THREADS", "1")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def text() -> str:
    return load_corpus("default")[:40_000]


@pytest.fixture(scope="module")
def corpus(text):
    return prepare("default", text=text)


@pytest.fixture(scope="module")
def corpus_file(text, tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "docs.txt"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_short_run_lowers_the_validation_loss(corpus, tmp_path):
    result = loop.run(SMALL, corpus, CPU_DEVICE, tmp_path, progress=False)
    h = result.history
    assert h["step"] == [0, 20, 40, 60]
    assert len(h["lr"]) == len(h["batch_loss"]) == 60 and h["batch_step"] == list(range(1, 61))
    # a fresh model predicts about uniformly: ln(V); 60 steps learn character frequencies and more
    assert abs(h["val_loss"][0] - math.log(corpus.vocab_size)) < 0.3
    assert result.final_val < h["val_loss"][0] - 1.2, h["val_loss"]
    assert result.final_val == h["val_loss"][-1]  # every evaluation measures the whole held-out split
    assert result.tokens == 60 * SMALL.batch_size * SMALL.block_size and result.tokens_per_second > 0


def test_checkpoint_is_plain_data_and_restores_the_model(corpus, tmp_path):
    result = loop.run(SMALL.replace(steps=20), corpus, CPU_DEVICE, tmp_path, progress=False)
    raw = torch.load(tmp_path / "ckpt.pt", weights_only=True)  # no pickled objects inside
    assert raw["step"] == 20 and raw["tokenizer"] == corpus.tokenizer.state()
    model, tokenizer = checkpoint.model_from(checkpoint.load(tmp_path / "ckpt.pt"))
    x = corpus.val[:32][None]
    assert torch.equal(model(x)[0], result.model.eval()(x)[0])
    assert tokenizer.decode(tokenizer.encode("Return the value.")) == "Return the value."


def test_a_resumed_run_continues_exactly_as_an_uninterrupted_one(corpus, tmp_path):
    preset = SMALL.replace(steps=40)
    straight = loop.run(preset, corpus, CPU_DEVICE, tmp_path / "a", progress=False)
    first = loop.run(preset, corpus, CPU_DEVICE, tmp_path / "b", progress=False, stop_after=15)
    assert first.step == 15 and first.final_val is None
    state = checkpoint.load(tmp_path / "b" / "ckpt.pt")
    assert state["step"] == 15
    resumed = loop.run(preset, corpus, CPU_DEVICE, tmp_path / "b", progress=False, resume=state)
    # same batches (the generator's state is saved), same optimiser state: identical floats
    assert resumed.history["batch_loss"] == straight.history["batch_loss"]
    assert resumed.history["lr"] == straight.history["lr"]
    assert resumed.final_val == straight.final_val
    for (name, a), b in zip(straight.model.state_dict().items(), resumed.model.state_dict().values()):
        assert torch.equal(a, b), name


def test_resume_refuses_a_checkpoint_of_another_model(corpus, tmp_path):
    loop.run(SMALL.replace(steps=5), corpus, CPU_DEVICE, tmp_path, progress=False)
    state = checkpoint.load(tmp_path / "ckpt.pt")
    with pytest.raises(ValueError, match="does not match"):
        loop.run(SMALL.replace(n_embd=64), corpus, CPU_DEVICE, None, progress=False, resume=state)


def test_resuming_on_another_text_says_why_it_cannot(corpus_file, tmp_path, capsys):
    """The usual cause: Tiny Shakespeare could not be loaded and the default corpus stood in."""
    from autograder.cli import main as gptcourse

    out = tmp_path / "run"
    args = ["train", "--corpus", str(corpus_file), "--preset", "tiny", "--out", str(out), "--threads", "1", "--quiet"]
    assert gptcourse([*args, "--steps", "2", "--eval-interval", "2", "--sample-tokens", "0"]) == 0
    other = tmp_path / "other.txt"
    other.write_text("an entirely different alphabet: \u00e9\u00e8\u00ea\n" * 200, encoding="utf-8")
    capsys.readouterr()
    resume = ["train", "--resume", str(out / "ckpt.pt"), "--corpus", str(other), "--steps", "4", "--quiet"]
    assert gptcourse(resume) == 2
    error = capsys.readouterr().err
    assert "does not give the tokenizer of the checkpoint" in error and "trained on another text" in error
    assert "GPTCOURSE_SHAKESPEARE" in error


def test_resume_refuses_options_that_contradict_the_checkpoint(corpus_file, tmp_path, capsys):
    """--tokenizer, --bpe-merges, --positions and --preset describe the model: a resumed run keeps
    its checkpoint's, so a different value given on the command line is an error, not ignored."""
    from autograder.cli import main as gptcourse
    from training.cli import add_commands, refuse_contradictions

    out = tmp_path / "run"
    args = ["train", "--corpus", str(corpus_file), "--preset", "tiny", "--out", str(out), "--threads", "1", "--quiet"]
    learn = ["--tokenizer", "byte-bpe", "--bpe-merges", "20", "--steps", "1", "--eval-interval", "1"]
    assert gptcourse([*args, *learn, "--sample-tokens", "0"]) == 0
    ckpt = str(out / "ckpt.pt")
    resume = ["train", "--resume", ckpt, "--steps", "2", "--threads", "1", "--quiet", "--sample-tokens", "0"]
    capsys.readouterr()
    for option, asked, kept in (
        ("--positions", "rope", "learned"),
        ("--tokenizer", "char", "byte-bpe"),
        ("--bpe-merges", "30", "20"),
        ("--preset", "cpu", "tiny"),
    ):
        assert gptcourse([*resume, option, asked]) == 2, option
        error = capsys.readouterr().err
        assert f"{option} {asked} contradicts the checkpoint {ckpt}, whose value is {kept}:" in error, error
        assert "keeps its checkpoint's model and tokenizer" in error and "--out" in error, error
    assert checkpoint.load(ckpt)["step"] == 1  # nothing ran
    # the checkpoint's own values are no contradiction: the run goes on
    agree = ["--positions", "learned", "--tokenizer", "byte-bpe", "--bpe-merges", "20", "--preset", "tiny"]
    assert gptcourse([*resume, *agree]) == 0
    assert checkpoint.load(ckpt)["step"] == 2

    # a char tokenizer has no merges to agree with
    state = checkpoint.load(ckpt)
    state["tokenizer"] = {"kind": "char", "chars": "ab"}
    parsed = argparse.ArgumentParser()
    add_commands(parsed.add_subparsers(dest="command"))
    with pytest.raises(ValueError, match=r"--bpe-merges 30 .* whose value is none \(a char tokenizer\)"):
        refuse_contradictions(parsed.parse_args([*resume, "--bpe-merges", "30"]), state)


def test_learning_rate_warms_up_then_decays_to_min_lr():
    p = CPU.replace(steps=1000, warmup=100, lr=2e-3, min_lr=2e-4)
    lrs = [loop.lr_at(s, p) for s in range(p.steps)]
    assert lrs[0] == pytest.approx(2e-3 / 100) and lrs[99] == pytest.approx(2e-3)
    assert all(a < b for a, b in zip(lrs[:99], lrs[1:100]))
    assert all(a >= b for a, b in zip(lrs[100:], lrs[101:]))
    assert lrs[-1] == pytest.approx(2e-4)


def test_cli_trains_resumes_and_samples(corpus_file, tmp_path, capsys):
    from autograder.cli import main as gptcourse  # the console script's entry point

    out = tmp_path / "run"
    args = [
        "train",
        "--corpus",
        str(corpus_file),
        "--preset",
        "tiny",
        "--lr",
        "1e-3",
        "--eval-interval",
        "5",
        "--out",
        str(out),
        "--threads",
        "1",
        "--quiet",
    ]
    assert gptcourse([*args, "--steps", "10", "--sample-tokens", "40"]) == 0
    printed = capsys.readouterr().out
    assert "kept the weights of step 10: validation loss" in printed and "--- sample (40 tokens" in printed
    assert "tokens/s" in printed
    assert (out / "losses.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 10 and 0 < summary["final_val_loss"] < math.log(100)
    assert summary["best_step"] == 10 and summary["best_val_loss"] == summary["final_val_loss"]

    assert (
        gptcourse(["train", "--resume", str(out / "ckpt.pt"), "--steps", "15", "--quiet", "--sample-tokens", "0"]) == 0
    )
    state = checkpoint.load(out / "ckpt.pt")
    assert (
        state["step"] == 15 and len(state["history"]["batch_loss"]) == 15 and state["history"]["step"] == [0, 5, 10, 15]
    )
    capsys.readouterr()

    ckpt = str(out / "ckpt.pt")
    assert gptcourse(["sample", "--checkpoint", ckpt, "--prompt", "The ", "--tokens", "30", "--temperature", "0"]) == 0
    cached = capsys.readouterr().out
    assert cached.startswith("The ") and len(cached) == len("The ") + 30 + 1
    assert (
        gptcourse(
            ["sample", "--checkpoint", ckpt, "--prompt", "The ", "--tokens", "30", "--temperature", "0", "--no-cache"]
        )
        == 0
    )
    assert capsys.readouterr().out == cached  # greedy: the KV cache changes nothing


UNREADABLE = {
    "text.pt": b"hello world\n",
    "noise.pt": bytes(range(256)) * 4,
    "cut.pt": b"PK\x03\x04" + bytes(300),  # the start of a zip, cut short
}


def test_a_shakespeare_run_that_fell_back_is_named_by_the_corpus_it_trained_on(tmp_path, monkeypatch, capsys):
    """Without Tiny Shakespeare (no local copy, no cache, no network) the corpus falls back on the
    default one, and the run says so: its announcement, summary and checkpoint name "default"."""
    import urllib.request

    def offline(*args, **kwargs):
        raise OSError("no network in this test")

    monkeypatch.delenv("GPTCOURSE_SHAKESPEARE", raising=False)
    monkeypatch.setenv("GPTCOURSE_CACHE", str(tmp_path / "empty cache"))
    monkeypatch.setattr(urllib.request, "urlopen", offline)
    out = tmp_path / "run"
    args = ["train", "--corpus", "shakespeare", "--preset", "tiny", "--steps", "1", "--eval-interval", "1"]
    assert main([*args, "--out", str(out), "--quiet", "--sample-tokens", "0", "--threads", "1"]) == 0
    assert "corpus default:" in capsys.readouterr().out
    assert json.loads((out / "summary.json").read_text())["corpus"] == "default"
    assert checkpoint.load(out / "ckpt.pt")["corpus"] == "default"


def test_a_new_run_into_a_folder_with_a_checkpoint_keeps_the_earlier_one(corpus_file, tmp_path, capsys):
    """A fresh run writes its own ckpt.pt at its first evaluation; an earlier run's ckpt.pt in the
    same folder is moved aside first, named by its time, and the run says where."""
    out = tmp_path / "run"
    args = ["train", "--corpus", str(corpus_file), "--preset", "tiny", "--steps", "2", "--eval-interval", "1"]
    args += ["--out", str(out), "--threads", "1", "--quiet", "--sample-tokens", "0"]
    assert main(args) == 0
    first = (out / "ckpt.pt").read_bytes()
    capsys.readouterr()
    assert main([*args, "--seed", "7"]) == 0
    kept = sorted(out.glob("ckpt-*.pt"))
    assert len(kept) == 1 and kept[0].read_bytes() == first
    assert f"kept as {kept[0]}" in capsys.readouterr().out
    assert (out / "ckpt.pt").read_bytes() != first
    assert main(["train", "--resume", str(out / "ckpt.pt"), "--steps", "3", "--quiet", "--sample-tokens", "0"]) == 0
    assert len(list(out.glob("ckpt-*.pt"))) == 1  # resuming the folder's own checkpoint moves nothing


def test_cli_errors_are_one_line_and_exit_2(corpus_file, tmp_path, capsys):
    assert main(["sample", "--checkpoint", str(tmp_path / "missing.pt")]) == 2
    assert "no checkpoint at" in capsys.readouterr().err
    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--corpus",
                str(corpus_file),
                "--preset",
                "tiny",
                "--steps",
                "3",
                "--out",
                str(out),
                "--threads",
                "1",
                "--quiet",
                "--sample-tokens",
                "0",
            ]
        )
        == 0
    )
    assert main(["sample", "--checkpoint", str(out / "ckpt.pt"), "--prompt", "\u2603"]) == 2
    assert "not in the vocabulary" in capsys.readouterr().err
    assert main(["train", "--resume", str(out / "ckpt.pt"), "--steps", "3", "--quiet"]) == 2
    assert "raise --steps" in capsys.readouterr().err
    assert main(["train", "--corpus", str(tmp_path / "nothing.txt"), "--quiet"]) == 2
    assert "unknown corpus" in capsys.readouterr().err
    for name, data in UNREADABLE.items():  # files that are no checkpoint: one line, no traceback
        (tmp_path / name).write_bytes(data)
        assert main(["sample", "--checkpoint", str(tmp_path / name)]) == 2
        assert main(["train", "--resume", str(tmp_path / name), "--quiet"]) == 2
        errors = capsys.readouterr().err
        assert errors.count("is not a gptcourse checkpoint (torch could not read it") == 2, errors
    (tmp_path / "a file").write_text("")
    stuck = tmp_path / "a file" / "run"  # a folder that cannot be made: refused before the corpus is read
    assert main(["train", "--corpus", str(tmp_path / "nothing.txt"), "--out", str(stuck), "--quiet"]) == 2
    assert "cannot write the run's files into" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert main(["train", "--device", "cuda", "--corpus", str(corpus_file), "--quiet"]) == 2
        assert "no CUDA GPU" in capsys.readouterr().err


def test_bpe_tokenizer_trains_and_its_checkpoint_decodes_words(text, tmp_path):
    corpus = prepare("default", tokenizer="bpe", bpe_merges=60, text=text)
    assert corpus.tokenizer.kind == "bpe" and corpus.vocab_size > 60
    result = loop.run(SMALL.replace(steps=10, eval_interval=10), corpus, CPU_DEVICE, tmp_path, progress=False)
    model, tokenizer = checkpoint.model_from(checkpoint.load(tmp_path / "ckpt.pt"))
    assert tokenizer.state() == corpus.tokenizer.state()
    words = sample_text(model, tokenizer, "the value", 20, seed=0)
    assert words.startswith("the value") and "\n" not in words
    assert result.final_val is not None and math.isfinite(result.final_val)


def test_presets_are_consistent():
    assert set(PRESETS) == {"cpu", "gpu", "tiny"} and get_preset("gpu") is GPU
    for p in PRESETS.values():
        assert p.n_embd % p.n_head == 0 and p.warmup <= p.steps and p.min_lr <= p.lr
    with pytest.raises(ValueError, match="unknown preset"):
        get_preset("huge")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_run_with_bf16_autocast_and_compile(corpus, tmp_path):
    preset = SMALL.replace(steps=100, eval_interval=50, autocast="bf16", compile="model")
    result = loop.run(preset, corpus, torch.device("cuda"), tmp_path, progress=False)
    assert next(result.model.parameters()).device.type == "cuda"
    assert result.final_val < result.history["val_loss"][0] - 1.2, result.history["val_loss"]
    # the checkpoint is device-independent: it samples on the CPU
    model, tokenizer = checkpoint.model_from(checkpoint.load(tmp_path / "ckpt.pt"), "cpu")
    assert sample_text(model, tokenizer, "The ", 20, temperature=0).startswith("The ")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_cli_train_and_sample(corpus_file, tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--device",
                "cuda",
                "--corpus",
                str(corpus_file),
                "--preset",
                "tiny",
                "--steps",
                "40",
                "--out",
                str(out),
                "--quiet",
                "--sample-tokens",
                "20",
            ]
        )
        == 0
    )
    assert "cuda" in json.loads((out / "summary.json").read_text())["device"]
    capsys.readouterr()
    ckpt = str(out / "ckpt.pt")
    assert (
        main(
            [
                "sample",
                "--device",
                "cuda",
                "--checkpoint",
                ckpt,
                "--prompt",
                "The ",
                "--tokens",
                "40",
                "--temperature",
                "0",
            ]
        )
        == 0
    )
    on_gpu = capsys.readouterr().out
    assert (
        main(
            [
                "sample",
                "--device",
                "cuda",
                "--checkpoint",
                ckpt,
                "--prompt",
                "The ",
                "--tokens",
                "40",
                "--temperature",
                "0",
                "--no-cache",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out == on_gpu and on_gpu.startswith("The ")
