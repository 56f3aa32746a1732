#!/usr/bin/env bash
cd /work/main
export PATH=/work/main/.venv/bin:$PATH
if grep -q '"selected": "compiled"' optimize/compiled/qwen2.5-coder-1.5b-gold/manifest.json; then
  TEST_DATA=test-conversational BENCH_PROGRAMS=default STEPS="6" bash benchmarks/run_results.sh
else
  edgewise bench --models local/qwen2.5-coder-1.5b --programs default,runs/cand-best-1.5b --baseline default \
    --data runs/results/test-conversational.jsonl --seed 0 --out runs/results/test-conversational-1.5b-candidate \
    > runs/results/test-conversational-1.5b-candidate.log 2>&1
fi
