#!/usr/bin/env bash
# Reproduces this folder: the ten labeled example episodes (data/examples/episodes.jsonl), 1.5B, the
# uncompiled program and the shipped qwen2.5-coder-1.5b-program, paired against the uncompiled one;
# then the README's first command, whose output is first-run.jsonl (stderr: first-run.stderr).
cd "$(dirname "$0")/../../.."
edgewise bench --models local/qwen2.5-coder-1.5b --programs default,qwen2.5-coder-1.5b-program \
  --baseline default --data data/examples/episodes.jsonl --seed 0 --out benchmarks/results/examples-1.5b
edgewise extract --input data/examples/episodes.jsonl --no-progress \
  > benchmarks/results/examples-1.5b/first-run.jsonl 2> benchmarks/results/examples-1.5b/first-run.stderr
# The same command once qwen2.5-coder-1.5b-program-v2 became the default (first-run-v2.jsonl), named
# explicitly so that it reruns that program whatever the default becomes:
edgewise extract --program qwen2.5-coder-1.5b-program-v2 --input data/examples/episodes.jsonl --no-progress \
  > benchmarks/results/examples-1.5b/first-run-v2.jsonl 2> benchmarks/results/examples-1.5b/first-run-v2.stderr
# Once qwen2.5-coder-1.5b-lora (with its adapter) became the default: it and v2 benched on the ten
# examples, paired against v2 (lora/), and the README's first command again (first-run-lora.jsonl),
# the program named so that it reruns this one whatever the default becomes.
edgewise bench --models local/qwen2.5-coder-1.5b --programs qwen2.5-coder-1.5b-program-v2,qwen2.5-coder-1.5b-lora \
  --baseline qwen2.5-coder-1.5b-program-v2 --data data/examples/episodes.jsonl --seed 0 \
  --out benchmarks/results/examples-1.5b/lora
edgewise extract --program qwen2.5-coder-1.5b-lora --input data/examples/episodes.jsonl --no-progress \
  > benchmarks/results/examples-1.5b/first-run-lora.jsonl 2> benchmarks/results/examples-1.5b/first-run-lora.stderr
