"""``gptcourse train`` and ``gptcourse sample`` (also ``python -m training train|sample``)."""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import torch

from autograder.kit.threads import configure_threads
from solutions.gpt import get_device
from training import checkpoint, ddp, loop
from training.data import BPE, DEFAULT_BPE_MERGES, TOKENIZERS, ByteBPE, CharTokenizer, Corpus, prepare
from training.generate import generate_fast
from training.model import POSITIONS, TrainGPT
from training.plot import plot_losses
from training.presets import COMPILE, PRESETS, Preset, get_preset


def resolve_device(name: str) -> torch.device:
    """``auto`` (CUDA, then Apple MPS, then CPU) or a named device that must be available.

    Raises:
        ValueError: for an unknown name, or a device this machine does not have.
    """
    if name == "auto":
        return get_device()
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA GPU is available here (try --device auto or cpu)")
    if name == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError("--device mps: Apple's MPS backend is not available here (try --device auto or cpu)")
    if name not in ("cpu", "cuda", "mps"):
        raise ValueError(f"unknown device {name!r}: use auto, cpu, cuda or mps")
    return torch.device(name)


def sample_text(
    model: TrainGPT,
    tokenizer: CharTokenizer | BPE | ByteBPE,
    prompt: str,
    tokens: int,
    *,
    temperature: float = 0.8,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int = 1337,
    cache: bool = True,
) -> str:
    """``prompt`` followed by ``tokens`` generated tokens, decoded (KV cache unless ``cache=False``).

    The draws come from a generator on the model's device, seeded with ``seed``.

    Raises:
        ValueError: if the prompt is empty for this tokenizer or holds unknown characters.
    """
    ids = tokenizer.encode(prompt)
    if not ids:
        raise ValueError(f"the prompt {prompt!r} has no tokens for this model's tokenizer")
    device = next(model.parameters()).device
    idx = torch.tensor([ids], dtype=torch.long, device=device)
    generator = torch.Generator(device=device).manual_seed(seed)
    out = generate_fast(
        model, idx, tokens, temperature=temperature, top_k=top_k, top_p=top_p, generator=generator, cache=cache
    )
    return tokenizer.decode(out[0].tolist())


def default_prompt(tokenizer: CharTokenizer | BPE | ByteBPE) -> str:
    """A newline when the vocabulary has one (as nanoGPT starts), else the first vocabulary entry."""
    if tokenizer.kind == "char":
        return "\n" if "\n" in tokenizer.stoi else tokenizer.chars[0]
    if tokenizer.kind == "byte-bpe":
        return "\n"
    return tokenizer.decode([0])


def cmd_train(args: argparse.Namespace) -> int:
    info = ddp.from_env()
    device = ddp.setup(info, resolve_device(args.device))
    finished = False
    try:
        status = _train(args, info, device)
        finished = True
        return status
    except KeyboardInterrupt:  # the loop has saved a checkpoint and said how to resume
        return 130
    finally:
        ddp.cleanup(info, finished)


def refuse_contradictions(args: argparse.Namespace, state: dict) -> None:
    """Check that ``--preset``, ``--tokenizer``, ``--bpe-merges`` and ``--positions``, where given,
    agree with the checkpoint ``state`` being resumed (a resumed run keeps its model and tokenizer).

    Raises:
        ValueError: naming the first option given whose value is not the checkpoint's.
    """
    tokenizer = state["tokenizer"]
    merges = len(tokenizer["merges"]) if "merges" in tokenizer else f"none (a {tokenizer['kind']} tokenizer)"
    kept = (
        ("--preset", args.preset, state["preset"]["name"]),
        ("--tokenizer", args.tokenizer, tokenizer["kind"]),
        ("--bpe-merges", args.bpe_merges, merges),
        ("--positions", args.positions, checkpoint.config_dict(state)["positions"]),
    )
    for option, asked, value in kept:
        if asked is not None and asked != value:
            raise ValueError(
                f"{option} {asked} contradicts the checkpoint {args.resume}, whose value is {value}: a resumed run"
                " keeps its checkpoint's model and tokenizer (start a new run with --out to change it)"
            )


