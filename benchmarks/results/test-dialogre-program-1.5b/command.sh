#!/usr/bin/env bash
# Reproduces this folder: the frozen baseline and the shipped program on the 60 DialogRE test episodes,
# 1.5B, paired. runs/results/test-dialogre.jsonl holds the test split's dialogre episodes:
#   python -c "from edgewise.data import load_episodes; import sys; sys.stdout.writelines(e.model_dump_json(by_alias=True) + '\n' for e in load_episodes('test') if e.source == 'dialogre')" > runs/results/test-dialogre.jsonl
cd "$(dirname "$0")/../../.."
edgewise bench --models local/qwen2.5-coder-1.5b --programs baseline-v1,qwen2.5-coder-1.5b-program \
  --baseline baseline-v1 --data runs/results/test-dialogre.jsonl --seed 0 \
  --out benchmarks/results/test-dialogre-program-1.5b
