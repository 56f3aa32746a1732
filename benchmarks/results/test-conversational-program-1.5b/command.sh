#!/usr/bin/env bash
# Reproduces this folder: the frozen baseline, the shipped program and Graphiti's own prompt on the 53
# conversational test episodes, 1.5B, paired against baseline-v1; against graphiti-structured with
#   python benchmarks/paired_from_results.py benchmarks/results/test-conversational-program-1.5b --baseline graphiti-structured
# runs/results/test-conversational.jsonl is written by step 1 of benchmarks/run_results.sh.
cd "$(dirname "$0")/../../.."
edgewise bench --models local/qwen2.5-coder-1.5b \
  --programs baseline-v1,qwen2.5-coder-1.5b-program,graphiti-structured,graphiti --baseline baseline-v1 \
  --data runs/results/test-conversational.jsonl --seed 0 --out benchmarks/results/test-conversational-program-1.5b