def _train(args: argparse.Namespace, info: ddp.DistInfo, device: torch.device) -> int:
    """Train as ``args`` ask (a new run, or the resumed checkpoint's), write the summary and loss curves, sample."""
    state = checkpoint.resumable(checkpoint.load(args.resume), args.resume) if args.resume else None
    preset, corpus_name, tok_kind, merges = _resolve_run(args, state, device)
    preset = _apply_overrides(preset, args)
    threads = loop.cpu_threads(preset, info) if device.type == "cpu" else 0
    out = Path(args.out) if args.out else Path(args.resume).parent if args.resume else Path("runs") / preset.name
    say = print if info.is_main else (lambda *a, **k: None)
    if info.is_main:
        _refuse_unwritable(out)
        _keep_earlier_checkpoint(out, args.resume, say)
    corpus = prepare(corpus_name, tok_kind, merges)
    if state is not None:
        _refuse_unresumable(args, state, preset, corpus, corpus_name)
    where = _where(info, device, threads)
    corpus_name = corpus.name  # "default" where Tiny Shakespeare could not be loaded
    _announce(say, preset, corpus, corpus_name, where, state)
    result = loop.run(preset, corpus, device, out, resume=state, info=info, progress=not args.quiet, log=say)
    if not info.is_main:
        return 0
    plot = _write_outputs(out, result, preset, corpus, corpus_name, where)
    _report(say, result, corpus, plot)
    tokens = args.sample_tokens if args.sample_tokens is not None else preset.sample_tokens
    if tokens > 0:
        text = sample_text(result.model, corpus.tokenizer, default_prompt(corpus.tokenizer), tokens, seed=preset.seed)
        say(f"\n--- sample ({tokens} tokens, temperature 0.8) ---\n{text}\n---")
    return 0


def _refuse_unwritable(out: Path) -> None:
    """Check, before any training, that the run's files can be written into ``out`` (made if missing).

    Raises:
        ValueError: naming the folder and why it cannot be written.
    """
    probe = out / ".gptcourse-write-check"
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise ValueError(f"cannot write the run's files into {out}: {error.strerror or error}") from error


def _keep_earlier_checkpoint(out: Path, resume: str | None, say) -> None:
    """Move aside a ``ckpt.pt`` in ``out`` that this run did not resume from, so that the run,
    which writes its own ``ckpt.pt`` at its first evaluation, loses no earlier run's weights: it
    becomes ``ckpt-<its time, YYYYmmdd-HHMMSS>.pt`` beside it, and the run says so."""
    earlier = out / checkpoint.FILENAME
    if not earlier.is_file() or (resume is not None and earlier.resolve() == Path(resume).resolve()):
        return
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(earlier.stat().st_mtime))
    kept = out / f"ckpt-{stamp}.pt"
    for n in itertools.count(2):
        if not kept.exists():
            break
        kept = out / f"ckpt-{stamp}-{n}.pt"
    earlier.rename(kept)
    say(f"{earlier} held an earlier run's checkpoint: kept as {kept} (this run writes its own ckpt.pt)")


def _resolve_run(args: argparse.Namespace, state: dict | None, device: torch.device) -> tuple[Preset, str, str, int]:
    """The preset, corpus name, tokenizer kind and BPE merges: the checkpoint's when resuming, else the options'."""
    if state is not None:
        refuse_contradictions(args, state)
        preset = checkpoint.preset_from(state)
        corpus_name = args.corpus or state["corpus"]
        tok_kind = state["tokenizer"]["kind"]
        merges = len(state["tokenizer"].get("merges", [])) or DEFAULT_BPE_MERGES
    else:
        preset = get_preset(args.preset or ("gpu" if device.type == "cuda" else "cpu"))
        corpus_name = args.corpus or preset.corpus
        tok_kind = args.tokenizer if args.tokenizer is not None else "char"
        merges = args.bpe_merges if args.bpe_merges is not None else DEFAULT_BPE_MERGES
    return preset, corpus_name, tok_kind, merges


def _apply_overrides(preset: Preset, args: argparse.Namespace) -> Preset:
    """``preset`` with the options given on the command line, its threads, and no longer a warm-up than the run."""
    overrides = {
        k: v
        for k, v in (
            ("steps", args.steps),
            ("batch_size", args.batch_size),
            ("lr", args.lr),
            ("eval_interval", args.eval_interval),
            ("seed", args.seed),
            ("positions", args.positions),  # on a resume, the checkpoint's own (refuse_contradictions)
        )
        if v is not None
    }
    if args.patience is not None:
        overrides["patience"] = args.patience or None
    if args.compile is not None:
        overrides["compile"] = args.compile
    if args.autocast is not None:
        overrides["autocast"] = None if args.autocast == "none" else args.autocast
    preset = preset.replace(**overrides, threads=args.threads)  # threads fit this machine, not the checkpoint's
    if preset.warmup > preset.steps:
        preset = preset.replace(warmup=preset.steps)
    return preset


def _refuse_unresumable(
    args: argparse.Namespace, state: dict, preset: Preset, corpus: Corpus, corpus_name: str
) -> None:
    """Check that the checkpoint ``state`` can go on: the corpus gives its tokenizer, and steps are left.

    Raises:
        ValueError: when the corpus gives another tokenizer, or the checkpoint is at the run's last step.
    """
    if corpus.tokenizer.state() != state["tokenizer"]:
        raise ValueError(
            f"the corpus {corpus_name!r} does not give the tokenizer of the checkpoint {args.resume}: it was"
            " trained on another text (a Tiny Shakespeare that could not be loaded falls back on the default"
            " corpus, as printed above; set GPTCOURSE_SHAKESPEARE to a local copy, or give --corpus)"
        )
    if state["step"] >= preset.steps:
        raise ValueError(f"the checkpoint is at step {state['step']}, the run has {preset.steps} steps: raise --steps")


