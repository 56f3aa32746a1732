#!/usr/bin/env bash
# Reproduces this folder: the 53 conversational test episodes (runs/results/test-conversational.jsonl,
# step 1 of benchmarks/run_results.sh) sent without their edgeTypes (--open-vocabulary), 1.5B:
# Graphiti's own prompt (graphiti-structured) and the shipped qwen2.5-coder-1.5b-program with the
# default vocabulary offered to an episode that lists no types (default_types), paired against
# graphiti-structured. The gold is scored as labeled: edge-F1, the alias-aware edge-F1, pair-F1 and
# each run's share of edges per type (results.json, type_shares).
cd "$(dirname "$0")/../../.."
python benchmarks/program_variant.py qwen2.5-coder-1.5b-program runs/program-default-types \
  --set default_types=true
edgewise bench --models local/qwen2.5-coder-1.5b --programs runs/program-default-types,graphiti-structured \
  --baseline graphiti-structured --data runs/results/test-conversational.jsonl --open-vocabulary \
  --seed 0 --out benchmarks/results/test-conversational-open-1.5b
