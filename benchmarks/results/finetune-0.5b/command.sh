#!/usr/bin/env bash
# Reproduces this folder: a LoRA adapter of the 0.5B trained on the train split's gold replies
# (`edgewise optimize --optimizer finetune`), judged against the 0.5B's own program without it, and
# against the 1.5B's qwen2.5-coder-1.5b-program-v2 and baseline-v1 (their test bench:
# benchmarks/results/test-program-v2-1.5b). Benches run in resumable chunks (a complete chunk is
# skipped, so the same command resumes); the training resumes from runs/qwen2.5-coder-0.5b-lora.training.
# Needs runs/results/test-conversational-no-attributes.jsonl (benchmarks/results/test-recall-program-1.5b/command.sh
# writes it from STEPS=1 bash benchmarks/run_results.sh).
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=benchmarks/results/finetune-0.5b
TUNED=runs/qwen2.5-coder-0.5b-lora
# 1. Training: 1 epoch over the 355 exhaustively labeled train episodes, adapters on the top 12 of 24
#    blocks (rank 16, all seven linear layers), 4 examples a step; the same command resumes.
#    (Run here as two sessions of one run: stopped with Ctrl-C after step 36, then resumed.)
#    The program this folder's benches ran is kept in $OUT/program (8.8 MB with its adapter);
#    with SKIP_TRAINING=1 it is the one benched.
if [[ -n "${SKIP_TRAINING:-}" && ! -d "$TUNED" ]]; then
  mkdir -p runs && cp -r "$OUT/program" "$TUNED"
fi
if [[ -z "${SKIP_TRAINING:-}" ]]; then
  edgewise optimize --optimizer finetune --model local/qwen2.5-coder-0.5b --out "$TUNED" \
    --epochs 1 --top-layers 12 --batch-size 4 --dev-size 16 --max-minutes 85 --checkpoint-minutes 5 \
    > "$OUT/training.txt"
fi
# The same program without its adapter (the compact prompt on the base weights): the adapter's own
# effect, and its latency on the same requests.
COMPACT=runs/qwen2.5-coder-0.5b-compact
python benchmarks/without_adapter.py "$TUNED" "$COMPACT"
# 2. The 53 test conversations (attribute schemas stripped, as the 1.5B's v2 bench sent them).
python benchmarks/bench_in_chunks.py runs/results/test-conversational-no-attributes.jsonl --chunks 2 \
  --chunk-dir runs/chunks/finetune --out "$OUT/test-conversational-chunk-{n}" -- \
  --models local/qwen2.5-coder-0.5b --programs default,"$COMPACT","$TUNED" --baseline default --seed 0
# 3. The dev judgement: the 79 dev conversations first, then the 85 other dev episodes, attribute
#    schemas stripped as on test (with them the 0.5B's own program makes 3.7 calls an episode and
#    writes to max_tokens: 59 s an episode at the median on the first 12, where this run was stopped).
python - <<'PY'
import json
from pathlib import Path
rows = [json.loads(line) for line in Path("data/episodes/dev.jsonl").open(encoding="utf-8")]
for row in rows:
    for edge_type in row.get("edgeTypes", []):
        edge_type.pop("attributes", None)
    for edge in row["edges"]:
        edge.pop("attributes", None)
def write(name, chosen):
    Path(f"runs/results/{name}.jsonl").write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in chosen), encoding="utf-8"
    )
write("dev-conversational", [row for row in rows if row["source"] == "conversational"])
write("dev-rest", [row for row in rows if row["source"] != "conversational"])
write("dev-no-attributes", rows)
PY
for PART in conversational rest; do
  python benchmarks/bench_in_chunks.py "runs/results/dev-$PART.jsonl" --chunks 4 \
    --chunk-dir runs/chunks/finetune --out "$OUT/dev-$PART-chunk-{n}" -- \
    --models local/qwen2.5-coder-0.5b --programs default,"$TUNED" --baseline default --seed 0
done
# 4. Pairings (no model call).
python benchmarks/paired_from_results.py "$OUT"/dev-conversational-chunk-* --baseline default \
  --episodes runs/results/dev-conversational.jsonl > "$OUT/paired_dev.md"
python benchmarks/paired_from_results.py "$OUT"/dev-*-chunk-* --baseline default \
  --episodes runs/results/dev-no-attributes.jsonl >> "$OUT/paired_dev.md"
python benchmarks/paired_from_results.py "$OUT"/test-conversational-chunk-* --baseline default \
  > "$OUT/paired_test_conversational.md"
python benchmarks/paired_from_results.py "$OUT"/test-conversational-chunk-* --baseline "$COMPACT" \
  >> "$OUT/paired_test_conversational.md"
V2=benchmarks/results/test-program-v2-1.5b
for BASE in qwen2.5-coder-1.5b-program-v2 baseline-v1; do
  python benchmarks/paired_from_results.py "$OUT"/test-conversational-chunk-* "$V2"/conversational-chunk-* \
    --baseline "$BASE" --baseline-model local/qwen2.5-coder-1.5b --programs "$BASE,$TUNED,default" \
    --episodes runs/results/test-conversational-no-attributes.jsonl >> "$OUT/paired_test_conversational.md"
done
# 4. The ship decision (no model call): the tuned program becomes optimize/compiled/qwen2.5-coder-0.5b-lora,
#    its manifest carrying the paired verdict, only if it is better than the 0.5B's own program beyond
#    noise on all of dev and worse beyond noise on none of its sources; otherwise nothing is shipped and
#    this exits 1. The verdict, per source too, is in ship_decision.txt.
python benchmarks/ship_finetuned.py "$OUT/program" "$OUT"/dev-*-chunk-* --tuned "$TUNED" --baseline default \
  --episodes runs/results/dev-no-attributes.jsonl --name qwen2.5-coder-0.5b-lora 2>&1 | tee "$OUT/ship_decision.txt"
