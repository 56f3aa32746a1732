#!/usr/bin/env bash
# Reproduces this folder: qwen2.5-coder-1.5b-program-v2 (the recall compile on all 101 dev episodes:
# learned type signatures, dates from facts, speaker names) on the test split, 1.5B, in resumable
# source-stratified chunks (a complete chunk is skipped, so the same command resumes):
# - conversational-chunk-{1,2}: the 53 conversational test episodes without their attribute schemas
#   (the requests of test-recall-program-1.5b), beside baseline-v1, qwen2.5-coder-1.5b-program and two
#   variants of the new program with the levers its compile did not keep on the pooled dev score: the
#   typed grammar (runs/program-v2-typed) and the typed grammar with one forced gleaning turn
#   (runs/program-v2-typed-glean), all on one server;
# - dialogre-chunk-{1,2} and rest-chunk-{1,2,3}: the 60 DialogRE test episodes and the 74 test-150
#   episodes of the other sources, the new program alone, paired with the earlier programs' own test
#   benches (benchmarks/paired_from_results.py, no model call).
# Needs runs/results/test-150.jsonl and test-conversational.jsonl (STEPS=1 bash benchmarks/run_results.sh)
# and the split files test-recall-program-1.5b/command.sh writes first.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=benchmarks/results/test-program-v2-1.5b
python benchmarks/program_variant.py qwen2.5-coder-1.5b-program-v2 runs/program-v2-typed --set typed_grammar=true
python benchmarks/program_variant.py qwen2.5-coder-1.5b-program-v2 runs/program-v2-typed-glean \
  --set typed_grammar=true --set gleaning=1 --set glean_forced=true
# Here chunk 1 was benched in two runs, because the machine restarted mid-run: its first two programs
# are in conversational-chunk-1-earlier (the command below, stopped), and the other three ran next on
# the same 27 episodes and server build into conversational-chunk-1, which the command below skips:
#   edgewise bench --data runs/chunks/v2/test-conversational-no-attributes-1.jsonl \
#     --out "$OUT/conversational-chunk-1" --models local/qwen2.5-coder-1.5b --seed 0 \
#     --programs qwen2.5-coder-1.5b-program-v2,runs/program-v2-typed,runs/program-v2-typed-glean
# The pairings read conversational-chunk-* so they take both.
python benchmarks/bench_in_chunks.py runs/results/test-conversational-no-attributes.jsonl --chunks 2 \
  --chunk-dir runs/chunks/v2 --out "$OUT/conversational-chunk-{n}" -- \
  --models local/qwen2.5-coder-1.5b \
  --programs baseline-v1,qwen2.5-coder-1.5b-program,qwen2.5-coder-1.5b-program-v2,runs/program-v2-typed,runs/program-v2-typed-glean \
  --baseline baseline-v1 --seed 0
python benchmarks/bench_in_chunks.py runs/results/test-dialogre.jsonl --chunks 2 \
  --chunk-dir runs/chunks/v2 --out "$OUT/dialogre-chunk-{n}" -- \
  --models local/qwen2.5-coder-1.5b --programs qwen2.5-coder-1.5b-program-v2 --seed 0
python benchmarks/bench_in_chunks.py runs/results/test-150-rest.jsonl --chunks 3 \
  --chunk-dir runs/chunks/v2 --out "$OUT/rest-chunk-{n}" -- \
  --models local/qwen2.5-coder-1.5b --programs qwen2.5-coder-1.5b-program-v2 --seed 0
# The pairings (no model call). The conversational ones take all five programs; the DialogRE and
# 150-episode ones take the earlier programs' own test benches for the episodes this run did not give them.
python benchmarks/paired_from_results.py "$OUT"/conversational-chunk-* --baseline baseline-v1 \
  --episodes runs/results/test-conversational-no-attributes.jsonl > "$OUT/paired_conversational.md"
python benchmarks/paired_from_results.py "$OUT"/conversational-chunk-* --baseline qwen2.5-coder-1.5b-program \
  --episodes runs/results/test-conversational-no-attributes.jsonl >> "$OUT/paired_conversational.md"
V2=baseline-v1,qwen2.5-coder-1.5b-program,qwen2.5-coder-1.5b-program-v2
python benchmarks/paired_from_results.py "$OUT"/dialogre-chunk-* benchmarks/results/test-dialogre-program-1.5b \
  --baseline baseline-v1 --programs "$V2" --episodes runs/results/test-dialogre.jsonl > "$OUT/paired_dialogre.md"
python benchmarks/paired_from_results.py "$OUT"/dialogre-chunk-* benchmarks/results/test-dialogre-program-1.5b \
  --baseline qwen2.5-coder-1.5b-program --programs "$V2" --episodes runs/results/test-dialogre.jsonl \
  >> "$OUT/paired_dialogre.md"
ALL150=("$OUT"/conversational-chunk-* "$OUT"/dialogre-chunk-* "$OUT"/rest-chunk-*
  benchmarks/results/test-dialogre-program-1.5b benchmarks/results/test-150-rest-*-program-1.5b)
python benchmarks/paired_from_results.py "${ALL150[@]}" --baseline baseline-v1 --programs "$V2" \
  --episodes runs/results/test-150.jsonl --json "$OUT/paired_150.json" > "$OUT/paired_150.md"
python benchmarks/paired_from_results.py "${ALL150[@]}" --baseline qwen2.5-coder-1.5b-program --programs "$V2" \
  --episodes runs/results/test-150.jsonl >> "$OUT/paired_150.md"
python benchmarks/date_guards_replay.py "${ALL150[@]}" --programs "$V2" --against baseline-v1 \
  --out "$OUT/valid_at_by_source.md"
