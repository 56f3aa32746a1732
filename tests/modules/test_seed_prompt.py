"""The seed baseline: byte-identical rendering of the TypeScript templates, and CORE's parsing."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from fakes import ScriptedLM, edge, edges_reply
from paths import FIXTURES

from edgewise.domain.episode import Episode
from edgewise.modules.context import seed_context
from edgewise.modules.seed_prompt import (
    EDGE_SYSTEM,
    REFLEXION_SYSTEM,
    SeedPromptExtractor,
    parse_strict,
    parse_tolerant,
    render_edge_messages,
    render_reflexion_messages,
)
from edgewise.runtime.lm import lm_context

SEED = FIXTURES / "seed" / "extractEdges.ts"

CONTEXTS = [
    {
        "previousEpisodes": ["Alice talked about work.", "She mentioned Bob."],
        "episodeContent": 'Alice joined Acme in 2021.\nShe lives in Zürich — "happily".',
        "nodes": [{"name": "Alice", "type": "Person"}, {"name": "Acme"}],
        "referenceTime": "2025-04-30T12:00:00Z",
        "edgeTypes": {"WORKS_AT": "employment", "LIVES_IN": "residence"},
        "customPrompt": "Prefer WORKS_AT.",
        "extractedFacts": ["Alice joined Acme"],
    },
    {
        "previousEpisodes": [],
        "episodeContent": "Nothing happened.",
        "nodes": [],
        "referenceTime": "2024-01-01T00:00:00Z",
        "edgeTypes": {},
        "customPrompt": "",
        "extractedFacts": [],
    },
    {
        "episodeContent": "Only required fields; 日本語 and emoji 🎉.",
        "nodes": [{"name": "東京"}],
        "referenceTime": "2023-05-05T05:05:05Z",
    },
]


def _template(source: str, start_marker: str) -> str:
    """The text of the first template literal after `start_marker` in the TypeScript source."""
    start = source.index("`", source.index(start_marker)) + 1
    end = start
    while source[end] != "`" or source[end - 1] == "\\":
        end += 1
    return source[start:end]


def _evaluate(expression: str, context: dict) -> str:
    """The few JavaScript expressions the seed's templates use, evaluated like JavaScript does."""
    if match := re.fullmatch(r"JSON\.stringify\(context\.(\w+) \|\| (\[\]|\{\}), null, 2\)", expression):
        value = context.get(match[1]) or ([] if match[2] == "[]" else {})
        return json.dumps(value, indent=2, ensure_ascii=False)
    if match := re.fullmatch(r'context\.(\w+) \|\| ""', expression):
        return str(context.get(match[1]) or "")
    if match := re.fullmatch(r"context\.(\w+)", expression):
        return str(context[match[1]]) if match[1] in context else "undefined"
    raise AssertionError(f"unexpected template expression {expression}")


def _render_from_typescript(start_marker: str, context: dict) -> str:
    template = _template(SEED.read_text(), start_marker).replace("\\`", "`")
    return re.sub(r"\$\{((?:[^{}]|\{\})*)\}", lambda m: _evaluate(m[1], context), template)


@pytest.mark.parametrize("context", CONTEXTS)
def test_edge_messages_match_the_typescript_template(context):
    messages = render_edge_messages(context)
    assert messages[0] == {"role": "system", "content": EDGE_SYSTEM}
    assert messages[1]["content"] == _render_from_typescript("export const edge", context)


@pytest.mark.parametrize("context", CONTEXTS)
def test_reflexion_messages_match_the_typescript_template(context):
    messages = render_reflexion_messages(context)
    assert messages[0] == {"role": "system", "content": REFLEXION_SYSTEM}
    assert messages[1]["content"] == _render_from_typescript("const userPrompt", context)


def test_system_prompts_match_the_typescript_source():
    source = SEED.read_text()
    pieces = re.findall(
        r'"([^"]*)"', source[source.index("export const edge") : source.index('role: "user"')]
    )
    assert EDGE_SYSTEM == "".join(p for p in pieces if p not in ("system",))
    assert REFLEXION_SYSTEM == _template(source, "const sysPrompt")


def _typescript_as_javascript() -> str:
    source = SEED.read_text()
    source = source[source.index("/**") :]  # the file opens with its upstream path, not code
    source = re.sub(r"^import .*$", "", source, flags=re.MULTILINE)
    source = re.sub(r"export interface \w+ \{[^}]*\}", "", source)
    source = re.sub(r"\(\s*context: Record<string, any>,?\s*\): CoreMessage\[\]", "(context)", source)
    return source.replace("export const", "const")


