"""The CLI tells the user's mistakes from edgewise's bugs.

An `EdgewiseError` or an `OSError` is the user's to fix: one line on stderr, exit 1. Anything else
is a bug: a message that says so with the exception's type and message, exit 3, and the traceback
only under `EDGEWISE_DEBUG=1`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest

from edgewise.cli import EXIT_BUG, EXIT_ERROR, main
from edgewise.cli import bench as bench_cli
from edgewise.cli import extract as extract_cli
from edgewise.domain.errors import (
    DEBUG_ENV,
    EdgewiseError,
    FileContentError,
    MissingExtraError,
    UsageError,
    debug_enabled,
)

EPISODE = {
    "id": "ep-1",
    "episodeContent": "Alice joined Acme Corp in 2021.",
    "entities": [{"name": "Alice"}, {"name": "Acme Corp"}],
    "referenceTime": "2025-04-30T00:00:00Z",
}
# A server nothing listens on: the runs below stop before any model request.
UNREACHABLE = "http://127.0.0.1:9/v1"


def _extract(tmp_path: Path, *extra: str) -> int:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(EPISODE) + "\n")
    return main(
        ["extract", "-i", str(source), "-o", str(tmp_path / "out.jsonl"), "--model", "openai/mock",
         "--api-base", UNREACHABLE, "--api-key", "sk-test-0000", "--no-progress", "--no-cache", *extra]
    )  # fmt: skip


def _raising(error: Exception) -> Callable[..., NoReturn]:
    def broken(*_args: Any, **_kwargs: Any) -> NoReturn:
        raise error

    return broken


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("edgewise: error: "), err
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]


def test_a_missing_input_file_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    absent = tmp_path / "absent.jsonl"
    code = main(
        ["extract", "-i", str(absent), "--model", "openai/mock", "--api-base", UNREACHABLE, "--no-progress"]
    )
    assert code == EXIT_ERROR
    assert str(absent) in _one_error_line(capsys.readouterr().err)


def test_a_converted_usage_error_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DEBUG_ENV, "1")  # a user's mistake never shows a traceback, debug or not
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["data", "validate", str(empty)]) == EXIT_ERROR
    assert "is a folder without *.jsonl files" in _one_error_line(capsys.readouterr().err)
    (tmp_path / "results.json").write_text('{"seed": 0}')
    assert main(["report", str(tmp_path)]) == EXIT_ERROR
    assert "not a bench results.json" in _one_error_line(capsys.readouterr().err)


def test_a_bad_flag_value_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--limit", "0", "--models", "openai/mock"]) == EXIT_ERROR
    assert _one_error_line(capsys.readouterr().err) == "edgewise: error: --limit must be >= 1"


def test_the_user_error_classes_are_still_the_builtin_classes_callers_catch() -> None:
    for kind, builtin in (
        (UsageError, ValueError),
        (FileContentError, ValueError),
        (MissingExtraError, RuntimeError),
    ):
        assert issubclass(kind, EdgewiseError) and issubclass(kind, builtin)
    with pytest.raises(ValueError, match="--limit must be >= 1"):  # a Python caller's `except ValueError`
        bench_cli.run(argparse.Namespace(limit=0, workers=None, reflexion_rounds=None))


@pytest.mark.parametrize(
    "bug",
    [KeyError("edges"), json.JSONDecodeError("Expecting value", "{", 1)],
    ids=["KeyError", "JSONDecodeError"],
)
def test_a_bug_on_the_extract_path_says_it_is_a_bug_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, bug: Exception
) -> None:
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    monkeypatch.setattr(extract_cli, "choose_program", _raising(bug))
    assert _extract(tmp_path) == EXIT_BUG
    err = capsys.readouterr().err
    assert "Traceback" not in err and "edgewise: error:" not in err
    (line,) = err.strip().splitlines()
    assert line.startswith("edgewise: internal error (a bug in edgewise, not in the input): ")
    assert f"{type(bug).__name__}: {bug}" in line and f"{DEBUG_ENV}=1 prints its traceback" in line


def test_edgewise_debug_prints_the_bugs_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DEBUG_ENV, "1")
    monkeypatch.setattr(extract_cli, "choose_program", _raising(KeyError("edges")))
    assert _extract(tmp_path) == EXIT_BUG
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert "in broken" in err and "raise error" in err  # the frame that raised it
    assert "KeyError: 'edges'" in err
    assert err.strip().splitlines()[-1].endswith("its traceback is above")
    assert "sk-test-0000" not in err


def test_a_bugs_message_masks_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DEBUG_ENV, "1")
    monkeypatch.setattr(extract_cli, "choose_program", _raising(KeyError("sk-live-abcdef123456")))
    assert _extract(tmp_path) == EXIT_BUG
    err = capsys.readouterr().err
    assert "sk-live-abcdef123456" not in err and "***" in err


def test_a_bug_leaves_ctrl_c_and_system_exit_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(extract_cli, "choose_program", _raising(KeyboardInterrupt()))
    assert _extract(tmp_path) == 130
    assert "interrupted" in capsys.readouterr().err
    monkeypatch.setattr(extract_cli, "choose_program", _raising(SystemExit(5)))
    with pytest.raises(SystemExit):
        _extract(tmp_path)


@pytest.mark.parametrize(
    ("value", "on"), [("1", True), ("yes", True), ("0", False), ("", False), ("off", False)]
)
def test_edgewise_debug_values(monkeypatch: pytest.MonkeyPatch, value: str, on: bool) -> None:
    monkeypatch.setenv(DEBUG_ENV, value)
    assert debug_enabled() is on


def test_a_bug_in_a_step_is_an_internal_error_line_and_its_traceback_shows_under_debug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from edgewise.modules.steps import ShowEpisode

    monkeypatch.setattr(ShowEpisode, "__call__", _raising(KeyError("entity_names")))
    monkeypatch.delenv("EDGEWISE_DEBUG", raising=False)
    assert _extract(tmp_path) == 2
    line = json.loads((tmp_path / "out.jsonl").read_text())
    assert line["error"]["reason"] == "internal_error" and "KeyError" in line["error"]["message"]
    assert "Traceback" not in capsys.readouterr().err
    monkeypatch.setenv("EDGEWISE_DEBUG", "1")
    assert _extract(tmp_path) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "in broken" in err and "KeyError: 'entity_names'" in err
