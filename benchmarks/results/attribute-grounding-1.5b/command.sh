#!/usr/bin/env bash
# Reproduces this folder: attribute grounding judged away from the test split. The shipped
# qwen2.5-coder-1.5b-program without grounding (runs/program-ungrounded) benched on the
# conversational episodes of dev (16, the lever's judge, as compile judges one) and of train (28, a
# second look; SPLITS=dev for the judge alone), 1.5B; then grounding replayed on the benched replies (no model call), and on the test
# conversations' attribute bench (test-conversational-attributes-1.5b).
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=benchmarks/results/attribute-grounding-1.5b
python - <<'PY'
import json
from pathlib import Path

for split in ("dev", "train"):
    lines = Path(f"data/episodes/{split}.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    Path(f"runs/results/{split}-conversational.jsonl").write_text(
        "".join(line for line in lines if json.loads(line)["source"] == "conversational"), encoding="utf-8"
    )
PY
python benchmarks/program_variant.py qwen2.5-coder-1.5b-program runs/program-ungrounded \
  --set attribute_grounding=false
for split in ${SPLITS:-dev train}; do
  if [ ! -s "$OUT/$split/results.json" ]; then
    edgewise bench --models local/qwen2.5-coder-1.5b --programs runs/program-ungrounded \
      --data "runs/results/$split-conversational.jsonl" --seed 0 --out "$OUT/$split"
  fi
  python benchmarks/attribute_grounding_replay.py "$OUT/$split" --out "$OUT/$split/grounding_replay.md"
done
python benchmarks/attribute_grounding_replay.py benchmarks/results/test-conversational-attributes-1.5b/chunk-* \
  --episodes runs/results/test-conversational.jsonl --out "$OUT/test_grounding_replay.md"
