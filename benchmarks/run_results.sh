#!/usr/bin/env bash
# The README's measured results, end to end, on the local models (2 CPU cores: about 2 hours).
#
#   bash benchmarks/run_results.sh [OUT_DIR]      # default runs/results
#
# Steps, each logged to OUT_DIR/<step>.log, progress in OUT_DIR/progress.txt:
#   1. subsets: train-40 and dev-30 (seeded, stratified by source) for the optimizer
#   2. optimize the 0.5B model (bootstrap, 1.5B teacher)  -> optimize/compiled/qwen2.5-coder-0.5b-bootstrap
#   3. bench the 0.5B model on a 50-episode stratified test sample: seed, seed-structured, default, compiled
#   4. optimize the 1.5B model (bootstrap, itself as teacher) -> optimize/compiled/qwen2.5-coder-1.5b-bootstrap
#   5. bench the 1.5B model on the same test sample
#   6. smoke split, 0.5B: default with 0 and 1 reflexion rounds (does reflexion pay for its calls?)
# Set STEPS="2 3" (for example) to run only some steps.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/results}
STEPS=${STEPS:-"1 2 3 4 5 6"}
TEST_LIMIT=${TEST_LIMIT:-50}
EDGEWISE=${EDGEWISE:-edgewise}
PY=${PY:-python}
COMPILED=optimize/compiled
mkdir -p "$OUT"
log() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$OUT/progress.txt"; }
want() { [[ " $STEPS " == *" $1 "* ]]; }

if want 1; then
  log "step 1: subsets"
  "$PY" - "$OUT" <<'EOF'
import sys
from pathlib import Path
from edgewise.data import load_episodes
from edgewise.eval.bench import stratified_sample
out = Path(sys.argv[1])
for split, limit in (("train", 40), ("dev", 30)):
    rows = stratified_sample(load_episodes(split), limit, seed=0)
    (out / f"{split}-{limit}.jsonl").write_text("".join(e.model_dump_json(by_alias=True) + "\n" for e in rows))
    print(split, len(rows))
EOF
fi

optimize() {  # model teacher name
  "$EDGEWISE" optimize --model "$1" --teacher-model "$2" --optimizer bootstrap \
    --train "$OUT/train-40.jsonl" --dev "$OUT/dev-30.jsonl" --max-demos 3 --candidates 2 --seed 0 \
    --out "$COMPILED/$3" > "$OUT/optimize-$3.log" 2>&1
}
bench() {  # model compiled-name out-name
  "$EDGEWISE" bench --models "$1" --programs "seed,seed-structured,default,$COMPILED/$2" \
    --split test --limit "$TEST_LIMIT" --seed 0 --out "$OUT/$3" > "$OUT/$3.log" 2>&1
}

if want 2; then log "step 2: optimize 0.5B"; optimize local/qwen2.5-coder-0.5b local/qwen2.5-coder-1.5b qwen2.5-coder-0.5b-bootstrap; fi
if want 3; then log "step 3: bench 0.5B on test"; bench local/qwen2.5-coder-0.5b qwen2.5-coder-0.5b-bootstrap test-0.5b; fi
if want 4; then log "step 4: optimize 1.5B"; optimize local/qwen2.5-coder-1.5b local/qwen2.5-coder-1.5b qwen2.5-coder-1.5b-bootstrap; fi
if want 5; then log "step 5: bench 1.5B on test"; bench local/qwen2.5-coder-1.5b qwen2.5-coder-1.5b-bootstrap test-1.5b; fi
if want 6; then
  log "step 6: reflexion on smoke"
  for rounds in 0 1; do
    "$EDGEWISE" bench --models local/qwen2.5-coder-0.5b --programs seed,default --reflexion-rounds "$rounds" \
      --split smoke --seed 0 --out "$OUT/smoke-0.5b-reflexion-$rounds" > "$OUT/smoke-0.5b-reflexion-$rounds.log" 2>&1
  done
fi
log "done"
