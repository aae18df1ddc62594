#!/usr/bin/env bash
# Every GPU check of the course in one go: about 7 minutes on one H100, cut at $DEADLINE seconds.
#
#   OUT=/tmp/gpu bash benchmarks/gpu_check.sh          # on a CUDA machine, from the repository root
#   OUT=/tmp/gpucpu bash benchmarks/gpu_check.sh --cpu # the same steps at tiny sizes on a CPU (its test)
#
# Needs python3 with torch, numpy, tqdm, matplotlib and pytest; no Jupyter, no network. Tiny
# Shakespeare is read from $GPTCOURSE_SHAKESPEARE, else .data/tinyshakespeare.txt (make the folder
# ignored, `echo /.data/ >> .git/info/exclude`, copy the file there and carry it to the machine).
#
# The steps, quickest finders of faults first. Each one runs whatever became of the others, and is
# cut at the deadline (DEADLINE seconds after the start, 520 by default), so that one lease gives
# every result it can and the report is always written:
# 1. the gpu-marked tests;
# 2. the notebooks 07 (real sizes: its CUDA branch), 08, 09 and 10 (quick sizes), top to bottom as plain
#    Python on CUDA, every check cell passing (benchmarks/run_notebook.py); the reference's
#    tolerance margins with the cuda perturbation (benchmarks/tolerance_margins.py, about 10 s);
# 3. the gpu preset and nanoGPT's shakespeare_char recipe side by side, one judge for both kept
#    checkpoints, and sampling with and without the KV cache (benchmarks/gpu_side_by_side.py);
# 4. `gptcourse sample` on CUDA: greedy text with and without the cache must be identical;
# 5. while the clock allows, two candidate recipes for 07's CUDA branch (the notebook run again);
# 6. then the preset with its block compiled.
# Writes $OUT/gpu_results.md (the figures with the card, torch and CUDA versions and the commands,
# for benchmarks/RESULTS_training.md, and each step's outcome), $OUT/gpu_results.json (the same
# figures for benchmarks/RESULTS_gpu.json, which claims cite), $OUT/side_by_side.json,
# $OUT/losses.png, $OUT/check.log and $OUT/logs.tgz (every step's own log). Exit status 1 when a
# step failed or was cut.
set -uo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-}
OUT=${OUT:-/tmp/gpu-check}
WORK=${WORK:-$(mktemp -d /tmp/gpu-check-work.XXXXXX)}
DEADLINE=${DEADLINE:-520}
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
OUTCOMES=()
# run_step NAME COMMAND...: run it, cut at the deadline; its outcome (passed, FAILED (status), CUT at
# the deadline, SKIPPED: no time left) goes to the report.
run_step() {
  local name=$1 left rc
  shift
  left=$(( DEADLINE - $(elapsed) ))
  echo; echo "== $name (at $(elapsed) s, $left s to the deadline)"
  if [ "$left" -lt 15 ]; then
    echo "skipped: no time left"
    OUTCOMES+=("$name: SKIPPED (no time left)")
    return 1
  fi
  timeout --kill-after=10 "$left" "$@"
  rc=$?
  case $rc in
    0) OUTCOMES+=("$name: passed") ;;
    124 | 137) OUTCOMES+=("$name: CUT at the deadline ($DEADLINE s)") ;;
    *) OUTCOMES+=("$name: FAILED (exit status $rc)") ;;
  esac
  return $rc
}
keep_logs() { tar -czf "$OUT/logs.tgz" -C "$WORK" --exclude='*.pt' --exclude='*.bin' --exclude='*.pkl' . 2>/dev/null || true; }
trap keep_logs EXIT

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

echo "== 0. the machine"
if [ "$DEVICE" = cuda ]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
fi
$PY -c "import torch, platform; print('torch', torch.__version__, '| CUDA', torch.version.cuda, '| Python', platform.python_version())"

run_step "1. the gpu-marked tests" \
  $PY -m pytest -q -p no:cacheprovider -m gpu tests/test_training.py tests/test_training_model.py tests/test_ddp.py \
  assignments/07_gpt/test_gpt.py assignments/08_generation/test_generation.py --junitxml="$WORK/pytest.xml"

run_step "2a. notebook 07 on $DEVICE ${NB07[*]:-(real sizes)}" \
  $PY benchmarks/run_notebook.py 07_gpt "${NB07[@]}" --json "$WORK/notebook07.json"
run_step "2b. notebooks 08, 09 and 10 on $DEVICE (quick sizes)" \
  $PY benchmarks/run_notebook.py 08_generation 09_rnn 10_encoders --quick --json "$WORK/notebook0810.json"
