"""The ten example episodes as text alone, through LlamaIndex's PropertyGraphIndex or LangChain's
graph transformer with edgewise as the extractor: the graph each produced, as JSON and Markdown.

Each example's text is one document (its reference time in the metadata); the schema given to the
framework is the examples' own: their entity types, and their relationship types with signatures as
(source type, relation, target type) triples. Nothing else of an example reaches the framework: not
its entities and not its gold edges.

    python benchmarks/text_graph_examples.py llama-index --model local/qwen2.5-coder-1.5b \\
        --out benchmarks/results/text-to-graph-1.5b/llama-index

`score --out FOLDER` (no model call) scores the three graphs of a folder against the examples' gold
edges, end to end through the entities each path named (`edgewise.eval.entity_metric.end_to_end_score`):
`extract.jsonl` from `edgewise extract --find-entities`, `llama-index/graph.json` and
`langchain/graph.json`, and writes `scores.md`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness import script_parser

from edgewise.data.loader import load_episodes
from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.types import Edge, Entity, format_utc
from edgewise.eval.entity_metric import end_to_end_score
from edgewise.eval.records import f1_of

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples" / "episodes.jsonl"


def schema(examples: list[LabeledEpisode]) -> tuple[list[str], list[str], list[tuple[str, str, str]]]:
    """The examples' entity types, relationship types and their (source, relation, target) triples."""
    entities = sorted({entity.type for example in examples for entity in example.entities if entity.type})
    relations: list[str] = []
    triples: list[tuple[str, str, str]] = []
    for example in examples:
        for edge_type in example.edge_types:
            if edge_type.name not in relations:
                relations.append(edge_type.name)
            for source in edge_type.source_types or entities:
                for target in edge_type.target_types or entities:
                    if (source, edge_type.name, target) not in triples:
                        triples.append((source, edge_type.name, target))
    return entities, relations, triples


def llama_index_graph(
    examples: list[LabeledEpisode], model: str, api_base: str | None
) -> list[dict[str, Any]]:
    from llama_index.core import Document, PropertyGraphIndex
    from llama_index.core.graph_stores import SimplePropertyGraphStore

    from edgewise.integrations.llama_index import EdgewisePathExtractor

    entities, relations, triples = schema(examples)
    extractor = EdgewisePathExtractor(
        possible_entities=entities,
        possible_relations=relations,
        kg_validation_schema=triples,
        model=model,
        api_base=api_base,
        num_workers=1,
    )
    documents = [
        Document(text=example.episode_content, metadata={"reference_time": format_utc(example.reference_time),
                                                          "example": example.id})
        for example in examples
    ]  # fmt: skip
    store = SimplePropertyGraphStore()
    try:
        PropertyGraphIndex.from_documents(
            documents, kg_extractors=[extractor], property_graph_store=store, embed_kg_nodes=False,
            show_progress=True,
        )  # fmt: skip
    finally:
        extractor.close()
    graph = []
    for triplet in store.graph.get_triplets():  # the store's get_triplets() with no filter returns none
        subject, relation, target = triplet
        graph.append(
            {
                "example": relation.properties.get("example"),
                "source": subject.name,
                "sourceType": subject.label,
                "relation": relation.label,
                "target": target.name,
                "targetType": target.label,
                "fact": relation.properties.get("fact"),
                "validAt": relation.properties.get("validAt"),
                "invalidAt": relation.properties.get("invalidAt"),
            }
        )
    return graph


def langchain_graph(examples: list[LabeledEpisode], model: str, api_base: str | None) -> list[dict[str, Any]]:
    from langchain_core.documents import Document

    from edgewise.integrations.langchain import EdgewiseGraphTransformer

    entities, _, triples = schema(examples)
    transformer = EdgewiseGraphTransformer(
        allowed_nodes=entities, allowed_relationships=triples, model=model, api_base=api_base, num_workers=1
    )
    documents = [
        Document(page_content=example.episode_content,
                 metadata={"reference_time": format_utc(example.reference_time), "example": example.id})
        for example in examples
    ]  # fmt: skip
    try:
        graph_documents = transformer.convert_to_graph_documents(documents)
    finally:
        transformer.close()
    graph = []
    for document in graph_documents:
        for relationship in document.relationships:
            graph.append(
                {
                    "example": document.source.metadata.get("example"),
                    "source": relationship.source.id,
                    "sourceType": relationship.source.type,
                    "relation": relationship.type,
                    "target": relationship.target.id,
                    "targetType": relationship.target.type,
                    "fact": relationship.properties.get("fact"),
                    "validAt": relationship.properties.get("validAt"),
                    "invalidAt": relationship.properties.get("invalidAt"),
                }
            )
    return graph


