"""`python -m edgewise.data.leak_check`: no hand-written episode shares a run of words with a test episode.

Text copied from a test episode into training data would let a tuned model recite the test. Every
hand-written episode (each turn of each conversation in `data/converters/handwritten/*.json`) is compared
with every test episode's `episodeContent` and `previousEpisodes`: a run of `RUN_WORDS` or more
consecutive words shared with one of them is a leak. Words are compared case-folded with their
punctuation stripped ("Don't," and "dont" are one word). The turns are read as plain text, so the
check runs on files whose labels still have problems. Exit status 1 when any leak is found.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Final, NamedTuple

from edgewise.data.converters.conversational import HANDWRITTEN_DIR, episode_id_for
from edgewise.data.loader import load_episodes, split_path

RUN_WORDS: Final[int] = 8
_NOT_A_WORD_CHARACTER: Final[re.Pattern[str]] = re.compile(r"\W+")


class Text(NamedTuple):
    """A text and where it is: an episode id and the field or file it is read from."""

    episode: str
    where: str
    text: str


class Leak(NamedTuple):
    """A hand-written episode's longest run of words shared with one test text."""

    episode: Text
    test: Text
    words: tuple[str, ...]

    def __str__(self) -> str:
        return (
            f"{self.episode.where}: {self.episode.episode} shares {len(self.words)} words with test episode "
            f'{self.test.episode} {self.test.where}: "{" ".join(self.words)}"'
        )


def words(text: str) -> list[str]:
    """The text's words: split on whitespace, case-folded, punctuation stripped; empty tokens dropped."""
    tokens = (_NOT_A_WORD_CHARACTER.sub("", token) for token in text.casefold().split())
    return [token for token in tokens if token]


def handwritten_texts(folder: Path = HANDWRITTEN_DIR) -> list[Text]:
    """Each turn's text of each hand-written file, with its episode id; files that are not JSON are skipped
    (the builder's check reports them)."""
    texts: list[Text] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            conversations = json.loads(path.read_bytes()).get("conversations", [])
        except (ValueError, AttributeError):
            continue
        for conversation in conversations:
            number = conversation.get("id")
            for turn_number, turn in enumerate(conversation.get("turns", []), start=1):
                identifier = (
                    episode_id_for(number, turn_number)
                    if isinstance(number, int)
                    else f"conversation {number!r}, turn {turn_number}"
                )
                texts.append(Text(identifier, path.name, str(turn.get("text", ""))))
    return texts


def episode_texts(path: Path) -> list[Text]:
    """Every text an episode of the file shows a model: its content and each of its previous episodes."""
    texts: list[Text] = []
    for episode in load_episodes(path):
        texts.append(Text(episode.id, "episodeContent", episode.episode_content))
        texts.extend(
            Text(episode.id, f"previousEpisodes[{index}]", text)
            for index, text in enumerate(episode.previous_episodes)
        )
    return texts


def find_leaks(new: list[Text], test: list[Text], run: int = RUN_WORDS) -> list[Leak]:
    """Each (new text, test text) pair that shares `run` or more consecutive words, with its longest run."""
    index: dict[tuple[str, ...], list[int]] = {}
    test_words = [words(item.text) for item in test]
    for position, tokens in enumerate(test_words):
        for start in range(len(tokens) - run + 1):
            index.setdefault(tuple(tokens[start : start + run]), []).append(position)
    leaks: list[Leak] = []
    for item in new:
        tokens = words(item.text)
        longest: dict[int, tuple[str, ...]] = {}
        for start in range(len(tokens) - run + 1):
            for position in set(index.get(tuple(tokens[start : start + run]), ())):
                shared = _shared_run(tokens, start, test_words[position])
                if len(shared) > len(longest.get(position, ())):
                    longest[position] = shared
        leaks.extend(Leak(item, test[position], shared) for position, shared in sorted(longest.items()))
    return leaks


def _shared_run(tokens: list[str], start: int, other: list[str]) -> tuple[str, ...]:
    """The longest run of `tokens` from `start` that occurs in `other` (at least the matched n-gram)."""
    best: tuple[str, ...] = ()
    for offset in range(len(other)):
        length = 0
        while (
            start + length < len(tokens)
            and offset + length < len(other)
            and tokens[start + length] == other[offset + length]
        ):
            length += 1
        if length > len(best):
            best = tuple(tokens[start : start + length])
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m edgewise.data.leak_check", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--handwritten", type=Path, default=HANDWRITTEN_DIR, help="folder of hand-written *.json files"
    )
    parser.add_argument(
        "--test", type=Path, default=None, help="test episodes (default: the shipped test split)"
    )
    parser.add_argument("--words", type=int, default=RUN_WORDS, help=f"shortest run that leaks ({RUN_WORDS})")
    args = parser.parse_args(argv)
    new = handwritten_texts(args.handwritten)
    leaks = find_leaks(new, episode_texts(args.test or split_path("test")), args.words)
    for leak in leaks:
        print(leak)
    verdict = f"{len(leaks)} leak(s)" if leaks else "no leaks"
    print(
        f"{len(new)} hand-written episodes against the test split, runs of {args.words}+ words: {verdict}",
        file=sys.stderr,
    )
    return 1 if leaks else 0


if __name__ == "__main__":
    raise SystemExit(main())
