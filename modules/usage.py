"""Per-step LM usage: how many calls and tokens each step of one extraction spent.

Built on `dspy.track_usage`, whose nested trackers roll up into any outer tracker (a benchmark's
or an optimizer's), so per-step figures and run totals come from the same records.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import dspy

from edgewise.domain.types import StepUsage
from edgewise.modules.call_context import CallContext


@contextmanager
def track_step(step: str, context: CallContext) -> Iterator[None]:
    """Add the calls and tokens spent inside the block to the extraction's usage of `step`.

    Calls answered from DSPy's cache record no usage and are therefore not counted; benchmarks
    turn the cache off for that reason.
    """
    with dspy.track_usage() as tracker:
        try:
            yield
        finally:
            context.spent(step, tracked_usage(tracker))


def tracked_usage(tracker: Any) -> StepUsage:
    """Calls and tokens a `dspy.track_usage` tracker recorded, summed over its models."""
    return usage_of(entry for entries in tracker.usage_data.values() for entry in entries)


def usage_of(entries: Iterable[dict[str, Any]]) -> StepUsage:
    """Sum usage records (one per LM call, as LiteLLM reports them) into calls and tokens.

    `cached_prompt_tokens` is the part of the prompt the server took from its prompt cache
    (llama-server and OpenAI report it as `prompt_tokens_details.cached_tokens`): what a fixed
    prefix such as demos costs after the first request.
    """
    spent = StepUsage()
    for entry in entries:
        details = entry.get("prompt_tokens_details") or {}
        cached = (
            details.get("cached_tokens")
            if isinstance(details, dict)
            else getattr(details, "cached_tokens", 0)
        )
        spent = spent + StepUsage(
            calls=1,
            prompt_tokens=int(entry.get("prompt_tokens") or 0),
            completion_tokens=int(entry.get("completion_tokens") or 0),
            cached_prompt_tokens=int(cached or 0),
        )
    return spent
