#!/usr/bin/env bash
# Reproduces this folder: text to graph on the local 1.5B, the entities withheld.
# 1. The ten examples (data/examples/episodes.jsonl) as text alone, through `edgewise extract
#    --find-entities`, LlamaIndex's PropertyGraphIndex and LangChain's transformer (edgewise as the
#    extractor in both): the graph each produced (graph.md, graph.json; extract.jsonl).
# 2. The 53 test conversations with their entities withheld (attribute schemas stripped, as the 1.5B's
#    v2 bench sent them; their exhaustiveEntities marks kept, so entity-F1 scores all 53): the shipped
#    program with its entity step against LlamaIndex's SchemaLLMPathExtractor prompt (as a model without
#    function calling gets it, and as a function-calling one does: llama-index-structured) and LangChain's
#    LLMGraphTransformer prompt on the same model, paired per episode (entity-F1, and the alias-aware
#    edge-F1 through the entities found), in resumable chunks.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=benchmarks/results/text-to-graph-1.5b
MODEL=local/qwen2.5-coder-1.5b
python - <<'PY'
import json
from pathlib import Path
rows = [json.loads(line) for line in Path("data/examples/episodes.jsonl").open(encoding="utf-8")]
Path("runs/results").mkdir(parents=True, exist_ok=True)
Path("runs/results/examples-text.jsonl").write_text(
    "".join(json.dumps({k: v for k, v in row.items() if k not in ("entities", "edges")}, ensure_ascii=False) + "\n"
            for row in rows),
    encoding="utf-8",
)
test = [json.loads(line) for line in Path("data/episodes/test.jsonl").open(encoding="utf-8")]
conversations = [row for row in test if row["source"] == "conversational"]
for row in conversations:
    for edge_type in row.get("edgeTypes", []):
        edge_type.pop("attributes", None)
    for edge in row["edges"]:
        edge.pop("attributes", None)
Path("runs/results/test-conversational-withheld.jsonl").write_text(
    "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in conversations), encoding="utf-8"
)
PY
edgewise extract --find-entities --model "$MODEL" -i runs/results/examples-text.jsonl -o "$OUT/extract.jsonl"
python benchmarks/text_graph_examples.py llama-index --model "$MODEL" --out "$OUT/llama-index"
python benchmarks/text_graph_examples.py langchain --model "$MODEL" --out "$OUT/langchain"
python benchmarks/bench_in_chunks.py runs/results/test-conversational-withheld.jsonl --chunks 2 \
  --chunk-dir runs/chunks/text-to-graph --out "$OUT/test-conversational-chunk-{n}" -- \
  --models "$MODEL" --programs qwen2.5-coder-1.5b-program-v2,llama-index,llama-index-structured,langchain \
  --baseline qwen2.5-coder-1.5b-program-v2 --withhold-entities --seed 0
# 3. The chunks pooled (no model call): entity-F1 and the edge-F1 through the entities found, paired.
python benchmarks/paired_from_results.py "$OUT"/test-conversational-chunk-* --baseline qwen2.5-coder-1.5b-program-v2 \
  --episodes runs/results/test-conversational-withheld.jsonl > "$OUT/paired_test_conversational.md"
python benchmarks/text_graph_examples.py score --out "$OUT"
