#!/usr/bin/env bash
# The 74 test-150 episodes that are neither conversational nor DialogRE (their 53 and 23 come from the
# conversational and DialogRE test benches), benched in 5 source-stratified chunks so that a run cut
# short still leaves complete paired chunks (benchmarks/bench_in_chunks.py: episode i of each source in
# chunk (i mod 5) + 1, written to runs/results/test-150-rest-N.jsonl; complete chunks are skipped).
# Merge with benchmarks/paired_from_results.py --episodes.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python}
"$PY" - <<'EOF'
import json
from pathlib import Path
lines = Path("runs/results/test-150.jsonl").read_text().splitlines(keepends=True)
rest = [line for line in lines if json.loads(line)["source"] not in ("conversational", "dialogre")]
Path("runs/results/test-150-rest.jsonl").write_text("".join(rest))
EOF
"$PY" benchmarks/bench_in_chunks.py runs/results/test-150-rest.jsonl --chunks 5 --chunk-dir runs/results \
  --out 'benchmarks/results/test-150-rest-{n}-program-1.5b' -- \
  --models local/qwen2.5-coder-1.5b --programs baseline-v1,qwen2.5-coder-1.5b-program \
  --baseline baseline-v1 --seed 0
