"""BPE learning on Tiny Shakespeare: the reference against Hugging Face tokenizers and the naive loop.

- ours: ``solutions.bpe.train_bpe(text, N)`` (incremental: recounts only the words a
  merge changes), word counting included.
- Hugging Face ``tokenizers``: ``models.BPE(end_of_word_suffix="</w>")`` trained by
  ``trainers.BpeTrainer(vocab_size=V0 + N, end_of_word_suffix="</w>")`` on the text's
  lines, where V0 is the size of its initial alphabet (so that it learns about N merges;
  the merges it actually learned are counted). Two pre-tokenisers: ``Whitespace`` (what
  the issue names; it also splits punctuation from letters) and ``WhitespaceSplit`` (the
  same words as ours, ``str.split``); each with its default thread pool (every core)
  and with ``TOKENIZERS_PARALLELISM=false`` (one thread, like ours). Its merges are not
  ours: it glues the suffix to the word's last character and breaks ties its own way.
- naive: the simple loop, ``count_pairs`` over every word then ``merge_pair`` on every
  word, once per merge. Its cost per merge falls as the words shrink, so it is timed
  on windows of ``window`` merges starting from the state after 0, 250, 500, 1000, ... merges
  (the state rebuilt by applying the reference's merges) and the total is the integral
  of that per-merge cost (trapezoids) plus the word counting. A timed prefix checks the
  estimate, and every window must learn exactly the reference's merges.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.measure import median  # noqa: E402

SHAKESPEARE = Path("/work/shared/data/tinyshakespeare.txt")


def corpus() -> tuple[str, str]:
    """Tiny Shakespeare through the project's loader ($GPTCOURSE_SHAKESPEARE honoured)."""
    if "GPTCOURSE_SHAKESPEARE" not in os.environ and SHAKESPEARE.exists():
        os.environ["GPTCOURSE_SHAKESPEARE"] = str(SHAKESPEARE)
    from solutions.data import load_corpus

    text = load_corpus("shakespeare")
    name = (
        "Tiny Shakespeare" if len(text) == 1115394 else f"load_corpus('shakespeare') fallback ({len(text)} characters)"
    )
    return text, name


# --- Hugging Face ---------------------------------------------------------------------------


def _hf_train(lines: list[str], vocab_size: int, pre: str, eow: str):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(end_of_word_suffix=eow))
    tok.pre_tokenizer = getattr(pre_tokenizers, pre)()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, end_of_word_suffix=eow, show_progress=False, min_frequency=0)
    start = time.perf_counter()
    tok.train_from_iterator(lines, trainer)
    seconds = time.perf_counter() - start
    return seconds, len(json.loads(tok.to_str())["model"]["merges"])


def hugging_face(text: str, merges: int, pre: str, parallel: bool, repeats: int, eow: str = "</w>") -> dict:
    before = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "true" if parallel else "false"
    try:
        lines = text.splitlines()
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers

        tok = Tokenizer(models.BPE(end_of_word_suffix=eow))
        tok.pre_tokenizer = getattr(pre_tokenizers, pre)()
        tok.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=1, end_of_word_suffix=eow, show_progress=False))
        v0 = tok.get_vocab_size()  # no merges: the initial alphabet only
        runs = [_hf_train(lines, v0 + merges, pre, eow) for _ in range(repeats)]
    finally:
        if before is None:
            os.environ.pop("TOKENIZERS_PARALLELISM", None)
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = before
    seconds = median([s for s, _ in runs])
    learned = runs[-1][1]
    return {
        "seconds": seconds,
        "merges": learned,
        "merges_per_s": learned / seconds,
        "runs": [s for s, _ in runs],
        "initial_vocab": v0,
    }


# --- ours and the naive loop -------------------------------------------------------------------


def ours(text: str, merges: int, repeats: int) -> dict:
    from solutions.bpe import train_bpe

    runs, learned = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        learned = train_bpe(text, merges)
        runs.append(time.perf_counter() - start)
    seconds = median(runs)
    return {
        "seconds": seconds,
        "merges": len(learned),
        "merges_per_s": len(learned) / seconds,
        "runs": runs,
        "learned": learned,
    }


def naive_steps(word_freqs: dict, k: int) -> tuple[list, dict]:
    """The simple loop: recount every pair of every word, merge the most frequent, k times."""
    from solutions.bpe import count_pairs, merge_pair

    merges = []
    for _ in range(k):
        counts = count_pairs(word_freqs)
        if not counts:
            break
        best = max(counts, key=counts.get)  # ties: the pair met first, as the contract says
        merges.append(best)
        word_freqs = merge_pair(word_freqs, best)
    return merges, word_freqs


