#!/usr/bin/env bash
# Reproduces this folder: the frozen baseline and the shipped program on the 53 conversational test
# episodes, 1.5B, paired against baseline-v1. The Graphiti programs were stopped after 7 episodes here
# (results.json is partial); their rows are in ../test-conversational-graphiti-1.5b.
# runs/results/test-conversational.jsonl is written by step 1 of benchmarks/run_results.sh.
cd "$(dirname "$0")/../../.."
edgewise bench --models local/qwen2.5-coder-1.5b \
  --programs baseline-v1,qwen2.5-coder-1.5b-program,graphiti-structured,graphiti --baseline baseline-v1 \
  --data runs/results/test-conversational.jsonl --seed 0 --out benchmarks/results/test-conversational-program-1.5b
