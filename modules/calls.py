"""One model call of a program step, made the same way by every step, with one retry for a bad reply.

A step asks the model (a predictor, or a prompt baseline's own messages) through `call_step`, which
adds the calls to the step's usage, parses the reply, and gives a reply that could not be parsed, or
that stopped at the token limit, one more try:

- **bypassing DSPy's cache** (`cache=False`): the first reply may have come from it, and the same
  request would be answered with the same bad reply; a retried reply is not stored either;
- **with room to finish**: `max_tokens` (or `max_completion_tokens`) twice the LM's own. A reply cut
  at N tokens gets as much room again; one that broke its JSON for another reason gets a fresh
  request that no cache answers.

A reply that fails again becomes the step's `parse_failure` warning (the result's `parse_failures`
counts them) and the step goes on without it. What that means for the episode is the runner's
decision, not the step's: `edgewise extract`, the service and the Ray stage fail the episode with
reason `parse_failure`, the bench scores it and counts it (`edgewise.runtime.runner`).

The LM reports what the adapter cannot see through `note_reply`: edgewise's LM
(`runtime.lm.EdgewiseLM`) notes each reply's finish reason and how to remove the reply from DSPy's
cache, and a reply that failed is removed, so only replies a step could use stay cached and a
rerun asks the model again. Another LM notes nothing: then only a parse error starts the retry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final, NamedTuple, TypeVar

import dspy
from dspy.utils.exceptions import AdapterParseError

from edgewise.domain.types import ExtractionWarning
from edgewise.modules.call_context import PARSE_FAILURE, CallContext
from edgewise.modules.usage import track_step
from edgewise.signatures.schema import ReplySchemas, reply_schemas

T = TypeVar("T")

#: How much room the retry has: this many times the LM's token limit.
RETRY_ROOM_FACTOR: Final = 2
_TOKEN_LIMITS: Final = ("max_completion_tokens", "max_tokens")


class ReplyNote(NamedTuple):
    """What an LM saw of one reply: whether it stopped at the token limit, and how to drop it from
    the cache (a no-op when it was not cached)."""

    truncated: bool
    forget: Callable[[], None]


_NOTES: ContextVar[list[ReplyNote] | None] = ContextVar("edgewise_reply_notes", default=None)


def note_reply(note: ReplyNote) -> None:
    """Called by an LM for each reply it returns; kept only while a step's call is open."""
    notes = _NOTES.get()
    if notes is not None:
        notes.append(note)


@contextmanager
def _noting() -> Iterator[list[ReplyNote]]:
    notes: list[ReplyNote] = []
    token = _NOTES.set(notes)
    try:
        yield notes
    finally:
        _NOTES.reset(token)


def retry_settings(lm: Any = None) -> dict[str, Any]:
    """The LM settings of the retry: no cache, and `RETRY_ROOM_FACTOR` times the LM's token limit
    (`lm`, else the configured one; a limit it does not state is left to it)."""
    settings: dict[str, Any] = {"cache": False}
    limits = getattr(lm if lm is not None else dspy.settings.lm, "kwargs", None) or {}
    for name in _TOKEN_LIMITS:
        limit = limits.get(name)
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
            settings[name] = RETRY_ROOM_FACTOR * limit
            break
    return settings


def parse_failure_warning(step: str, problem: str) -> ExtractionWarning:
    """The warning a step's reply leaves when it failed on its retry too."""
    return ExtractionWarning(code=PARSE_FAILURE, message=f"{step}: {problem}, on its retry too")


def call_step(
    step: str,
    context: CallContext,
    ask: Callable[[dict[str, Any]], T],
    *,
    unparsed: tuple[type[Exception], ...] = (AdapterParseError,),
    lm: Any = None,
) -> T | None:
    """`ask(settings)`'s parsed reply, retried once when it could not be parsed or was cut off.

    `ask` makes the call with `settings` merged into the LM call's keyword arguments (`{}` the first
    time, `retry_settings()` the second) and returns the parsed reply, raising one of `unparsed` when
    it cannot. A reply that fails twice leaves a `parse_failure` warning; the step then gets the
    retry's reply when it parsed (cut at the token limit: what was written before the cut), else None.
    The calls' usage and the warning go to `context`, the extraction's own.
    """
    reply: T | None = None
    problem = ""
    with track_step(step, context):
        for settings in ({}, retry_settings(lm)):
            error: Exception | None = None
            with _noting() as notes:
                try:
                    reply = ask(settings)
                except unparsed as failure:
                    reply, error = None, failure
            if any(note.truncated for note in notes):
                problem = "the model's reply stopped at the token limit"
            elif error is not None:
                problem = f"the model's reply could not be parsed ({type(error).__name__})"
            else:
                return reply
            for note in notes:
                note.forget()
    context.warn(parse_failure_warning(step, problem))
    return reply


class OneEach(NamedTuple):
    """A step that answers several items in one call, one answer each, matched to the items by place:
    the reply's field that holds the answers, and the words of its warning when their count is off."""

    field: str
    code: str
    step: str
    items: str
    instead: str


def answers_each(
    step: str,
    context: CallContext,
    ask: Callable[[dict[str, Any]], Any],
    schemas: ReplySchemas,
    asked: int,
    each: OneEach,
) -> list[Any] | None:
    """The answers of one call of `step` (`ask` under `schemas`) to `asked` items, one each; None when
    the call gave no reply, or another count of answers.

    A reply with another count cannot be matched to the items at all: the step then keeps what it
    had (`each.instead` says what), and a warning `each.code` says that `each.step` answered so many
    times for so many `each.items`.
    """
    with reply_schemas(schemas):
        reply = call_step(step, context, ask)
    if reply is None:
        return None
    answers = list(getattr(reply, each.field) or [])
    if len(answers) == asked:
        return answers
    context.note(
        each.code, f"{each.step} answered {len(answers)} times for {asked} {each.items}: {each.instead}"
    )
    return None


def predicting(
    predictor: dspy.Predict, /, config: dict[str, Any] | None = None, **inputs: Any
) -> Callable[[dict[str, Any]], dspy.Prediction]:
    """`ask` for `call_step` that calls a predictor on `inputs`, its `config` merged with the call's."""

    def ask(settings: dict[str, Any]) -> dspy.Prediction:
        merged = {**(config or {}), **settings}
        return predictor(**inputs, config=merged) if merged else predictor(**inputs)

    return ask
