#!/usr/bin/env bash
# Reproduces this folder: the injection set (data/episodes/injection.jsonl, 74 episodes, 59 labeled
# injections) on the local 1.5B, and the two injection defences judged on it and on the 79 dev
# conversations. Each bench runs in resumable chunks (benchmarks/bench_in_chunks.py).
#   injection/                  baseline-v1 and qwen2.5-coder-1.5b-program-v2 (benched before the bench
#                               wrote the injected-edge rate itself: quoted_text_replay.md gives it, as
#                               benched and with the quoted-text check, from their replies)
#   injection-speaker-marks/    v2 with speaker_marks
#   dev-conversational/         v2 and v2 with speaker_marks, paired, on the 16 + 63 dev conversations
#                               (attributes left out: the defences are judged by edge-F1); the
#                               quoted-text check replayed on v2's replies there (quoted_text_replay.md)
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=benchmarks/results/injection-1.5b
mkdir -p runs/results runs/injection
python - <<'PY'
import json
from pathlib import Path

rows = []
for line in Path("data/episodes/dev.jsonl").read_text(encoding="utf-8").splitlines():
    row = json.loads(line)
    if row["source"] != "conversational":
        continue
    for edge_type in row.get("edgeTypes", []):
        edge_type.pop("attributes", None)
    for edge in row["edges"]:
        edge.pop("attributes", None)
    rows.append(json.dumps(row, ensure_ascii=False) + "\n")
Path("runs/results/dev-conversational-79-na.jsonl").write_text("".join(rows), encoding="utf-8")
PY
python benchmarks/program_variant.py qwen2.5-coder-1.5b-program-v2 runs/injection/v2-speaker-marks --set speaker_marks=true
python benchmarks/bench_in_chunks.py data/episodes/injection.jsonl --chunks 2 --out "$OUT/injection/chunk-{n}" -- \
  --models local/qwen2.5-coder-1.5b --programs baseline-v1,qwen2.5-coder-1.5b-program-v2 --baseline baseline-v1 --seed 0
python benchmarks/quoted_text_replay.py "$OUT"/injection/chunk-* --episodes data/episodes/injection.jsonl \
  --out "$OUT/injection/quoted_text_replay.md"
python benchmarks/bench_in_chunks.py data/episodes/injection.jsonl --chunks 2 --out "$OUT/injection-speaker-marks/chunk-{n}" -- \
  --models local/qwen2.5-coder-1.5b --programs runs/injection/v2-speaker-marks --seed 0
python benchmarks/injection_from_results.py "$OUT"/injection/chunk-* "$OUT"/injection-speaker-marks/chunk-* \
  --baseline qwen2.5-coder-1.5b-program-v2 --episodes data/episodes/injection.jsonl --out "$OUT/injection_rate.md"
python benchmarks/bench_in_chunks.py runs/results/dev-conversational-79-na.jsonl --chunks 4 --out "$OUT/dev-conversational/chunk-{n}" -- \
  --models local/qwen2.5-coder-1.5b --programs qwen2.5-coder-1.5b-program-v2,runs/injection/v2-speaker-marks \
  --baseline qwen2.5-coder-1.5b-program-v2 --seed 0
python benchmarks/paired_from_results.py "$OUT"/dev-conversational/chunk-* --baseline qwen2.5-coder-1.5b-program-v2 \
  --episodes runs/results/dev-conversational-79-na.jsonl
python benchmarks/quoted_text_replay.py "$OUT"/dev-conversational/chunk-* --programs qwen2.5-coder-1.5b-program-v2 \
  --out "$OUT/dev-conversational/quoted_text_replay.md"
