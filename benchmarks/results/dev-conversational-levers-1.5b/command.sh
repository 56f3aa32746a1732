#!/usr/bin/env bash
# Reproduces this folder: recall levers tried by hand on the 16 conversational dev episodes, 1.5B, each
# as a variant of the shipped qwen2.5-coder-1.5b-program (benchmarks/program_variant.py), benched with it
# on one server. entities/: coverage by entity, on the episodes as labeled (attribute calls included).
# typed-and-gleaning/: the typed grammar, forced gleaning and both, on the episodes without their
# attribute schemas (extraction calls only). Its typed-glean row ran before gleaning's own grammar was
# typed too (commit 9ccdb24): a rerun gets the typed gleaning grammar. --files-only writes the two
# episode files and stops.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=benchmarks/results/dev-conversational-levers-1.5b
python - <<'PY'
import json
from pathlib import Path

lines = Path("data/episodes/dev.jsonl").read_text(encoding="utf-8").splitlines()
rows = [json.loads(line) for line in lines if json.loads(line)["source"] == "conversational"]
Path("runs/results").mkdir(parents=True, exist_ok=True)
Path("runs/results/dev-conversational.jsonl").write_text(
    "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8"
)
for row in rows:
    for edge_type in row.get("edgeTypes", []):
        edge_type.pop("attributes", None)
    for edge in row["edges"]:
        edge.pop("attributes", None)
Path("runs/results/dev-conversational-na.jsonl").write_text(
    "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8"
)
PY
[ "${1:-}" = "--files-only" ] && exit 0
variant() { python benchmarks/program_variant.py qwen2.5-coder-1.5b-program "runs/variants/$1" "${@:2}"; }
variant entities --set formulation=entities
variant typed --set typed_grammar=true
variant glean-forced --set gleaning=1 --set glean_forced=true
variant typed-glean --set typed_grammar=true --set gleaning=1 --set glean_forced=true
edgewise bench --models local/qwen2.5-coder-1.5b --programs qwen2.5-coder-1.5b-program,runs/variants/entities \
  --baseline qwen2.5-coder-1.5b-program --data runs/results/dev-conversational.jsonl --seed 0 --out "$OUT/entities"
edgewise bench --models local/qwen2.5-coder-1.5b \
  --programs qwen2.5-coder-1.5b-program,runs/variants/typed,runs/variants/glean-forced,runs/variants/typed-glean \
  --baseline qwen2.5-coder-1.5b-program --data runs/results/dev-conversational-na.jsonl --seed 0 \
  --out "$OUT/typed-and-gleaning"
