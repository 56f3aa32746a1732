"""benchmarks/text_graph_examples.py: the graph each framework built reaches graph.json, through the
mock OpenAI-compatible server (the script's own code path, with no model)."""

from __future__ import annotations

import importlib.util
import json
import sys
from typing import Any

import pytest
from mock_openai import MockOpenAIServer
from paths import ROOT

from edgewise.domain.gold import LabeledEpisode

SCRIPT = ROOT / "benchmarks" / "text_graph_examples.py"
sys.path.insert(0, str(SCRIPT.parent))  # the script imports its sibling `harness`
_spec = importlib.util.spec_from_file_location("text_graph_examples", SCRIPT)
text_graph_examples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(text_graph_examples)

EXAMPLE = LabeledEpisode.model_validate(
    {
        "id": "example-1",
        "source": "examples",
        "license": "CC0-1.0",
        "episodeContent": "Ann Lee has worked at Acme since March 2024.",
        "referenceTime": "2025-01-01T00:00:00Z",
        "entities": [{"name": "Ann Lee", "type": "Person"}, {"name": "Acme", "type": "Organization"}],
        "edgeTypes": [{"name": "WORKS_AT", "sourceTypes": ["Person"], "targetTypes": ["Organization"]}],
        "edges": [
            {
                "relationshipType": "WORKS_AT",
                "sourceEntityName": "Ann Lee",
                "targetEntityName": "Acme",
                "fact": "x",
            }
        ],
    }
)


def respond(body: dict[str, Any]) -> str:
    if "`entities`" in str(body["messages"][-1]["content"])[-300:]:
        return json.dumps(
            {"entities": [{"name": "Ann Lee", "type": "Person"}, {"name": "Acme", "type": "Organization"}]}
        )
    edge = {
        "relationshipType": "WORKS_AT",
        "sourceEntityName": "Ann Lee",
        "targetEntityName": "Acme",
        "fact": "Ann Lee has worked at Acme since March 2024.",
        "validAt": "2024-03-01T00:00:00Z",
        "invalidAt": None,
    }
    return json.dumps({"edges": [edge]})


@pytest.mark.parametrize("framework", ["llama-index", "langchain"])
def test_each_framework_s_graph_holds_the_edges_it_built(framework: str) -> None:
    build = {
        "llama-index": text_graph_examples.llama_index_graph,
        "langchain": text_graph_examples.langchain_graph,
    }
    with MockOpenAIServer(respond) as server:
        graph = build[framework]([EXAMPLE], "openai/mock", server.api_base)
    assert [(row["source"], row["relation"], row["target"]) for row in graph] == [
        ("Ann Lee", "WORKS_AT", "Acme")
    ]
    (row,) = graph
    assert (row["example"], row["sourceType"], row["targetType"]) == ("example-1", "Person", "Organization")
    assert row["validAt"] == "2024-03-01T00:00:00Z" and row["fact"].startswith("Ann Lee has worked")


def test_score_counts_each_path_s_edges_through_the_names_it_used(tmp_path) -> None:
    (tmp_path / "extract.jsonl").write_text(
        json.dumps(
            {
                "id": "example-1",
                "entities": [{"name": "Ann", "type": "Person"}, {"name": "Acme Inc", "type": "Organization"}],
                "edges": [
                    {
                        "relationshipType": "WORKS_AT",
                        "sourceEntityName": "Ann",
                        "targetEntityName": "Acme Inc",
                        "fact": "f",
                        "validAt": "2024-03-01T00:00:00Z",
                    }
                ],
            }
        )
        + "\n"
    )
    row = {"example": "example-1", "source": "Acme", "sourceType": "Organization", "relation": "WORKS_AT",
           "target": "Ann Lee", "targetType": "Person", "fact": None, "validAt": None, "invalidAt": None}  # fmt: skip
    for framework, rows in {"llama-index": [row], "langchain": []}.items():
        (tmp_path / framework).mkdir()
        (tmp_path / framework / "graph.json").write_text(json.dumps(rows))
    table = text_graph_examples.scores(tmp_path, [EXAMPLE])
    # Ann ~ Ann Lee and Acme Inc ~ Acme by a run of words: the extract path's edge is the gold one.
    assert "| edgewise extract --find-entities | 1 | 1 | 0 | 0 | 1.000 |" in table
    assert "| llama-index | 1 | 0 | 1 | 1 | 0.000 |" in table  # the same edge reversed
    assert "| langchain | 0 | 0 | 0 | 1 | 0.000 |" in table
