"""edgewise's one error vocabulary: the base of its exceptions, and every reason word with its status.

A reason word is what a failed line of `edgewise extract`, a Ray row's `error` column, a bench's
`errors.jsonl` and an HTTP error body say went wrong. Each word has one meaning and one HTTP status,
listed once in `REASONS`; the service answers with that status, and every other path writes the
same word. `failure_reason` (runtime/faults.py) picks the word for an exception from a model call.

An exception that is not an `EdgewiseError` (nor an `OSError`, a file the system refused) is a bug in
edgewise: the CLI says so instead of passing it off as the user's mistake, and `EDGEWISE_DEBUG=1`
(`debug_enabled`) adds its traceback there and on a failed episode's `internal_error`.
"""

from __future__ import annotations

import os
from typing import ClassVar, Final, NamedTuple


class Reason(NamedTuple):
    """A reason word, the HTTP status it is answered with, and what it means."""

    word: str
    status: int
    meaning: str


REASONS: Final[dict[str, Reason]] = {}
"""Every reason word with its status and meaning, in the order `_reason` states them below."""


def _reason(word: str, status: int, meaning: str) -> str:
    """Add `word` to `REASONS` and return it: each word's status and meaning stand where its constant is named."""
    if word in REASONS:
        raise ValueError(f"reason word {word!r} stated twice")
    REASONS[word] = Reason(word, status, meaning)
    return word


# The input's fault.
REASON_INVALID_INPUT: Final = _reason(
    "invalid_input", 422, "an input line or row is not an episode (its field is named)"
)
REASON_INVALID_REQUEST: Final = _reason(
    "invalid_request", 422, "an HTTP request is not an episode, or is over a server limit"
)
REASON_CONTEXT_WINDOW: Final = _reason(
    "context_window", 422, "the episode does not fit the model's context window"
)
REASON_UNAUTHORIZED: Final = _reason("unauthorized", 401, "the bearer token is missing or wrong")
REASON_BAD_REQUEST: Final = _reason(
    "bad_request", 400, "the request is not valid HTTP (a Content-Length that is not a number)"
)
REASON_BODY_TOO_LARGE: Final = _reason("body_too_large", 413, "the request body is over --max-body-bytes")
REASON_NOT_FOUND: Final = _reason("not_found", 404, "no such route")
REASON_METHOD_NOT_ALLOWED: Final = _reason(
    "method_not_allowed", 405, "the route does not take this HTTP method"
)
# The model provider slow, rate-limiting or unreachable: try again later.
REASON_RATE_LIMITED: Final = _reason("rate_limited", 503, "the model provider rate-limited the call")
REASON_TIMEOUT: Final = _reason("timeout", 503, "the model provider did not answer in time")
REASON_DEADLINE: Final = _reason("deadline", 503, "the episode ran past its deadline (--episode-timeout)")
REASON_CONNECTION: Final = _reason("connection", 503, "the model provider could not be reached")
# The model provider answering with an error or with nonsense.
REASON_SERVER_ERROR: Final = _reason("server_error", 502, "the model provider failed (a 5xx)")
REASON_AUTH: Final = _reason("auth", 502, "the model provider refused the credentials or the account")
REASON_PROVIDER_REJECTED: Final = _reason(
    "provider_rejected_request", 502, "the model provider refused the call as invalid (a 4xx)"
)
REASON_PROVIDER_ERROR: Final = _reason("provider_error", 502, "the model provider call failed in another way")
REASON_INVALID_RESPONSE: Final = _reason(
    "invalid_response", 502, "the model provider answered 2xx with a body that is not JSON"
)
REASON_PARSE: Final = _reason("parse", 502, "the model's reply could not be read as the expected fields")
REASON_PARSE_FAILURE: Final = _reason(
    "parse_failure", 502, "a reply could not be parsed, or stopped at the token limit, on its retry too"
)
# The service holding its own limits against slow, abandoned or too many requests.
REASON_READ_TIMEOUT: Final = _reason(
    "read_timeout", 408, "the client did not send its request body within --read-timeout"
)
REASON_REQUEST_TIMEOUT: Final = _reason(
    "request_timeout", 503, "the request was not answered within --request-timeout"
)
REASON_OVERLOADED: Final = _reason(
    "overloaded", 503, "every worker is busy and the queue is full (--max-queue); retry later"
)
REASON_SHUTTING_DOWN: Final = _reason(
    "shutting_down", 503, "the service is stopping; retry on another instance or later"
)
# edgewise's own fault.
REASON_INTERNAL: Final = _reason("internal_error", 500, "edgewise failed; the log has the trace")


def status_of(reason: str) -> int:
    """The HTTP status a reason word is answered with (500 for a word outside the vocabulary)."""
    known = REASONS.get(reason)
    return known.status if known is not None else REASONS[REASON_INTERNAL].status


def reason_of_status(status: int) -> str:
    """The reason word for an HTTP error raised below the app (routing): its own word, or the class's."""
    words = [reason.word for reason in REASONS.values() if reason.status == status]
    if len(words) == 1:
        return words[0]
    return REASON_BAD_REQUEST if 400 <= status < 500 else REASON_INTERNAL


class EdgewiseError(Exception):
    """The base of edgewise's own exceptions: catch it to catch any of them.

    A subclass whose failure ends an episode or a request carries its reason word in `reason`;
    errors of setup (a configuration, a file, a local model) carry none and end the command with a
    one-line message instead.
    """

    reason: ClassVar[str | None] = None


class UsageError(EdgewiseError, ValueError):
    """A flag, argument or setting edgewise cannot use; the message names it and what it takes.

    Also a `ValueError`, the class these checks raised before, so a caller's `except ValueError`
    still catches it.
    """


class FileContentError(EdgewiseError, ValueError):
    """A file that was read but does not hold what it should; the message names the file and the field.

    Also a `ValueError` (a file's bad content), as opposed to an `OSError` (a file that cannot be read).
    """


class MissingExtraError(EdgewiseError, RuntimeError):
    """An optional part of edgewise is not installed (the serve, ray, llama-index or langchain
    extra); the message says what to install. A `RuntimeError` too, as the serve and ray checks raised
    before; the llama-index and langchain checks raised `ValueError`, which no longer catches it."""


DEBUG_ENV: Final = "EDGEWISE_DEBUG"
"""Set to 1 to print the traceback of a bug (an exception edgewise did not expect) where it is reported."""

_OFF: Final = frozenset({"", "0", "false", "no", "off"})


def debug_enabled() -> bool:
    """Whether `EDGEWISE_DEBUG` asks for tracebacks: read at each report, so a test or a shell can flip it."""
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in _OFF