def _where(info: ddp.DistInfo, device: torch.device, threads: int) -> str:
    """Where the run trains, as printed and summarised: the device, the DDP processes, the CPU threads."""
    where = f"{info.world_size} processes (DDP), {device.type}" if info.enabled else str(device)
    if device.type == "cpu":
        where += f", {threads} thread{'s' if threads > 1 else ''}" + (" each" if info.enabled else "")
    return where


def _announce(say, preset: Preset, corpus: Corpus, corpus_name: str, where: str, state: dict | None) -> None:
    """Say what is about to be trained: the corpus, the preset and where, what is kept and when it stops."""
    say(
        f"corpus {corpus_name}: {len(corpus.train):,} training and {len(corpus.val):,} validation tokens, "
        f"{corpus.tokenizer.kind} tokenizer, vocabulary {corpus.vocab_size}"
    )
    say(
        f"preset {preset.name}: {preset.n_layer} layers x {preset.n_head} heads "
        f"x {preset.n_embd}, block {preset.block_size}, {preset.positions} positions, "
        f"batch {preset.batch_size}, {preset.steps} steps, lr {preset.lr:g}; on {where}"
        + (f"; resuming at step {state['step']}" if state is not None else "")
    )
    say(
        "keeps the weights of the lowest exact validation loss"
        + (f"; stops after {preset.patience} evaluations without a new best" if preset.patience else "")
    )


def _write_outputs(
    out: Path, result: loop.RunResult, preset: Preset, corpus: Corpus, corpus_name: str, where: str
) -> Path:
    """Write ``losses.png`` and ``summary.json`` into ``out``; returns the plot's path."""
    summary = {
        "preset": preset.name,
        "corpus": corpus_name,
        "tokenizer": corpus.tokenizer.kind,
        "positions": preset.positions,
        "device": where,
        "steps": result.step,
        "best_step": result.best_step,
        "best_val_loss": result.best_val,
        "best_val_bits_per_char": corpus.bits_per_char(result.best_val),
        "final_val_loss": result.final_val,
        "stopped_early": result.stopped_early,
        "seconds": round(result.seconds, 2),
        "tokens_per_second": round(result.tokens_per_second, 1),
        "best_saved_at": result.best_saved_at,
        "checkpoint": str(result.checkpoint),
    }
    plot = plot_losses(
        result.history,
        out / "losses.png",
        title=f"{preset.name} preset on {corpus_name}",
        best=(result.best_step, result.best_val),
    )
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return plot


def _report(say, result: loop.RunResult, corpus: Corpus, plot: Path) -> None:
    """Say the run's outcome: the kept weights' loss, the last step's, the time, the checkpoint and the plot."""
    final = f"{result.final_val:.4f} at step {result.step}" if result.final_val is not None else "not reached"
    say(
        f"kept the weights of step {result.best_step}: validation loss {result.best_val:.4f} "
        f"({corpus.bits_per_char(result.best_val):.3f} bits per character; exact, the whole held-out split); "
        f"last step: {final}; {result.seconds:.1f} s, {result.tokens_per_second:,.0f} tokens/s"
    )
    say(f"checkpoint (the kept weights): {result.checkpoint}; loss curves: {plot}")


def cmd_sample(args: argparse.Namespace) -> int:
    device = resolve_device(args.device)
    if device.type == "cpu":
        configure_threads(args.threads)
    state = checkpoint.load(args.checkpoint, device="cpu")
    model, tokenizer = checkpoint.model_from(state, device)
    prompt = args.prompt if args.prompt is not None else default_prompt(tokenizer)
    start = time.perf_counter()
    text = sample_text(
        model,
        tokenizer,
        prompt,
        args.tokens,
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        seed=args.seed,
        cache=not args.no_cache,
    )
    seconds = time.perf_counter() - start
    print(text)
    how = "plain generation" if args.no_cache else "KV cache"
    print(f"[{args.tokens} tokens in {seconds:.2f} s on {device}, {how}]", file=sys.stderr)
    return 0


