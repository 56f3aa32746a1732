#!/usr/bin/env bash
# Reproduces this folder: the 150-episode source-stratified test sample (runs/results/test-150.jsonl, step 1
# of benchmarks/run_results.sh: every conversational test episode and 97 more stratified by source, seed 0),
# 1.5B, baseline-v1 vs qwen2.5-coder-1.5b-program, paired. Its 53 conversational and 23 DialogRE episodes were
# benched in test-conversational-program-1.5b and test-dialogre-program-1.5b (same programs, model and
# runtime); the other 74 in five source-stratified chunks by benchmarks/test150_in_chunks.sh. This merges them
# (no model call) and scores the 150 as one sample.
cd "$(dirname "$0")/../../.."
bash benchmarks/test150_in_chunks.sh   # skips the chunks already complete
python benchmarks/paired_from_results.py benchmarks/results/test-conversational-program-1.5b \
  benchmarks/results/test-dialogre-program-1.5b benchmarks/results/test-150-rest-*-program-1.5b \
  --baseline baseline-v1 --programs baseline-v1,qwen2.5-coder-1.5b-program \
  --episodes runs/results/test-150.jsonl --json benchmarks/results/test-150-program-1.5b/paired.json \
  > benchmarks/results/test-150-program-1.5b/paired.md
