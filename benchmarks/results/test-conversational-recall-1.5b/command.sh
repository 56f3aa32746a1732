#!/usr/bin/env bash
# Reproduces this folder: on the 53 conversational test episodes, 1.5B, the shipped
# qwen2.5-coder-1.5b-program with forced gleaning (one continuation turn that must add an edge).
# The episodes are runs/results/test-conversational.jsonl (step 1 of benchmarks/run_results.sh) with
# the edge types' attributes and the gold attribute labels removed, as the episodes of
# ../test-conversational-program-1.5b were benched, so that the two runs pair on the same requests
# but for the gleaning turn. The pairing is benchmarks/paired_from_results.py, in ./paired.md.
cd "$(dirname "$0")/../../.."
python - <<'PY'
import json
rows = [json.loads(line) for line in open("runs/results/test-conversational.jsonl", encoding="utf-8")]
for row in rows:
    for edge_type in row.get("edgeTypes", []):
        edge_type.pop("attributes", None)
    for edge in row["edges"]:
        edge.pop("attributes", None)
with open("runs/results/test-conversational-no-attributes.jsonl", "w", encoding="utf-8") as out:
    out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
PY
python benchmarks/program_variant.py qwen2.5-coder-1.5b-program runs/program-glean-forced \
  --set gleaning=1 --set glean_forced=true
edgewise bench --models local/qwen2.5-coder-1.5b --programs runs/program-glean-forced \
  --data runs/results/test-conversational-no-attributes.jsonl --seed 0 \
  --out benchmarks/results/test-conversational-recall-1.5b
