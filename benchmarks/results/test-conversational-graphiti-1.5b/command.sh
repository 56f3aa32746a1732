#!/usr/bin/env bash
# Reproduces this folder: Graphiti's own edge prompt (graphiti: sent and parsed as Graphiti's client does
# without a schema; graphiti-structured: with ExtractedEdges' JSON schema as response_format), the
# uncompiled default and the shipped qwen2.5-coder-1.5b-program on the 53 conversational test episodes,
# 1.5B, in four source-stratified chunks (chunk-N: every program on the same server), then scored as one
# sample, paired against graphiti-structured (paired.md, paired.json; no model call).
# runs/results/test-conversational.jsonl is written by step 1 of benchmarks/run_results.sh.
cd "$(dirname "$0")/../../.."
python benchmarks/bench_in_chunks.py runs/results/test-conversational.jsonl --chunks 4 \
  --out 'benchmarks/results/test-conversational-graphiti-1.5b/chunk-{n}' -- \
  --models local/qwen2.5-coder-1.5b --programs graphiti-structured,graphiti,default,qwen2.5-coder-1.5b-program \
  --baseline graphiti-structured --seed 0
python benchmarks/paired_from_results.py benchmarks/results/test-conversational-graphiti-1.5b/chunk-* \
  --baseline graphiti-structured --episodes runs/results/test-conversational.jsonl \
  --json benchmarks/results/test-conversational-graphiti-1.5b/paired.json \
  > benchmarks/results/test-conversational-graphiti-1.5b/paired.md
