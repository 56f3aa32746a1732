#!/usr/bin/env bash
# The README's measured results, end to end, on the local models (2 CPU cores: several hours).
#
#   bash benchmarks/run_results.sh [OUT_DIR]      # default runs/results
#
# Steps, each logged to OUT_DIR/<step>.log, progress in OUT_DIR/progress.txt:
#   1. subsets: train-40, dev-20 and dev-10 (seeded, stratified by source) for the optimizer
#   2. optimize the 0.5B model (bootstrap, 1.5B teacher)  -> optimize/compiled/qwen2.5-coder-0.5b-bootstrap
#   3. bench the 0.5B model on a 24-episode stratified test sample: seed, seed-structured, default, compiled
#   4. bench the 1.5B model on the same sample: seed (the bar the compiled 0.5B must reach)
#   5. optimize the 1.5B model (bootstrap, itself as teacher, one candidate, dev-10: sized to about an
#      hour here) -> optimize/compiled/qwen2.5-coder-1.5b-bootstrap
#   6. bench the 1.5B model on the test sample: default, compiled
#   7. smoke split, 0.5B: seed; default with 0 and 1 reflexion rounds (does reflexion pay for its calls?)
#   8. smoke split, 1.5B: seed and default; default with 1 reflexion round
# Set STEPS="2 3" (for example) to run only some steps.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/results}
STEPS=${STEPS:-"1 2 3 4 5 6 7 8"}
TEST_LIMIT=${TEST_LIMIT:-24}
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
for split, limit in (("train", 40), ("dev", 20), ("dev", 10)):
    rows = stratified_sample(load_episodes(split), limit, seed=0)
    (out / f"{split}-{limit}.jsonl").write_text("".join(e.model_dump_json(by_alias=True) + "\n" for e in rows))
    print(split, len(rows))
EOF
fi

optimize() {  # model teacher name dev candidates
  "$EDGEWISE" optimize --model "$1" ${2:+--teacher-model "$2"} --optimizer bootstrap \
    --train "$OUT/train-40.jsonl" --dev "$OUT/$4.jsonl" --max-demos 3 --candidates "$5" --seed 0 \
    --out "$COMPILED/$3" > "$OUT/optimize-$3.log" 2>&1
}
smoke() {  # model programs out-name [extra bench flags]
  "$EDGEWISE" bench --models "$1" --programs "$2" --split smoke --seed 0 "${@:4}" \
    --out "$OUT/$3" > "$OUT/$3.log" 2>&1
}
bench() {  # model programs out-name
  "$EDGEWISE" bench --models "$1" --programs "$2" \
    --split test --limit "$TEST_LIMIT" --seed 0 --out "$OUT/$3" > "$OUT/$3.log" 2>&1
}

S05=local/qwen2.5-coder-0.5b
S15=local/qwen2.5-coder-1.5b
if want 2; then log "step 2: optimize 0.5B"; optimize $S05 $S15 qwen2.5-coder-0.5b-bootstrap dev-20 1; fi
if want 3; then
  log "step 3: bench 0.5B on test"
  bench $S05 "seed,seed-structured,default,$COMPILED/qwen2.5-coder-0.5b-bootstrap" test-0.5b
fi
if want 4; then log "step 4: bench 1.5B seed on test"; bench $S15 seed test-1.5b-seed; fi
if want 5; then log "step 5: optimize 1.5B"; optimize $S15 "" qwen2.5-coder-1.5b-bootstrap dev-10 0; fi
if want 6; then
  log "step 6: bench 1.5B on test"
  bench $S15 "default,$COMPILED/qwen2.5-coder-1.5b-bootstrap" test-1.5b
fi
if want 7; then
  log "step 7: smoke, 0.5B: seed; default with 0 and 1 reflexion rounds"
  smoke $S05 seed smoke-0.5b-seed
  for rounds in 0 1; do smoke $S05 default smoke-0.5b-reflexion-$rounds --reflexion-rounds "$rounds"; done
fi
if want 8; then
  log "step 8: smoke, 1.5B: seed, default; default with 1 reflexion round"
  smoke $S15 seed,default smoke-1.5b
  smoke $S15 default smoke-1.5b-reflexion-1 --reflexion-rounds 1
fi
log "done"