def markdown(framework: str, model: str, graph: list[dict[str, Any]]) -> str:
    lines = [
        f"# The ten examples as text alone through {framework}, edgewise as the extractor ({model})",
        "",
        f"{len(graph)} edges.",
        "",
        "| example | source (type) | relation | target (type) | fact | validAt | invalidAt |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in sorted(graph, key=lambda row: (str(row["example"]), row["source"], row["relation"])):
        lines.append(
            f"| {row['example']} | {row['source']} ({row['sourceType']}) | {row['relation']} | "
            f"{row['target']} ({row['targetType']}) | {row['fact']} | {row['validAt']} | {row['invalidAt']} |"
        )
    return "\n".join(lines) + "\n"


def graph_results(rows: list[dict[str, Any]], ids: list[str]) -> dict[str, tuple[list[Entity], list[Edge]]]:
    """A framework graph's rows as each example's named entities (the relations' ends) and edges."""
    found: dict[str, tuple[list[Entity], list[Edge]]] = {example_id: ([], []) for example_id in ids}
    for row in rows:
        entities, edges = found[row["example"]]
        for name, kind in ((row["source"], row["sourceType"]), (row["target"], row["targetType"])):
            if all(entity.name != name for entity in entities):
                entities.append(Entity(name=name, type=kind))
        edges.append(
            Edge(
                relationshipType=row["relation"],
                sourceEntityName=row["source"],
                targetEntityName=row["target"],
                fact=row["fact"] or "",
                validAt=row["validAt"],
                invalidAt=row["invalidAt"],
            )
        )
    return found


def scores(folder: Path, examples: list[LabeledEpisode]) -> str:
    """The three paths' graphs scored end to end against the examples' gold edges, as Markdown."""
    ids = [example.id for example in examples]
    extracted = [
        json.loads(line) for line in (folder / "extract.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    paths = {
        "edgewise extract --find-entities": {
            row["id"]: (
                [Entity.model_validate(entity) for entity in row.get("entities") or []],
                [Edge.model_validate(edge) for edge in row["edges"]],
            )
            for row in extracted
        },
        **{
            framework: graph_results(json.loads((folder / framework / "graph.json").read_text()), ids)
            for framework in ("llama-index", "langchain")
        },
    }
    gold_edges = sum(len(example.edges) for example in examples)
    lines = [
        f"# The three paths' graphs against the ten examples' {gold_edges} gold edges",
        "",
        (
            "Scored end to end: each edge's ends renamed to the gold entities the path's own names match "
            "(`edgewise.eval.entity_metric.end_to_end_score`)."
        ),
        "",
        "| path | edges written | right | spurious | missed | edge-F1 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, found in paths.items():
        tp = fp = fn = 0
        for example in examples:
            entities, edges = found.get(example.id, ([], []))
            score = end_to_end_score(example, entities, edges)
            tp, fp, fn = tp + score.tp, fp + score.fp, fn + score.fn
        written = sum(len(edges) for _, edges in found.values())
        lines.append(f"| {name} | {written} | {tp} | {fp} | {fn} | {f1_of(tp, fp, fn):.3f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument(
        "framework",
        choices=["llama-index", "langchain", "score"],
        help="the framework to run, or score: the folder's three graphs against the gold edges (no model)",
    )
    parser.add_argument("--model", default="local/qwen2.5-coder-1.5b", help="the edgewise model")
    parser.add_argument("--api-base", default=None, help="a server for --model (default: none)")
    parser.add_argument("--data", type=Path, default=EXAMPLES, help="the labeled examples (default: the ten)")
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        help="folder for graph.json and graph.md (score: the folder of the three paths)",
    )
    args = parser.parse_args()
    examples = load_episodes(args.data)
    if args.framework == "score":
        (args.out / "scores.md").write_text(scores(args.out, examples), encoding="utf-8")
        print((args.out / "scores.md").read_text(encoding="utf-8"))
        return
    build = llama_index_graph if args.framework == "llama-index" else langchain_graph
    graph = build(examples, args.model, args.api_base)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "graph.json").write_text(
        json.dumps(graph, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (args.out / "graph.md").write_text(markdown(args.framework, args.model, graph), encoding="utf-8")
    print(f"{args.out}: {len(graph)} edges")


if __name__ == "__main__":
    main()
