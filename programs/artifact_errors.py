"""How a compiled-program artifact is refused: `ArtifactError`, with messages that name, never quote.

An artifact is downloaded and shared, and its files may be anything: a `manifest.json` that is a
symlink to a private file, a `program.json` that is some other JSON document. A refusal names the
file and the key at fault, so that the user can find it, and never repeats a value from the file,
nor a key that is not a plain name, so that a message cannot carry a file's content anywhere.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from pydantic import ValidationError

from edgewise.domain.errors import EdgewiseError
from edgewise.domain.names import field_path


class ArtifactError(EdgewiseError, ValueError):
    """The artifact is missing, unreadable, compiled for other signatures, or holds more than a compile writes."""


_PLAIN_KEY: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]{0,63}")
_UNNAMED: Final = "<key>"


def shown_key(location: tuple[int | str, ...]) -> str:
    """A key path as a message names it (`extract.config`, `extract.demos[0]`).

    A part that is not a plain name (spaces, punctuation, a long string) is shown as `<key>`: it may
    be text from a file that is no artifact at all.
    """
    parts = tuple(
        part if isinstance(part, int) or _PLAIN_KEY.fullmatch(part) else _UNNAMED for part in location
    )
    return field_path(parts)


def refusal(
    path: Path, error: ValidationError, holds: str, prefix: tuple[int | str, ...] = ()
) -> ArtifactError:
    """An `ArtifactError` for the first problem `error` found in `path`, at `prefix` + its location.

    `holds` says what the file may hold, for a key that it may not. Pydantic's own text for an error
    repeats the value it rejected, so only its location, kind and short message are used.
    """
    first = error.errors(include_url=False, include_context=False, include_input=False)[0]
    location = (*prefix, *first["loc"])
    key = shown_key(location)
    if first["type"] == "extra_forbidden":
        return ArtifactError(f"{path}: key {key!r} is not allowed: {holds}")
    if first["type"] == "none_required" and location[-1] == "lm":
        return ArtifactError(
            f"{path}: key {key!r} must be null: the model comes from the caller (--model, --api-base), "
            "never from the file"
        )
    return ArtifactError(f"{path}: key {key!r}: {first['msg']}" if location else f"{path}: {first['msg']}")
