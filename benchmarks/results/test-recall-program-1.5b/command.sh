#!/usr/bin/env bash
# Reproduces this folder: the shipped qwen2.5-coder-1.5b-recall (the recall-lever compile's program) on
# the test split, 1.5B, in resumable source-stratified chunks (a complete chunk is skipped, so the same
# command resumes):
# - conversational-chunk-{1,2}: the 53 conversational test episodes without their attribute schemas
#   (the requests of test-conversational-program-1.5b), with baseline-v1 and qwen2.5-coder-1.5b-program
#   on the same server, for the paired intervals and the side-by-side cost;
# - dialogre-chunk-{1,2}: the 60 DialogRE test episodes; rest-chunk-{1,2,3}: the 74 test-150 episodes
#   of the other sources. These two bench the new program alone; their pairs with baseline-v1 and
#   qwen2.5-coder-1.5b-program come from those programs' own test benches (paired.md here).
# Needs runs/results/test-150.jsonl and test-conversational.jsonl (STEPS=1 bash benchmarks/run_results.sh).
set -euo pipefail
cd "$(dirname "$0")/../../.."
python - <<'PY'
import json
from pathlib import Path

results = Path("runs/results")
rows = [json.loads(line) for line in (results / "test-conversational.jsonl").open(encoding="utf-8")]
for row in rows:
    for edge_type in row.get("edgeTypes", []):
        edge_type.pop("attributes", None)
    for edge in row["edges"]:
        edge.pop("attributes", None)
(results / "test-conversational-no-attributes.jsonl").write_text(
    "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8"
)
test = Path("data/episodes/test.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
(results / "test-dialogre.jsonl").write_text(
    "".join(line for line in test if json.loads(line)["source"] == "dialogre"), encoding="utf-8"
)
sample = (results / "test-150.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
(results / "test-150-rest.jsonl").write_text(
    "".join(line for line in sample if json.loads(line)["source"] not in ("conversational", "dialogre")),
    encoding="utf-8",
)
PY
OUT=benchmarks/results/test-recall-program-1.5b
python benchmarks/bench_in_chunks.py runs/results/test-conversational-no-attributes.jsonl --chunks 2 \
  --chunk-dir runs/chunks/recall --out "$OUT/conversational-chunk-{n}" -- \
  --models local/qwen2.5-coder-1.5b \
  --programs baseline-v1,qwen2.5-coder-1.5b-program,qwen2.5-coder-1.5b-recall --baseline baseline-v1 --seed 0
python benchmarks/bench_in_chunks.py runs/results/test-dialogre.jsonl --chunks 2 \
  --chunk-dir runs/chunks/recall --out "$OUT/dialogre-chunk-{n}" -- \
  --models local/qwen2.5-coder-1.5b --programs qwen2.5-coder-1.5b-recall --seed 0
python benchmarks/bench_in_chunks.py runs/results/test-150-rest.jsonl --chunks 3 \
  --chunk-dir runs/chunks/recall --out "$OUT/rest-chunk-{n}" -- \
  --models local/qwen2.5-coder-1.5b --programs qwen2.5-coder-1.5b-recall --seed 0
# The pairs, from the bench files (no model call):
python benchmarks/paired_from_results.py "$OUT"/conversational-chunk-* --baseline baseline-v1 \
  --episodes runs/results/test-conversational-no-attributes.jsonl > "$OUT/paired_conversational.md"
python benchmarks/paired_from_results.py "$OUT"/dialogre-chunk-* benchmarks/results/test-dialogre-program-1.5b \
  --baseline baseline-v1 --episodes runs/results/test-dialogre.jsonl > "$OUT/paired_dialogre.md"
python benchmarks/paired_from_results.py "$OUT"/conversational-chunk-* "$OUT"/dialogre-chunk-* "$OUT"/rest-chunk-* \
  benchmarks/results/test-dialogre-program-1.5b benchmarks/results/test-150-rest-*-program-1.5b \
  --baseline baseline-v1 --episodes runs/results/test-150.jsonl --json "$OUT/paired_150.json" > "$OUT/paired_150.md"
python benchmarks/paired_from_results.py "$OUT"/conversational-chunk-* "$OUT"/dialogre-chunk-* "$OUT"/rest-chunk-* \
  benchmarks/results/test-dialogre-program-1.5b benchmarks/results/test-150-rest-*-program-1.5b \
  --baseline qwen2.5-coder-1.5b-program --episodes runs/results/test-150.jsonl >> "$OUT/paired_150.md"
python benchmarks/date_guards_replay.py "$OUT"/conversational-chunk-* "$OUT"/dialogre-chunk-* "$OUT"/rest-chunk-* \
  benchmarks/results/test-dialogre-program-1.5b benchmarks/results/test-150-rest-*-program-1.5b \
  --against baseline-v1 --out "$OUT/valid_at_by_source.md"
