#!/usr/bin/env bash
# The 74 test-150 episodes that are neither conversational nor DialogRE (their 53 and 23 come from the
# conversational and DialogRE test benches), benched in 5 source-stratified chunks so that a run cut
# short still leaves complete paired chunks. Chunks: runs/results/test-150-rest-N.jsonl, episode i of each
# source in chunk (i mod 5) + 1. Merge with benchmarks/paired_from_results.py --episodes.
set -u
cd "$(dirname "$0")/.."
EDGEWISE=${EDGEWISE:-edgewise}
for n in 1 2 3 4 5; do
  out=benchmarks/results/test-150-rest-$n-program-1.5b
  [ -f "$out/results.json" ] && grep -q '"partial": false' "$out/results.json" && continue
  "$EDGEWISE" bench --models local/qwen2.5-coder-1.5b --programs baseline-v1,qwen2.5-coder-1.5b-program \
    --baseline baseline-v1 --data runs/results/test-150-rest-$n.jsonl --seed 0 --out "$out" || exit $?
done