def _apply(symbols: tuple, ranks: dict) -> tuple:
    """A word after every merge of ``ranks`` (lowest rank first, as learning applied them)."""
    symbols = list(symbols)
    while len(symbols) > 1:
        pairs = {(a, b) for a, b in zip(symbols, symbols[1:])}
        best = min(pairs, key=lambda p: ranks.get(p, float("inf")))
        if best not in ranks:
            break
        out, j = [], 0
        while j < len(symbols):
            if j + 1 < len(symbols) and (symbols[j], symbols[j + 1]) == best:
                out.append(symbols[j] + symbols[j + 1])
                j += 2
            else:
                out.append(symbols[j])
                j += 1
        symbols = out
    return tuple(symbols)


def state_after(word_freqs: dict, merges: list) -> dict:
    """The word counts after the first ``len(merges)`` merges, in first-appearance order."""
    ranks = {pair: i for i, pair in enumerate(merges)}
    out: dict = {}
    for word, count in word_freqs.items():
        key = _apply(word, ranks)
        out[key] = out.get(key, 0) + count
    return out


def naive(text: str, reference: list, totals: list[int], window: int = 10, prefix: int = 100) -> dict:
    from solutions.bpe import word_frequencies

    start = time.perf_counter()
    base = word_frequencies(text)
    count_s = time.perf_counter() - start
    top = max(totals)
    points = sorted({0, *range(0, top + 1, 500), *(n // 2 for n in totals), *totals} - {top} | {top - window})
    per_merge: dict[int, float] = {}
    agree = True
    for s in points:
        state = state_after(base, reference[:s])
        t = time.perf_counter()
        got, _ = naive_steps(state, window)
        per_merge[s] = (time.perf_counter() - t) / window
        agree &= got == reference[s : s + window]
    t = time.perf_counter()
    got, _ = naive_steps(base, prefix)
    prefix_s = time.perf_counter() - t
    agree &= got == reference[:prefix]

    def integral(n: int) -> float:
        xs = sorted(per_merge)
        total = 0.0
        for a, b in zip(xs, xs[1:]):
            lo, hi = a, min(b, n)
            if hi <= lo:
                break
            ca = per_merge[a]
            cb = per_merge[a] + (per_merge[b] - per_merge[a]) * (hi - a) / (b - a)
            total += (ca + cb) / 2 * (hi - lo)
        if n > xs[-1]:
            total += per_merge[xs[-1]] * (n - xs[-1])
        return total

    estimates = {n: count_s + integral(n) for n in totals}
    return {
        "window": window,
        "per_merge_s": per_merge,
        "count_words_s": count_s,
        "prefix": prefix,
        "prefix_measured_s": count_s + prefix_s,
        "prefix_estimated_s": count_s + integral(prefix),
        "estimated_s": estimates,
        "merges_per_s": {n: n / s for n, s in estimates.items()},
        "same_merges_as_reference": agree,
    }


def run(
    totals=(500, 2000), repeats: int = 3, window: int = 10, prefix: int = 100, text: str | None = None, say=print
) -> dict:
    name = "given text"
    if text is None:
        text, name = corpus()
    result: dict = {"corpus": name, "characters": len(text), "totals": list(totals), "ours": {}, "hf": {}}
    from solutions.bpe import word_frequencies

    result["word_types"] = len(word_frequencies(text))
    for n in totals:
        r = ours(text, n, repeats)
        r.pop("learned")
        result["ours"][n] = r
        say(f"  train_bpe {n} merges: {r['seconds']:.2f} s ({r['merges_per_s']:.0f} merges/s)")
    reference = ours(text, max(totals), 1)["learned"]
    for pre in ("Whitespace", "WhitespaceSplit"):
        for parallel in (True, False):
            key = f"{pre}, {'all cores' if parallel else '1 thread'}"
            result["hf"][key] = {n: hugging_face(text, n, pre, parallel, repeats) for n in totals}
            say(f"  tokenizers {key}: " + ", ".join(f"{n}: {v['seconds']:.2f} s" for n, v in result["hf"][key].items()))
    result["naive"] = naive(text, reference, list(totals), window=window, prefix=min(prefix, max(totals)))
    say("  naive loop (estimated): " + ", ".join(f"{n}: {s:.0f} s" for n, s in result["naive"]["estimated_s"].items()))
    return result
