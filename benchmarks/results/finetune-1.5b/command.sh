#!/usr/bin/env bash
# Reproduces this folder: a LoRA adapter of the 1.5B trained on the train split's gold replies
# (`edgewise optimize --optimizer finetune`, the compact prompt of qwen2.5-coder-1.5b-program-v2),
# judged on dev against v2 (the 1.5B's default program, without an adapter), then benched on test
# against v2 and baseline-v1 (their test bench: benchmarks/results/test-program-v2-1.5b) and on the
# injection set against v2 (its bench: benchmarks/results/injection-1.5b/injection).
# Every part resumes: the training from runs/qwen2.5-coder-1.5b-lora.training (--max-minutes
# stops it after a checkpoint, and the same command goes on), the benches by chunk (a complete chunk
# is skipped). Set STOP_AFTER=training to run the training part alone; SKIP_TRAINING=1 benches the
# program this folder keeps ($OUT/program) instead of training one.
# Needs runs/results/test-conversational-no-attributes.jsonl and test-150.jsonl
# (benchmarks/results/test-recall-program-1.5b/command.sh and STEPS=1 bash benchmarks/run_results.sh).
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=benchmarks/results/finetune-1.5b
TUNED=runs/qwen2.5-coder-1.5b-lora
MODEL=local/qwen2.5-coder-1.5b
V2=qwen2.5-coder-1.5b-program-v2
mkdir -p "$OUT"
# 1. Training: 1 epoch over the 355 exhaustively labeled train episodes, adapters on the top 14 of 28
#    blocks (rank 16, all seven linear layers), 4 examples a step, as the 0.5B's run; the same
#    command resumes. Each session's log is appended to training.txt.
if [[ -n "${SKIP_TRAINING:-}" && ! -d "$TUNED" ]]; then
  mkdir -p runs && cp -r "$OUT/program" "$TUNED"
fi
if [[ ! -f "$TUNED/manifest.json" ]]; then
  edgewise optimize --optimizer finetune --model "$MODEL" --program "$V2" --out "$TUNED" \
    --epochs 1 --top-layers 14 --batch-size 4 --dev-size 16 \
    --max-minutes "${MAX_MINUTES:-85}" --checkpoint-minutes 5 >> "$OUT/training.txt"
fi
# The program the benches ran is kept here, with its adapter (small: the weights are not).
if [[ -f "$TUNED/manifest.json" && ! -d "$OUT/program" ]]; then
  cp -r "$TUNED" "$OUT/program"
fi
if [[ ! -f "$TUNED/manifest.json" || "${STOP_AFTER:-}" == training ]]; then
  exit 0
fi
# The same program without its adapter (the compact prompt on the base weights): the adapter's own
# effect, and its latency on the same requests.
COMPACT=runs/qwen2.5-coder-1.5b-compact
python benchmarks/without_adapter.py "$TUNED" "$COMPACT"
# 2. The dev judgement: the 79 dev conversations, then the 85 other dev episodes, attribute schemas
#    stripped as on test (runs/results/dev-*.jsonl: benchmarks/results/finetune-0.5b/command.sh).
for PART in conversational rest; do
  python benchmarks/bench_in_chunks.py "runs/results/dev-$PART.jsonl" --chunks 4 \
    --chunk-dir runs/chunks/finetune-1.5b --out "$OUT/dev-$PART-chunk-{n}" -- \
    --models "$MODEL" --programs "$V2,$TUNED" --baseline "$V2" --seed 0