def _guard(command):
    """Run ``command(args)``; a ``ValueError`` becomes a one-line error and exit status 2."""

    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except ValueError as exc:
            print(f"gptcourse {args.command}: error: {exc}", file=sys.stderr)
            return 2

    return run


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add the ``train`` and ``sample`` subcommands to a subparsers object."""
    _add_train_parser(sub)
    _add_sample_parser(sub)


def _add_train_parser(sub: argparse._SubParsersAction) -> None:
    """The ``train`` subcommand's arguments, in the order ``--help`` lists them."""
    train = sub.add_parser("train", help="train the reference GPT (character level by default), then sample from it")
    _add_train_setup_options(train)
    _add_train_recipe_options(train)
    train.add_argument("--resume", metavar="CKPT", help="continue the run saved in this checkpoint")
    train.add_argument("--sample-tokens", type=int, help="tokens sampled at the end (0: none; default: the preset's)")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.set_defaults(run=_guard(cmd_train))


def _add_train_setup_options(train: argparse.ArgumentParser) -> None:
    """``train``'s options of what is trained, where: corpus, device, preset, steps, output, tokenizer, positions."""
    train.add_argument(
        "--corpus", help="shakespeare, default (offline) or a path to a UTF-8 text file (default: the preset's)"
    )
    train.add_argument("--device", default="auto", help="auto (cuda, then mps, then cpu), cpu, cuda or mps")
    train.add_argument("--preset", choices=sorted(PRESETS), help="cpu, gpu or tiny (default: gpu on CUDA, else cpu)")
    train.add_argument("--steps", type=_positive_int, help="total number of optimisation steps (default: the preset's)")
    train.add_argument(
        "--out",
        help="folder for ckpt.pt, losses.png and summary.json (default: runs/<preset>, or the resumed checkpoint's)",
    )
    train.add_argument(
        "--tokenizer",
        choices=TOKENIZERS,
        help="char (default), bpe (the course's word-level BPE) or byte-bpe (stage 02's byte-level BPE)",
    )
    train.add_argument(
        "--bpe-merges",
        type=_positive_int,
        help=f"merges learned for --tokenizer bpe or byte-bpe (default {DEFAULT_BPE_MERGES})",
    )
    train.add_argument(
        "--positions", choices=POSITIONS, help="position scheme of the model (stage 03; default: the preset's, learned)"
    )


def _add_train_recipe_options(train: argparse.ArgumentParser) -> None:
    """``train``'s options of the recipe: patience, compilation, batch, learning rate, evaluations, seed, precision,
    threads."""
    train.add_argument(
        "--patience",
        type=int,
        help="stop after this many evaluations without a better validation loss (0: never; default: the preset's)",
    )
    train.add_argument(
        "--compile",
        choices=COMPILE,
        help="on CUDA, torch.compile the model, its blocks (one compiled block for all layers) or none "
        "(default: the preset's)",
    )
    train.add_argument(
        "--batch-size", type=_positive_int, help="global batch (split over the processes under torchrun)"
    )
    train.add_argument("--lr", type=float, help="peak learning rate")
    train.add_argument("--eval-interval", type=_positive_int, help="steps between evaluations and checkpoints")
    train.add_argument("--seed", type=int, help="seed of the initial weights and the batches")
    train.add_argument(
        "--autocast",
        choices=["bf16", "none"],
        help="bf16: bfloat16 autocast on CUDA and on CPUs with bf16 "
        "instructions; none: float32 (default: the preset's)",
    )
    train.add_argument(
        "--threads",
        type=_positive_int,
        help="CPU threads (default: $GPTCOURSE_THREADS, $OMP_NUM_THREADS, else "
        "the CPUs this process may use and others leave free; under torchrun, shared out)",
    )


def _add_sample_parser(sub: argparse._SubParsersAction) -> None:
    """The ``sample`` subcommand's arguments."""
    sample = sub.add_parser("sample", help="generate text from a checkpoint of gptcourse train")
    sample.add_argument("--checkpoint", required=True, help="a ckpt.pt written by gptcourse train")
    sample.add_argument("--prompt", help="the text to continue (default: a newline)")
    sample.add_argument("--tokens", type=_positive_int, default=500, help="new tokens (default: 500)")
    sample.add_argument("--temperature", type=float, default=0.8, help="0 is greedy (default: 0.8)")
    sample.add_argument("--top-k", type=_positive_int, help="keep only the k most likely tokens")
    sample.add_argument("--top-p", type=float, help="keep only the nucleus of this probability")
    sample.add_argument("--seed", type=int, default=1337)
    sample.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    sample.add_argument("--no-cache", action="store_true", help="recompute the whole context for every token")
    sample.add_argument("--threads", type=_positive_int, help="CPU threads (default: as for train)")
    sample.set_defaults(run=_guard(cmd_sample))


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def main(argv: list[str] | None = None, prog: str = "python -m training") -> int:
    """``python -m training train|sample ...`` (``gptcourse train|sample`` hands its arguments here)."""
    parser = argparse.ArgumentParser(prog=prog, description="Train the reference GPT and sample from it.")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.run(args)
