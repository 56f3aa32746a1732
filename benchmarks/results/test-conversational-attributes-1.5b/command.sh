#!/usr/bin/env bash
# Reproduces this folder: the 53 conversational test episodes with their attribute schemas and gold
# attribute labels (runs/results/test-conversational.jsonl, step 1 of benchmarks/run_results.sh),
# 1.5B, the shipped qwen2.5-coder-1.5b-program in its three attribute formulations: per-edge (the
# seed's extract_attributes, one call per edge whose type declares attributes: the shipped program's
# own setting), in-extraction (the attributes inside the extraction reply) and per-episode (one
# attribute call per episode), paired against per-edge. Benched in 4 source-stratified chunks
# (chunk-1 ... chunk-4); a complete chunk is skipped, so the same command resumes. The pairing over
# all chunks: python benchmarks/paired_from_results.py benchmarks/results/test-conversational-attributes-1.5b/chunk-* \
#   --baseline qwen2.5-coder-1.5b-program --episodes runs/results/test-conversational.jsonl
cd "$(dirname "$0")/../../.."
python benchmarks/program_variant.py qwen2.5-coder-1.5b-program runs/program-attributes-in-extraction \
  --set attributes=in-extraction
python benchmarks/program_variant.py qwen2.5-coder-1.5b-program runs/program-attributes-per-episode \
  --set attributes=per-episode
python benchmarks/bench_in_chunks.py runs/results/test-conversational.jsonl --chunks 4 \
  --out 'benchmarks/results/test-conversational-attributes-1.5b/chunk-{n}' -- \
  --models local/qwen2.5-coder-1.5b \
  --programs qwen2.5-coder-1.5b-program,runs/program-attributes-in-extraction,runs/program-attributes-per-episode \
  --baseline qwen2.5-coder-1.5b-program --seed 0
python benchmarks/paired_from_results.py benchmarks/results/test-conversational-attributes-1.5b/chunk-* \
  --baseline qwen2.5-coder-1.5b-program --episodes runs/results/test-conversational.jsonl \
  --json benchmarks/results/test-conversational-attributes-1.5b/paired.json \
  > benchmarks/results/test-conversational-attributes-1.5b/paired.md
python benchmarks/attribute_grounding_replay.py benchmarks/results/test-conversational-attributes-1.5b/chunk-* \
  --episodes runs/results/test-conversational.jsonl \
  --out benchmarks/results/test-conversational-attributes-1.5b/grounding_replay.md
