"""One error vocabulary: every exception under EdgewiseError, every reason word with one status."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from paths import ROOT

import edgewise
from edgewise.domain import errors
from edgewise.domain.errors import REASONS, EdgewiseError, reason_of_status, status_of
from edgewise.runtime import faults

SOURCE_FOLDERS = ("cli", "data", "edgewise", "eval", "integrations", "modules", "optimize", "runtime", "scale",
                  "service", "signatures")  # fmt: skip
# Control flow, not failures: a budget that ends a compile, and the bench's own Ctrl-C marker.
NOT_FAILURES = {"BudgetExhausted", "_Interrupted"}


def _exception_classes() -> list[tuple[Path, str]]:
    found = []
    for folder in SOURCE_FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            for match in re.finditer(r"^class (\w+)\(([^)]*)\):", path.read_text(), re.MULTILINE):
                name, bases = match.groups()
                if re.search(r"Error\b|Exception\b|Unavailable|Exceeded|Unreadable", name + bases):
                    found.append((path.relative_to(ROOT), name))
    return found


def test_every_edgewise_exception_derives_from_edgewise_error() -> None:
    classes = _exception_classes()
    assert len(classes) >= 12
    import importlib

    for path, name in classes:
        if name in NOT_FAILURES:
            continue
        module = importlib.import_module("edgewise." + ".".join(path.with_suffix("").parts))
        assert issubclass(getattr(module, name), EdgewiseError), f"{path}: {name}"
    assert edgewise.EdgewiseError is EdgewiseError


def test_a_reason_word_has_one_status_and_every_word_is_in_the_reason_table() -> None:
    table = (ROOT / "docs" / "reasons.md").read_text()
    for reason in REASONS.values():
        assert f"| `{reason.word}` | {reason.status} |" in table, reason.word
        assert status_of(reason.word) == reason.status
    words = [name for name in dir(errors) if name.startswith("REASON_")]
    assert sorted(getattr(errors, name) for name in words) == sorted(REASONS)


def test_the_model_side_invalid_request_is_not_the_clients_invalid_request() -> None:
    from dspy.utils.exceptions import LMInvalidRequestError

    reason = faults.failure_reason(LMInvalidRequestError("unsupported parameter", status=400))
    assert reason == errors.REASON_PROVIDER_REJECTED and status_of(reason) == 502
    assert status_of(errors.REASON_INVALID_REQUEST) == 422


@pytest.mark.parametrize(
    ("status", "word"), [(404, "not_found"), (405, "method_not_allowed"), (415, "bad_request")]
)
def test_routing_errors_get_a_word_of_the_vocabulary(status: int, word: str) -> None:
    assert reason_of_status(status) == word and word in REASONS


def test_a_service_error_cannot_pair_a_word_with_another_status() -> None:
    from edgewise.service.errors import ServiceError

    with pytest.raises(ValueError, match="not answered with 500"):
        ServiceError(500, errors.REASON_INVALID_REQUEST, "x")
    assert ServiceError(422, errors.REASON_INVALID_REQUEST, "x").reason == "invalid_request"
