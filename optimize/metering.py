"""Metering an optimizer run: LM calls and tokens per phase, and the hard cap on calls (`--budget`).

DSPy's optimizers have no call budget of their own, and DSPy's usage tracker loses the calls of worker
threads; both are added here as callbacks and a tracker set for the duration of a `metered` block.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

import dspy
from dspy.utils.callback import BaseCallback
from dspy.utils.usage_tracker import UsageTracker


class BudgetExhausted(BaseException):
    """The run spent its LM-call budget.

    A `BaseException` on purpose: DSPy's evaluators and optimizers catch `Exception` per example
    and keep going, which would turn every refused call into a zero score instead of stopping.
    """


class PhaseUsage(NamedTuple):
    """LM traffic of one phase: calls made (replies from DSPy's cache included) and tokens billed."""

    calls: int
    prompt_tokens: int
    completion_tokens: int


NO_USAGE = PhaseUsage(0, 0, 0)


def total_usage(usage: Mapping[str, PhaseUsage]) -> PhaseUsage:
    """All phases together (what the summary and the manifest's token totals report)."""
    return PhaseUsage(*(sum(values) for values in zip(*usage.values(), strict=True))) if usage else NO_USAGE


class SharedUsage(UsageTracker):
    """A usage tracker that every worker thread of a run writes to.

    DSPy's parallel executor deep-copies the tracker into each thread ("each thread tracks its own
    usage") and never merges the copies back, so a run-level total would miss all threaded calls.
    """

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict[int, Any]) -> SharedUsage:
        return self

    def add_usage(self, lm: str, usage_entry: dict[str, Any]) -> None:
        with self._lock:
            super().add_usage(lm, usage_entry)

    def tokens(self) -> tuple[int, int]:
        """(prompt, completion) tokens billed so far."""
        with self._lock:
            entries = [entry for entries in self.usage_data.values() for entry in entries]
        return (
            sum(int(entry.get("prompt_tokens") or 0) for entry in entries),
            sum(int(entry.get("completion_tokens") or 0) for entry in entries),
        )


class CallMeter(BaseCallback):
    """Counts LM calls in its context and refuses the first one past `limit`.

    Counting happens before the request, for every model (task, teacher, reflection) and for replies
    from DSPy's cache too, so the cap is exact and a rerun stops at the same place. Once exhausted it
    stays exhausted: worker threads still holding queued examples are refused at once.
    """

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self.calls = 0
        self.exhausted = False
        self._lock = threading.Lock()

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        with self._lock:
            if self.limit is not None and (self.exhausted or self.calls >= self.limit):
                self.exhausted = True
                raise BudgetExhausted(f"the budget of {self.limit} LM calls is spent")
            self.calls += 1


class Meter(NamedTuple):
    """What a `metered` block counts: its calls (and cap) and its tokens."""

    calls: CallMeter
    tokens: SharedUsage

    def usage(self) -> PhaseUsage:
        """The block's usage so far."""
        return PhaseUsage(self.calls.calls, *self.tokens.tokens())


@contextlib.contextmanager
def metered(limit: int | None = None, *extra: BaseCallback) -> Iterator[Meter]:
    """Count the calls and tokens of the block (and cap the calls at `limit`); `extra` callbacks too."""
    meter = Meter(CallMeter(limit), SharedUsage())
    callbacks = [*dspy.settings.get("callbacks", []), meter.calls, *extra]
    with dspy.context(callbacks=callbacks, usage_tracker=meter.tokens):
        yield meter
