#!/usr/bin/env bash
# The measured results of docs/results.md, end to end, on the local models (2 CPU cores: several hours).
#
#   bash benchmarks/run_results.sh [OUT_DIR]      # default runs/results
#
# Steps, each logged to OUT_DIR/<step>.log, progress in OUT_DIR/progress.txt:
#   1. samples: dev-40 (40 dev episodes stratified by source, seed 0) for levers and selection,
#      test-150 (every conversational test episode and 97 more stratified by source, seed 0) and
#      test-conversational (its 53 conversational episodes)
#   2. program levers on dev-40, 1.5B: the default, the compact reply shape, dates as the text's words;
#      then the default against the seed's input order and against missing_facts in every call
#   3. local runtime on the 16 conversational dev episodes: today's prebuilt runtime (seed input order,
#      legacy reply) vs the host build, with and without n-gram speculative decoding, for both models
#      (take it on an idle machine)
#   4. compile the 1.5B: gold demo search (5 demos, 3 candidates) selected on dev-40
#   5. compile the 0.5B: the same search, replies capped at 512 tokens (GOLD_05_MAX_TOKENS)
#   6. bench the 1.5B on test-150: seed-structured, default, compiled; paired against default
#   7. bench the 0.5B on test-150: seed-structured, default, compiled; paired against default
#   8. MIPROv2 on the 1.5B within a budget sized to an hour (train, dev: --budget 160 selects on 40
#      dev episodes), then its program on smoke
# Set STEPS="4 6" (for example) to run only some steps; GOLD_CANDIDATES (default 3) sizes steps 4-5,
# BENCH_PROGRAMS (default seed-structured,default) the uncompiled programs of steps 6-7, TEST_DATA
# (default test-150) their sample.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/results}
STEPS=${STEPS:-"1 2 3 4 5 6 7 8"}
EDGEWISE=${EDGEWISE:-edgewise}
PY=${PY:-python}
COMPILED=optimize/compiled
S05=local/qwen2.5-coder-0.5b
S15=local/qwen2.5-coder-1.5b
mkdir -p "$OUT"
log() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$OUT/progress.txt"; }
want() { [[ " $STEPS " == *" $1 "* ]]; }

if want 1; then
  log "step 1: samples"
  "$PY" - "$OUT" <<'EOF'
import sys
from pathlib import Path
from edgewise.data import load_episodes
from edgewise.data.sampling import stratified_sample
out = Path(sys.argv[1])
def write(name, rows):
    (out / f"{name}.jsonl").write_text("".join(e.model_dump_json(by_alias=True) + "\n" for e in rows))
    print(name, len(rows))
write("dev-40", stratified_sample(load_episodes("dev"), 40, seed=0))
test = load_episodes("test")
conversational = {e.id for e in test if e.source == "conversational"}
rest = {e.id for e in stratified_sample([e for e in test if e.id not in conversational], 150 - len(conversational), seed=0)}
write("test-150", [e for e in test if e.id in conversational | rest])
write("test-conversational", [e for e in test if e.id in conversational])
EOF
fi

if want 2; then
  log "step 2: program levers on dev-40"
  "$PY" benchmarks/local_runtime.py --configs 1.5b@host+ngram,1.5b@host+ngram+compact,1.5b@host+ngram+textdates \
    --split dev --source '' --limit 40 --out "$OUT/levers-dev40-1.5b.md" --json "$OUT/levers-dev40-1.5b.json" \
    > "$OUT/levers-dev40-1.5b.log" 2>&1
  "$PY" benchmarks/local_runtime.py --configs 1.5b@host,1.5b@host+seedorder,1.5b@host+legacy \
    --split "$OUT/dev-40.jsonl" --source '' --limit 40 --out "$OUT/input-order-dev40-1.5b.md" \
    --json "$OUT/input-order-dev40-1.5b.json" > "$OUT/input-order-dev40-1.5b.log" 2>&1
fi

if want 3; then
  log "step 3: local runtime, conversational dev episodes"
  "$PY" benchmarks/local_runtime.py --configs \
1.5b@prebuilt+seedorder+legacy,1.5b@host,1.5b@host+ngram,0.5b@host,0.5b@host+ngram,0.5b@prebuilt+seedorder+legacy \
    --split dev --source conversational --limit 16 --out "$OUT/runtime-conv16.md" --json "$OUT/runtime-conv16.json" \
    > "$OUT/runtime-conv16.log" 2>&1
fi

compile_gold() {  # model name [extra optimize flags...]
  "$EDGEWISE" optimize --model "$1" --optimizer gold --gold-demos 5 --demo-tokens 2500 --candidates "${GOLD_CANDIDATES:-3}" \
    --train train --dev "$OUT/dev-40.jsonl" --seed 0 --out "$COMPILED/$2" "${@:3}" > "$OUT/optimize-$2.log" 2>&1
}
bench_test() {  # model compiled out-name [data: test-150 unless TEST_DATA names another sample]
  "$EDGEWISE" bench --models "$1" --programs "${BENCH_PROGRAMS:-seed-structured,default},$COMPILED/$2" \
    --baseline default --data "$OUT/${TEST_DATA:-test-150}.jsonl" --seed 0 --out "$OUT/$3" > "$OUT/$3.log" 2>&1
}

if want 4; then log "step 4: compile 1.5B"; compile_gold $S15 qwen2.5-coder-1.5b-gold; fi
if want 5; then log "step 5: compile 0.5B"; compile_gold $S05 qwen2.5-coder-0.5b-gold --max-tokens "${GOLD_05_MAX_TOKENS:-512}"; fi
if want 6; then
  log "step 6: bench 1.5B on ${TEST_DATA:-test-150}"
  bench_test $S15 qwen2.5-coder-1.5b-gold "${TEST_DATA:-test-150}-1.5b"
fi
if want 7; then
  log "step 7: bench 0.5B on ${TEST_DATA:-test-150}"
  bench_test $S05 qwen2.5-coder-0.5b-gold "${TEST_DATA:-test-150}-0.5b"
fi
if want 8; then
  log "step 8: MIPROv2 on the 1.5B, budget sized to an hour"
  "$EDGEWISE" optimize --model local --optimizer mipro --train train --dev dev --budget "${MIPRO_BUDGET:-160}" \
    --seed 0 --out runs/prog > "$OUT/optimize-mipro-1.5b.log" 2>&1
  "$EDGEWISE" bench --models local --programs default,runs/prog --baseline default --split smoke --seed 0 \
    --out "$OUT/smoke-mipro-1.5b" > "$OUT/smoke-mipro-1.5b.log" 2>&1
fi
log "done"
