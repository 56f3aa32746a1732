"""Redaction: the one place that removes API keys and tokens from text a user or a log will see.

Provider errors sometimes echo request headers or the key itself, and a traceback can carry any
string. Every message edgewise writes about a model call (an output error line, a service response,
a log record, a benchmark report) goes through `redact` first, with the secrets the caller knows plus
the key-like environment variables and anything shaped like a key.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Final

MASK: Final = "***"
MIN_SECRET_CHARS: Final = 4
MAX_MESSAGE_CHARS: Final = 600
# Environment variables whose values are secrets wherever they appear (OPENAI_API_KEY, EDGEWISE_API_TOKEN...).
SECRET_ENV_SUFFIXES: Final = ("_API_KEY", "_API_TOKEN", "_SECRET", "_SECRET_KEY", "_ACCESS_TOKEN")
# Key shapes worth masking even when the secret itself is unknown (a provider echoing one back).
KEY_PATTERNS: Final = (
    re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{6,}=*"),
    re.compile(r"(?i)(api[_-]?key[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{4,}"),
)


def env_secrets() -> set[str]:
    """Values of key-like environment variables, long enough to mask without mangling ordinary text."""
    return {
        value
        for name, value in os.environ.items()
        if name.upper().endswith(SECRET_ENV_SUFFIXES) and len(value) >= MIN_SECRET_CHARS
    }


def redact(
    text: str, secrets: Iterable[str | None] = (), *, max_chars: int | None = MAX_MESSAGE_CHARS
) -> str:
    """`text` with every given secret, every key-like env value and every key-shaped string as `***`.

    Longer secrets are replaced first, so a key that contains another is masked whole. The result is
    cut at `max_chars` (None: not cut) so that an echoed request body cannot flood a log line.
    """
    known = {secret for secret in secrets if secret and len(secret) >= MIN_SECRET_CHARS} | env_secrets()
    for secret in sorted(known, key=len, reverse=True):
        text = text.replace(secret, MASK)
    for pattern in KEY_PATTERNS:
        text = pattern.sub(lambda match: (match.group(1) if match.groups() else "") + MASK, text)
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars] + "..."
    return text