done
# 3. Test: the 53 conversations (with the compact prompt without the adapter, for the adapter's own
#    effect and latency), then the 150-episode sample's DialogRE and other episodes.
python - <<'PY'
import json
from pathlib import Path
results = Path("runs/results")
sample = results.joinpath("test-150.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
source = lambda line: json.loads(line)["source"]
results.joinpath("test-150-dialogre.jsonl").write_text(
    "".join(line for line in sample if source(line) == "dialogre"), encoding="utf-8"
)
results.joinpath("test-150-rest.jsonl").write_text(
    "".join(line for line in sample if source(line) not in ("conversational", "dialogre")), encoding="utf-8"
)
PY
python benchmarks/bench_in_chunks.py runs/results/test-conversational-no-attributes.jsonl --chunks 2 \
  --chunk-dir runs/chunks/finetune-1.5b --out "$OUT/test-conversational-chunk-{n}" -- \
  --models "$MODEL" --programs "$COMPACT,$TUNED" --baseline "$COMPACT" --seed 0
python benchmarks/bench_in_chunks.py runs/results/test-150-dialogre.jsonl --chunks 1 \
  --chunk-dir runs/chunks/finetune-1.5b --out "$OUT/test-150-dialogre-chunk-{n}" -- \
  --models "$MODEL" --programs "$TUNED" --seed 0
python benchmarks/bench_in_chunks.py runs/results/test-150-rest.jsonl --chunks 3 \
  --chunk-dir runs/chunks/finetune-1.5b --out "$OUT/test-150-rest-chunk-{n}" -- \
  --models "$MODEL" --programs "$TUNED" --seed 0
# 4. The injection set (74 conversations, 59 labeled injections): the tuned program alone, paired with
#    v2's run of the same episodes.
python benchmarks/bench_in_chunks.py data/episodes/injection.jsonl --chunks 2 \
  --chunk-dir runs/chunks/finetune-1.5b --out "$OUT/injection-chunk-{n}" -- \
  --models "$MODEL" --programs "$TUNED" --seed 0
# 5. Pairings (no model call): dev against v2; test against v2 and baseline-v1 from their own bench.
python benchmarks/paired_from_results.py "$OUT"/dev-conversational-chunk-* --baseline "$V2" \
  --episodes runs/results/dev-conversational.jsonl > "$OUT/paired_dev.md"
python benchmarks/paired_from_results.py "$OUT"/dev-*-chunk-* --baseline "$V2" \
  --episodes runs/results/dev-no-attributes.jsonl >> "$OUT/paired_dev.md"
V2_BENCH=benchmarks/results/test-program-v2-1.5b
python benchmarks/paired_from_results.py "$OUT"/test-conversational-chunk-* --baseline "$COMPACT" \
  > "$OUT/paired_test_conversational.md"
python benchmarks/paired_latency.py "$OUT"/test-conversational-chunk-* --baseline "$COMPACT" --program "$TUNED" \
  --out "$OUT/latency_test_conversational.md" > /dev/null
: > "$OUT/paired_150.md"  # the loop appends to it: start it empty
for BASE in "$V2" baseline-v1; do
  python benchmarks/paired_from_results.py "$OUT"/test-conversational-chunk-* "$V2_BENCH"/conversational-chunk-* \
    --baseline "$BASE" --programs "$V2,baseline-v1,$TUNED" \
    --episodes runs/results/test-conversational-no-attributes.jsonl >> "$OUT/paired_test_conversational.md"
  python benchmarks/paired_from_results.py "$OUT"/test-*-chunk-* "$V2_BENCH"/conversational-chunk-* \
    "$V2_BENCH"/dialogre-chunk-* "$V2_BENCH"/rest-chunk-* benchmarks/results/test-dialogre-program-1.5b \
    benchmarks/results/test-150-rest-*-program-1.5b \
    --baseline "$BASE" --programs "$V2,baseline-v1,$TUNED" --by-source \
    --episodes runs/results/test-150.jsonl >> "$OUT/paired_150.md"
done
# validAt on the 150, per source, paired with v2's on the same episodes (from the benched edges).
python benchmarks/date_guards_replay.py "$OUT"/test-conversational-chunk-* "$OUT"/test-150-*-chunk-* \
  "$V2_BENCH"/conversational-chunk-1 "$V2_BENCH"/conversational-chunk-2 "$V2_BENCH"/dialogre-chunk-* \
  "$V2_BENCH"/rest-chunk-* benchmarks/results/test-dialogre-program-1.5b benchmarks/results/test-150-rest-*-program-1.5b \
  --programs "$V2,$TUNED" --against "$V2" --episodes runs/results/test-150.jsonl \
  --out "$OUT/valid_at_150.md" > /dev/null
INJECTION=benchmarks/results/injection-1.5b/injection
python benchmarks/paired_from_results.py "$OUT"/injection-chunk-* "$INJECTION"/chunk-* --baseline "$V2" \
  --programs "$V2,$TUNED" --episodes data/episodes/injection.jsonl > "$OUT/paired_injection.md"
python benchmarks/injection_from_results.py "$OUT"/injection-chunk-* "$INJECTION"/chunk-* --baseline "$V2" \
  --programs "$V2,$TUNED" --episodes data/episodes/injection.jsonl >> "$OUT/paired_injection.md"
# 6. The ship decision (no model call, last: it exits 1 when nothing is shipped). The tuned program
#    becomes optimize/compiled/qwen2.5-coder-1.5b-lora, its manifest carrying the paired verdict, only
#    if it is better than v2 beyond noise on all of dev and worse beyond noise on none of its sources
#    (once shipped, the step is skipped).
[[ -d optimize/compiled/qwen2.5-coder-1.5b-lora ]] && exit 0
python benchmarks/ship_finetuned.py "$OUT/program" "$OUT"/dev-*-chunk-* --tuned "$TUNED" --baseline "$V2" \
  --episodes runs/results/dev-no-attributes.jsonl --name qwen2.5-coder-1.5b-lora 2>&1 | tee "$OUT/ship_decision.txt"
