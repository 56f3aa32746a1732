"""The leak check: no hand-written episode shares a run of 8 words with a test episode, and a leak is caught."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgewise.data import load_episodes
from edgewise.data.leak_check import RUN_WORDS, Text, find_leaks, main, words


def _file(folder: Path, texts: list[str]) -> Path:
    """A hand-written file whose conversation 190 has these turns (only the texts matter to the check)."""
    folder.mkdir(parents=True, exist_ok=True)
    turns = [{"time": "2024-01-01T00:00:00Z", "text": text, "entities": [], "edges": []} for text in texts]
    conversation = {"id": 190, "user": "User", "entities": {}, "turns": turns}
    (folder / "leak.json").write_text(json.dumps({"split": "train", "conversations": [conversation]}))
    return folder


def test_the_shipped_hand_written_episodes_share_no_run_of_8_words_with_test(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([]) == 0, capsys.readouterr().out


def test_words_are_case_folded_and_stripped_of_punctuation() -> None:
    assert words("Don't  STOP—now, (Ana)!  ...") == ["dont", "stopnow", "ana"]


def test_a_copied_run_is_caught_whatever_its_case_and_punctuation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    test = load_episodes("test")
    source = next(e for e in test if len(e.episode_content.split()) >= 20 and e.source == "conversational")
    copied = " ".join(source.episode_content.split()[3 : 3 + RUN_WORDS])
    folder = _file(tmp_path, ["Nothing in common here at all, just my own words.", f"So: {copied.upper()}!"])
    assert main(["--handwritten", str(folder)]) == 1
    out = capsys.readouterr().out
    assert (
        f"leak.json: conv-190-2 shares {RUN_WORDS} words with test episode {source.id} episodeContent" in out
    )
    assert "conv-190-1" not in out


def test_a_run_from_previous_episodes_is_caught_and_the_longest_run_is_reported() -> None:
    test = [
        Text("t-1", "episodeContent", "unrelated"),
        Text("t-1", "previousEpisodes[0]", "a b c d e f g h i j k"),
    ]
    (leak,) = find_leaks([Text("conv-190-1", "x.json", "z a b c d e f g h i j y")], test)
    assert (leak.test.where, leak.words) == ("previousEpisodes[0]", tuple("abcdefghij"))


def test_seven_shared_words_are_not_a_leak() -> None:
    test = [Text("t-1", "episodeContent", "one two three four five six seven eight")]
    assert find_leaks([Text("n", "x.json", "zero two three four five six seven eight nine")], test) == []
    assert len(find_leaks([Text("n", "x.json", "One, two three four five six seven eight")], test)) == 1
