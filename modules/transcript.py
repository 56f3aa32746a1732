"""The chat of one extraction call, kept for a continuation turn in the same conversation.

Gleaning asks the model, in the same chat, for the edges its reply missed. That needs the messages
the adapter sent and the reply text exactly as the model wrote it: re-serialized, the reply would
differ from what the server has in its prompt cache, and the server would evaluate it again. The
adapter notes both while a `recording()` is open in the calling thread; nothing is kept otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Transcript:
    """The last call's messages and the model's reply text, as the adapter saw them."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    completion: str | None = None

    def continued(self) -> list[dict[str, Any]] | None:
        """The chat so far, ending with the model's reply; None when no reply was noted."""
        if not self.messages or self.completion is None:
            return None
        return [*self.messages, {"role": "assistant", "content": self.completion}]


_ACTIVE: ContextVar[Transcript | None] = ContextVar("edgewise_transcript", default=None)


@contextmanager
def recording() -> Iterator[Transcript]:
    """Note the messages and reply of the calls made inside the block (the last one wins)."""
    transcript = Transcript()
    token = _ACTIVE.set(transcript)
    try:
        yield transcript
    finally:
        _ACTIVE.reset(token)


def note_messages(messages: list[dict[str, Any]]) -> None:
    if (transcript := _ACTIVE.get()) is not None:
        transcript.messages = list(messages)
        transcript.completion = None


def note_completion(completion: str) -> None:
    if (transcript := _ACTIVE.get()) is not None:
        transcript.completion = completion
