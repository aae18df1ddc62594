#!/usr/bin/env bash
# Every GPU check of the course in one go: about 7 minutes on one H100 (8 at most).
#
#   OUT=/tmp/gpu bash benchmarks/gpu_check.sh          # on a CUDA machine, from the repository root
#   OUT=/tmp/gpucpu bash benchmarks/gpu_check.sh --cpu # the same steps at tiny sizes on a CPU (its test)
#
# Needs python3 with torch, numpy, tqdm, matplotlib and pytest; no Jupyter, no network. Tiny
# Shakespeare is read from $GPTCOURSE_SHAKESPEARE, else .data/tinyshakespeare.txt (make the folder
# ignored, `echo /.data/ >> .git/info/exclude`, copy the file there and carry it to the machine).
#
# 1. the gpu preset and nanoGPT's shakespeare_char recipe side by side, one judge for both kept
#    checkpoints, and sampling with and without the KV cache (benchmarks/gpu_side_by_side.py);
# 2. `gptcourse sample` on CUDA: greedy text with and without the cache must be identical;
# 3. the notebooks 07 (real sizes: its CUDA branch), 08, 09 and 10 (quick sizes), top to bottom as plain
#    Python on CUDA, every check cell passing (benchmarks/run_notebook.py);
# 4. the gpu-marked tests;
# 5. while the clock allows, the preset without torch.compile, and with nanoGPT's 16,384 tokens a step.
# Writes $OUT/gpu_results.md (the figures with the card, torch and CUDA versions and the commands,
# for benchmarks/RESULTS_training.md), $OUT/side_by_side.json, $OUT/losses.png, $OUT/check.log.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-}
OUT=${OUT:-/tmp/gpu-check}
WORK=${WORK:-/tmp/gpu-check-work}
PY=${PYTHON:-python3}
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export GPTCOURSE_SHAKESPEARE=${GPTCOURSE_SHAKESPEARE:-$PWD/.data/tinyshakespeare.txt}
if [ ! -f "$GPTCOURSE_SHAKESPEARE" ]; then
  echo "gpu_check: no Tiny Shakespeare at $GPTCOURSE_SHAKESPEARE (set GPTCOURSE_SHAKESPEARE)" >&2
  exit 2
fi
exec > >(tee -a "$OUT/check.log") 2>&1
START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }
step() { echo; echo "== $1 (at $(elapsed) s)"; }

if [ "$MODE" = "--cpu" ]; then
  SIDE=(--cpu --tokens 60)
  DEVICE=cpu
  NB07=(--quick)
  SAMPLE_TOKENS=40
else
  SIDE=()
  DEVICE=cuda
  NB07=()
  SAMPLE_TOKENS=500
fi

step "0. the machine"
if [ "$DEVICE" = cuda ]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
fi
$PY -c "import torch, platform; print('torch', torch.__version__, '| CUDA', torch.version.cuda, '| Python', platform.python_version())"

step "1. the gpu preset and nanoGPT side by side; sampling with and without the KV cache"
$PY benchmarks/gpu_side_by_side.py --out "$WORK/sbs" "${SIDE[@]}"
cp "$WORK/sbs/side_by_side.md" "$WORK/sbs/side_by_side.json" "$OUT/"
cp "$WORK/sbs/preset/losses.png" "$OUT/losses.png"
CKPT=$WORK/sbs/preset/ckpt.pt

step "2. gptcourse sample on $DEVICE: greedy, with and without the cache"
$PY -m training sample --checkpoint "$CKPT" --device "$DEVICE" --prompt "ROMEO:" --tokens "$SAMPLE_TOKENS" --temperature 0 > "$WORK/cached.txt"
$PY -m training sample --checkpoint "$CKPT" --device "$DEVICE" --prompt "ROMEO:" --tokens "$SAMPLE_TOKENS" --temperature 0 --no-cache > "$WORK/plain.txt"
if cmp -s "$WORK/cached.txt" "$WORK/plain.txt"; then SAME=identical; else SAME=DIFFERENT; fi
echo "greedy text with and without the cache: $SAME"
head -c 300 "$WORK/cached.txt"; echo
$PY -m training sample --checkpoint "$CKPT" --device "$DEVICE" --prompt "ROMEO:" --tokens 200 --top-k 40 > "$WORK/sampled.txt"

step "3. the notebooks on $DEVICE, as plain Python: 07 ${NB07[*]:-(real sizes)}, 08, 09 and 10 (quick)"
$PY benchmarks/run_notebook.py 07_gpt "${NB07[@]}" --json "$WORK/notebook07.json"
$PY benchmarks/run_notebook.py 08_generation 09_rnn 10_encoders --quick --json "$WORK/notebook0810.json"

step "4. the gpu-marked tests"
set +e
$PY -m pytest -q -p no:cacheprovider -m gpu tests/test_training.py tests/test_training_model.py tests/test_ddp.py \
  assignments/07_gpt/test_gpt.py assignments/08_generation/test_generation.py \
  --junitxml="$WORK/pytest.xml"
TESTS=$?
set -e

step "5. variants of the preset, while the clock allows (each about 40 s)"
VARIANTS=()
if [ "$DEVICE" = cuda ]; then
  for extra in "--compile none" "--batch-size 32 --steps 2000 --lr 1e-3 --eval-interval 200"; do
    if [ "$(elapsed)" -lt 380 ]; then
      name=variant${#VARIANTS[@]}
      # shellcheck disable=SC2086
      $PY -m training train --preset gpu --device cuda $extra --out "$WORK/$name" --quiet --sample-tokens 0
      echo "$extra" > "$WORK/$name/options.txt"
      VARIANTS+=("$WORK/$name")
    else
      echo "skipped: $extra (at $(elapsed) s)"
    fi
  done
else
  echo "skipped (not on CUDA)"
fi

step "6. the results"
$PY benchmarks/gpu_results.py --side "$OUT/side_by_side.json" --same "$SAME" --notebooks "$WORK/notebook07.json" \
  "$WORK/notebook0810.json" --tests "$WORK/pytest.xml" --variants "${VARIANTS[@]}" --seconds "$(elapsed)" \
  --command "bash benchmarks/gpu_check.sh $MODE" > "$OUT/gpu_results.md"
cat "$OUT/gpu_results.md"
echo "gpu_check: done in $(elapsed) s"
if [ "$SAME" != identical ] || [ "$TESTS" -ne 0 ]; then exit 1; fi
