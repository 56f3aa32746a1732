"""Fake language models for offline tests: scripted replies with real usage numbers."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

import dspy
from litellm import ModelResponse

Responder = Callable[[list[dict[str, Any]], dict[str, Any]], str | list[str]]


class ScriptedLM(dspy.BaseLM):
    """Answers each call with `responder(messages, kwargs)` (or the next string of a list).

    A responder may return a list of strings: the replies of a request that asks for several (`n`).
    Usage is 10 prompt tokens per message and 1 completion token per 4 characters, so tests can check
    accounting against numbers they compute themselves.
    """

    def __init__(self, replies: Responder | list[str], model: str = "fake/scripted") -> None:
        super().__init__(model=model, model_type="chat", temperature=0.0, max_tokens=1000, cache=False)
        self._replies = replies if callable(replies) else iter(replies)
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def forward(self, prompt: str | None = None, messages: list[dict[str, Any]] | None = None, **kwargs: Any):
        messages = messages or [{"role": "user", "content": prompt or ""}]
        with self._lock:
            self.calls.append({"messages": messages, "kwargs": kwargs})
            reply = self._replies(messages, kwargs) if callable(self._replies) else next(self._replies)
        texts = reply if isinstance(reply, list) else [reply]
        completion = sum(len(text) // 4 for text in texts)
        return ModelResponse(
            model=self.model,
            choices=[
                {"index": i, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
                for i, text in enumerate(texts)
            ],
            usage={
                "prompt_tokens": 10 * len(messages),
                "completion_tokens": completion,
                "total_tokens": 10 * len(messages) + completion,
            },
        )


class SchemaLM(ScriptedLM):
    """A scripted model that takes a JSON schema (`response_format`), as a self-hosted server does."""

    supports_response_schema = True
    supported_params = frozenset({"response_format"})


def edges_reply(*edges: dict[str, Any]) -> str:
    """A JSONAdapter-style reply for ExtractEdges."""
    return json.dumps({"edges": list(edges)})


def edge(source: str, rel: str, target: str, fact: str = "a fact", **dates: str | None) -> dict[str, Any]:
    return {
        "relationshipType": rel,
        "sourceEntityName": source,
        "targetEntityName": target,
        "fact": fact,
        **dates,
    }


def output_field(messages: list[dict[str, Any]]) -> str:
    """The first output field a DSPy-formatted request asks for: edges, missing_facts or attributes."""
    match = re.search(r"Your output fields are:\n1\. `(\w+)`", str(messages[0].get("content")))
    return match.group(1) if match else ""
