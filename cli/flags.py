"""Flag names and numeric flag types.

`dest` is the attribute argparse stores a flag under, and `flag_values` the flags a command passes on
to the parameters of their names. The numeric flag types: a value out of range is a usage error that names the flag, before anything runs.

Given as an argparse `type=`, each one parses the text and checks its bound, so `--max-tokens -5`
fails with `argument --max-tokens: must be >= 1, got -5` (exit 1, nothing opened) instead of a
pydantic error, a provider's 400 in every output line, or a silently odd run.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any


def dest(flag: str) -> str:
    """The attribute argparse stores `flag` under (`--max-body-bytes`: `max_body_bytes`)."""
    return flag.removeprefix("--").replace("-", "_")


def flag_values(args: argparse.Namespace, *flags: str) -> dict[str, Any]:
    """The values of `flags`, each under the parameter of its name: the flags a command passes on
    unchanged to a function whose parameters are named as they are."""
    return {dest(flag): getattr(args, dest(flag)) for flag in flags}


def _number(text: str, *, whole: bool) -> float:
    try:
        value = int(text) if whole else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected {'a whole number' if whole else 'a number'}, got {text!r}"
        ) from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def at_least(bound: float, *, whole: bool = True) -> Callable[[str], float]:
    """A flag type for numbers >= `bound`: `type=at_least(1)` for counts, `at_least(0, whole=False)`."""

    def parse(text: str) -> float:
        value = _number(text, whole=whole)
        if value < bound:
            raise argparse.ArgumentTypeError(f"must be >= {bound:g}, got {text}")
        return value

    parse.__name__ = f"number >= {bound:g}"  # argparse names the type in its "invalid ... value" message
    return parse


def above(bound: float) -> Callable[[str], float]:
    """A flag type for numbers > `bound`: seconds, rates and scales that must be positive."""

    def parse(text: str) -> float:
        value = _number(text, whole=False)
        if not value > bound:
            raise argparse.ArgumentTypeError(f"must be > {bound:g}, got {text}")
        return value

    parse.__name__ = f"number > {bound:g}"
    return parse


def between(low: int, high: int) -> Callable[[str], float]:
    """A flag type for whole numbers from `low` to `high` (a TCP port: `between(0, 65535)`)."""

    def parse(text: str) -> float:
        value = _number(text, whole=True)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, got {text}")
        return value

    parse.__name__ = f"number from {low} to {high}"
    return parse
