"""Per-step LM usage: how many calls and tokens each step of one extraction spent.

Built on `dspy.track_usage`, whose nested trackers roll up into any outer tracker (a benchmark's
or an optimizer's), so per-step figures and run totals come from the same records.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dspy

from edgewise.signatures.types import StepUsage


@contextmanager
def track_step(step: str, usage: dict[str, StepUsage]) -> Iterator[None]:
    """Add the calls and tokens spent inside the block to `usage[step]`.

    Calls answered from DSPy's cache record no usage and are therefore not counted; benchmarks
    turn the cache off for that reason.
    """
    with dspy.track_usage() as tracker:
        try:
            yield
        finally:
            spent = StepUsage()
            for entries in tracker.usage_data.values():
                for entry in entries:
                    spent = spent + StepUsage(
                        calls=1,
                        prompt_tokens=int(entry.get("prompt_tokens") or 0),
                        completion_tokens=int(entry.get("completion_tokens") or 0),
                    )
            usage[step] = usage.get(step, StepUsage()) + spent