run_step "2c. the reference's tolerance margins on $DEVICE (benchmarks/RESULTS_margins.md)" \
  bash -c 'set -o pipefail; "$0" benchmarks/tolerance_margins.py --device "$1" --markdown | tee "$2"' "$PY" "$DEVICE" "$WORK/margins.md"

CKPT=$WORK/sbs/preset/ckpt.pt
if run_step "3. the gpu preset and nanoGPT side by side; sampling with and without the KV cache" \
  $PY benchmarks/gpu_side_by_side.py --out "$WORK/sbs" "${SIDE[@]}"; then
  cp "$WORK/sbs/side_by_side.md" "$WORK/sbs/side_by_side.json" "$OUT/"
  cp "$WORK/sbs/preset/losses.png" "$OUT/losses.png"
fi

SAME="not compared (no kept checkpoint)"
if [ -f "$CKPT" ]; then
  # sample FILE OPTIONS...: gptcourse sample's text to FILE (a command line that timeout can run)
  sample=(bash -c '"$0" -m training sample --checkpoint "$1" --device "$2" --prompt "ROMEO:" "${@:4}" > "$3"' "$PY" "$CKPT" "$DEVICE")
  run_step "4a. gptcourse sample on $DEVICE, greedy, with the cache" \
    "${sample[@]}" "$WORK/cached.txt" --tokens "$SAMPLE_TOKENS" --temperature 0
  run_step "4b. gptcourse sample on $DEVICE, greedy, without the cache" \
    "${sample[@]}" "$WORK/plain.txt" --tokens "$SAMPLE_TOKENS" --temperature 0 --no-cache
  if [ -s "$WORK/cached.txt" ] && cmp -s "$WORK/cached.txt" "$WORK/plain.txt"; then SAME=identical; else SAME=DIFFERENT; fi
  echo "greedy text with and without the cache: $SAME"
  head -c 300 "$WORK/cached.txt"; echo
  run_step "4c. gptcourse sample on $DEVICE, top-k 40" "${sample[@]}" "$WORK/sampled.txt" --tokens 200 --top-k 40
fi

# Candidate recipes for 07's CUDA branch, which kept 1.628 after its 800 steps on an H100, above the
# CPU branch's 1.526 (benchmarks/RESULTS_training.md): each the whole notebook with its recipe replaced.
CANDIDATES=()
TRIED=0
candidate() {
  local label=$1 name=candidate$TRIED
  shift
  TRIED=$((TRIED + 1))
  if run_step "5. 07's real run on $DEVICE ${NB07[*]:-(real sizes)} with $label (while the clock allows)" \
    $PY benchmarks/run_notebook.py 07_gpt "${NB07[@]}" "$@" --json "$WORK/$name.json"; then
    CANDIDATES+=(--candidate "$label" "$WORK/$name.json")
  fi
}
candidate "no dropout" --replace "n_embd=384, dropout=0.2)" "n_embd=384, dropout=0.0)"
candidate "4 layers x 4 heads x 256, no dropout, 1600 steps at lr 2e-3" \
  --replace "n_layer=6, n_head=6, n_embd=384, dropout=0.2)" "n_layer=4, n_head=4, n_embd=256)" \
  --replace "settings = dict(steps=800, batch_size=64, lr=1e-3," "settings = dict(steps=1600, batch_size=64, lr=2e-3,"

VARIANTS=()
if [ "$DEVICE" = cuda ]; then
  extra="--compile blocks"
  # shellcheck disable=SC2086
  if run_step "6. the gpu preset with $extra (while the clock allows)" \
    $PY -m training train --preset gpu --device cuda $extra --out "$WORK/variant0" --quiet --sample-tokens 0; then
    echo "$extra" > "$WORK/variant0/options.txt"
    VARIANTS+=("$WORK/variant0")
  fi
fi

echo; echo "== 7. the results (at $(elapsed) s)"
$PY benchmarks/gpu_results.py --side "$WORK/sbs/side_by_side.json" --same "$SAME" \
  --notebooks "$WORK/notebook07.json" "$WORK/notebook0810.json" --tests "$WORK/pytest.xml" \
  --variants "${VARIANTS[@]}" "${CANDIDATES[@]}" --outcomes "${OUTCOMES[@]}" --seconds "$(elapsed)" \
  --command "bash benchmarks/gpu_check.sh $MODE" --json "$OUT/gpu_results.json" > "$OUT/gpu_results.md"
cat "$OUT/gpu_results.md"
echo "gpu_check: done in $(elapsed) s"
for outcome in "${OUTCOMES[@]}"; do
  case $outcome in *": passed") ;; *) exit 1 ;; esac
done
if [ "$SAME" != identical ]; then exit 1; fi
