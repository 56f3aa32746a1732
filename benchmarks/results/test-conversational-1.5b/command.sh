#!/usr/bin/env bash
# Reproduces this folder: default vs the kept gold-demo candidate on the conversational test episodes.
# runs/results/test-conversational.jsonl is written by step 1 of benchmarks/run_results.sh.
cd "$(dirname "$0")/../../.."
edgewise bench --models local/qwen2.5-coder-1.5b \
  --programs default,benchmarks/results/test-conversational-1.5b/candidate-program --baseline default \
  --data runs/results/test-conversational.jsonl --seed 0 --out runs/results/test-conversational-1.5b-candidate
