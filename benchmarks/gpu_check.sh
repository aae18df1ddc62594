#!/usr/bin/env bash
# The GPU checks of the training package, in one go on a CUDA machine (python3 with torch,
# tqdm, numpy, matplotlib and pytest), from the repository root:
#   GPTCOURSE_SHAKESPEARE=/path/to/tinyshakespeare.txt OUT=/tmp/gpu bash benchmarks/gpu_check.sh [train options]
# 1. the gpu preset end to end (`python3 -m training train --preset gpu --device cuda`);
# 2. `sample` from its checkpoint on CUDA, with and without the KV cache (500 tokens);
# 3. the KV-cache speed-up for 500 new tokens on CUDA;
# 4. the gpu-marked tests that import without nbformat/otter (--noconftest: conftest.py needs them).
# Everything is logged to $OUT/check.log; the run's summary.json, losses.png and greedy
# sample are copied to $OUT; the checkpoint stays in $RUN.
set -euo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu-check}
RUN=${RUN:-/tmp/gpu-run}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/check.log") 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__)"

echo "== 1. gpu preset"
python3 -m training train --preset gpu --device cuda --out "$RUN" --quiet "$@"
cp "$RUN/summary.json" "$RUN/losses.png" "$OUT/"

echo "== 2. sample on CUDA, 500 tokens, greedy, with and without the KV cache"
python3 -m training sample --checkpoint "$RUN/ckpt.pt" --device cuda --prompt "ROMEO:" --tokens 500 --temperature 0 > "$OUT/sample.txt"
python3 -m training sample --checkpoint "$RUN/ckpt.pt" --device cuda --prompt "ROMEO:" --tokens 500 --temperature 0 --no-cache > "$RUN/plain.txt"
head -c 400 "$OUT/sample.txt"; echo
if cmp -s "$OUT/sample.txt" "$RUN/plain.txt"; then echo "greedy, cache vs no cache: identical"; else echo "greedy, cache vs no cache: DIFFERENT"; fi
python3 -m training sample --checkpoint "$RUN/ckpt.pt" --device cuda --prompt "ROMEO:" --tokens 300 --top-k 40

echo "== 3. KV cache on CUDA"
python3 - <<'PY'
from benchmarks.train_vs_nanogpt import kv_cache_speedup
for block in (256, 512):
    k = kv_cache_speedup(block, device="cuda", n_layer=6, n_head=6, n_embd=384)
    print(f"KV cache, 6x6x384, block {block}, 500 tokens on CUDA: plain {k['plain']:.2f} s, cached {k['cached']:.2f} s, "
          f"speed-up {k['speedup']:.1f}x, same tokens {k['same_tokens']}")
PY

echo "== 4. gpu-marked tests"
python3 -m pytest -q --noconftest -p no:cacheprovider -m gpu tests/test_training.py tests/test_ddp.py