@pytest.mark.skipif(
    shutil.which("node") is None, reason="node is not installed: JavaScript cross-check skipped"
)
@pytest.mark.parametrize("context", CONTEXTS)
def test_rendering_matches_node_running_the_seed(tmp_path, context):
    script = tmp_path / "seed.js"
    script.write_text(
        _typescript_as_javascript()
        + f"\nconst ctx = {json.dumps(context)};\n"
        + "process.stdout.write(JSON.stringify({edge: edge(ctx), reflexion: reflexion(ctx)}));\n"
    )
    rendered = json.loads(
        subprocess.run(["node", str(script)], capture_output=True, check=True, text=True).stdout
    )
    assert rendered["edge"] == render_edge_messages(context)
    assert rendered["reflexion"] == render_reflexion_messages(context)


def test_seed_context_maps_episode_fields(episode_fields):
    context = seed_context(Episode.model_validate(episode_fields))
    assert context["nodes"][0] == {"name": "Alice", "type": "Person"}
    assert context["edgeTypes"] == {
        "WORKS_AT": "a person works for an organization",
        "MARRIED_TO": "spouses (symmetric)",
    }
    assert context["referenceTime"] == "2025-04-30T12:00:00Z"


def test_strict_parse_is_json_parse():
    assert parse_strict(' {"edges": []} \n') == {"edges": []}
    for text in ('```json\n{"edges": []}\n```', 'Here you go: {"edges": []}', '{"x": NaN}', ""):
        with pytest.raises(ValueError):
            parse_strict(text)


def test_tolerant_parse_accepts_fences_and_prose():
    assert parse_tolerant('```json\n{"edges": []}\n```') == {"edges": []}
    assert parse_tolerant('Sure! {"edges": [{"a": 1},]} hope it helps') == {"edges": [{"a": 1}]}


def _seed_run(reply: str, episode_fields: dict, **options):
    lm = ScriptedLM(lambda m, k: reply)
    with lm_context(lm):
        return SeedPromptExtractor(**options)(episode_fields).result, lm


def test_seed_sends_verbatim_messages_without_response_format(episode_fields):
    result, lm = _seed_run(edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "joined")), episode_fields)
    call = lm.calls[0]
    assert call["messages"] == render_edge_messages(seed_context(Episode.model_validate(episode_fields)))
    assert "response_format" not in call["kwargs"]
    assert [e.relationship_type for e in result.edges] == ["WORKS_AT"]
    assert result.usage["extract"].calls == 1


def test_seed_fenced_reply_is_a_parse_failure_counted_not_raised(episode_fields):
    result, _ = _seed_run(
        "```json\n" + edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "x")) + "\n```", episode_fields
    )
    assert result.edges == [] and result.parse_failures == 1


def test_seed_structured_parses_the_same_reply(episode_fields):
    reply = "```json\n" + edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "x")) + "\n```"
    result, _ = _seed_run(reply, episode_fields, structured=True)
    assert len(result.edges) == 1 and result.parse_failures == 0


def test_seed_drops_malformed_items_with_a_warning(episode_fields):
    reply = json.dumps({"edges": [{"relationshipType": "X"}, edge("Alice", "WORKS_AT", "Acme Corp", "x")]})
    result, _ = _seed_run(reply, episode_fields)
    assert len(result.edges) == 1
    assert "invalid_edge" in [w.code for w in result.warnings]


def test_seed_reply_without_edges_array_is_a_parse_failure(episode_fields):
    result, _ = _seed_run('{"facts": []}', episode_fields)
    assert result.parse_failures == 1


def test_seed_reflexion_appends_missed_facts_to_custom_prompt(episode_fields):
    def respond(messages, kwargs):
        if messages[0]["content"] == REFLEXION_SYSTEM:
            return json.dumps({"missingFacts": ["Alice is married to Bob"]})
        if "Alice is married to Bob" in messages[1]["content"]:
            return edges_reply(edge("Alice", "MARRIED_TO", "Bob", "husband"))
        return edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "joined"))

    lm = ScriptedLM(respond)
    with lm_context(lm):
        result = SeedPromptExtractor(max_reflexion_rounds=1)(episode_fields).result
    assert sorted(e.relationship_type for e in result.edges) == ["MARRIED_TO", "WORKS_AT"]
    assert result.usage["reflexion"].calls == 1 and result.usage["extract"].calls == 2
