#!/usr/bin/env bash
# Reproduces this folder: samples and votes on the 16 conversational dev episodes (without their
# attribute schemas), 1.5B: qwen2.5-coder-1.5b-program-v2 (one greedy reply) beside its variants that
# sample k replies in one request at temperature 0.7 and keep an edge written by at least `votes` of
# them, on one server with three slots (llama-server generates the k replies side by side). How the
# time per episode grows with k on 2 cores is the latency column.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=benchmarks/results/samples-1.5b
bash benchmarks/results/dev-conversational-levers-1.5b/command.sh --files-only
for spec in "2 1" "3 2"; do
  set -- $spec
  python benchmarks/program_variant.py qwen2.5-coder-1.5b-program-v2 "runs/program-v2-samples-$1-votes-$2" \
    --set samples="$1" --set votes="$2"
done
edgewise bench --models local/qwen2.5-coder-1.5b --local-slots 3 \
  --programs qwen2.5-coder-1.5b-program-v2,runs/program-v2-samples-2-votes-1,runs/program-v2-samples-3-votes-2 \
  --baseline qwen2.5-coder-1.5b-program-v2 --data runs/results/dev-conversational-na.jsonl --seed 0 --out "$OUT"
