#!/usr/bin/env bash
# Reproduces this folder: the ten example episodes (data/examples/episodes.jsonl) sent without their
# edgeTypes (--open-vocabulary), 1.5B: the shipped qwen2.5-coder-1.5b-program as it was compiled
# (runs/program-no-default-types: default_types off) and with the default vocabulary offered to an
# episode that lists no types (runs/program-default-types), paired against the former.
cd "$(dirname "$0")/../../.."
python benchmarks/program_variant.py qwen2.5-coder-1.5b-program runs/program-no-default-types \
  --set default_types=false
python benchmarks/program_variant.py qwen2.5-coder-1.5b-program runs/program-default-types \
  --set default_types=true
edgewise bench --models local/qwen2.5-coder-1.5b --programs runs/program-no-default-types,runs/program-default-types \
  --baseline runs/program-no-default-types --data data/examples/episodes.jsonl --open-vocabulary \
  --seed 0 --out benchmarks/results/examples-open-1.5b
