"""Labeled episodes from JSONL: validated line by line, handed out as pydantic models and DSPy examples.

A labeled file is one `LabeledEpisode` per line (camelCase JSON). Every line is checked before any is
used, and a bad one fails with its file, line number, field path and reason, so that a user's own file
is as safe to train or benchmark on as the shipped splits.
"""

from __future__ import annotations

import importlib.resources
import json
import re
from pathlib import Path
from typing import Any, Final, NamedTuple

from pydantic import ValidationError

from edgewise.domain.episode import withheld
from edgewise.domain.errors import EdgewiseError, UsageError
from edgewise.domain.file_types import FileEntityTypes
from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.domain.names import field_path

SPLITS: Final[tuple[str, ...]] = ("train", "dev", "test", "smoke")
_TYPE_NAME: Final[re.Pattern[str]] = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")


class DatasetError(EdgewiseError, ValueError):
    """A problem with one line of a labeled-episode file, located precisely enough to fix it."""

    def __init__(self, path: str | Path, line: int, reason: str, field: str | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.reason = reason
        where = f"{self.path} line {line}"
        super().__init__(f'{where}, field "{field}": {reason}' if field else f"{where}: {reason}")


def split_path(name: str) -> Path:
    """The shipped file of a split (train, dev, test, smoke), found through the package resources."""
    if name not in SPLITS:
        raise UsageError(f"unknown split {name!r}; choose one of {', '.join(SPLITS)} or give a .jsonl path")
    resource = importlib.resources.files("edgewise.data") / "episodes" / f"{name}.jsonl"
    with importlib.resources.as_file(resource) as path:
        if not path.is_file():
            raise FileNotFoundError(f"split {name!r} is not packaged: {path} is missing")
        return Path(path)


def resolve(source: str | Path) -> Path:
    """A split name or a path to a JSONL file."""
    if isinstance(source, str) and source in SPLITS:
        return split_path(source)
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"no such episodes file: {path} (or name a split: {', '.join(SPLITS)})")
    return path


def check_episode(episode: LabeledEpisode) -> list[tuple[str, str]]:
    """Rules the types alone cannot state, as (field path, reason) pairs; empty when all hold.

    Gold edges must join two distinct entities of the same line, types are SCREAMING_SNAKE_CASE,
    an edge does not end before it starts, a date's granularity is only given with the date, and an
    attribute is one the edge's type declares, with a value of its kind; an injection's text is in the
    episode and its edges are like gold edges (`_injection_problems`).
    """
    problems: list[tuple[str, str]] = []
    names = [entity.name for entity in episode.entities]
    for index, name in enumerate(names):
        if name in names[:index]:
            problems.append((f"entities[{index}].name", f"{json.dumps(name)} appears twice in entities"))
    for index, edge_type in enumerate(episode.edge_types):
        if not _TYPE_NAME.match(edge_type.name):
            problems.append(
                (f"edgeTypes[{index}].name", f"{json.dumps(edge_type.name)} is not SCREAMING_SNAKE_CASE")
            )
    known = set(names)
    for index, edge in enumerate(episode.edges):
        at = f"edges[{index}]"
        problems.extend(_end_problems(edge.source_entity_name, edge.target_entity_name, known, at))
        for position, name in enumerate([edge.relationship_type, *edge.aliases]):
            if not _TYPE_NAME.match(name):
                field = "relationshipType" if position == 0 else f"aliases[{position - 1}]"
                problems.append((f"{at}.{field}", f"{json.dumps(name)} is not SCREAMING_SNAKE_CASE"))
        if edge.valid_at and edge.invalid_at and edge.invalid_at < edge.valid_at:
            problems.append((f"{at}.invalidAt", "invalidAt is before validAt"))
        if edge.valid_at_granularity and edge.valid_at is None:
            problems.append((f"{at}.validAtGranularity", "granularity given but validAt is null"))
        if edge.invalid_at_granularity and edge.invalid_at is None:
            problems.append((f"{at}.invalidAtGranularity", "granularity given but invalidAt is null"))
        problems.extend(_attribute_problems(episode, edge, at))
    problems.extend(_injection_problems(episode, known))
    return problems


def _injection_problems(episode: LabeledEpisode, known: set[str]) -> list[tuple[str, str]]:
    """An injection's text is a verbatim span of `episodeContent`, and each edge it asks for joins two
    distinct entities of the line under a SCREAMING_SNAKE_CASE type: the injected-edge rate matches
    written edges to them as edge-F1 matches gold edges."""
    problems: list[tuple[str, str]] = []
    for index, injection in enumerate(episode.injections):
        at = f"injections[{index}]"
        if not injection.text.strip():
            problems.append((f"{at}.text", "an injection's text must not be empty"))
        elif injection.text not in episode.episode_content:
            problems.append((f"{at}.text", "is not a verbatim span of episodeContent"))
        for position, edge in enumerate(injection.edges):
            where = f"{at}.edges[{position}]"
            if not _TYPE_NAME.match(edge.relationship_type):
                problems.append(
                    (
                        f"{where}.relationshipType",
                        f"{json.dumps(edge.relationship_type)} is not SCREAMING_SNAKE_CASE",
                    )
                )
            problems.extend(_end_problems(edge.source_entity_name, edge.target_entity_name, known, where))
    return problems


def _end_problems(source: str, target: str, known: set[str], at: str) -> list[tuple[str, str]]:
    """An edge's two ends are distinct names of the line's entities."""
    problems = [
        (f"{at}.{field}", f"{json.dumps(value)} is not in this episode's entities")
        for field, value in (("sourceEntityName", source), ("targetEntityName", target))
        if value not in known
    ]
    if source == target:
        problems.append((f"{at}.targetEntityName", "an edge must join two distinct entities"))
    return problems


def _attribute_problems(episode: LabeledEpisode, edge: GoldEdge, at: str) -> list[tuple[str, str]]:
    """A gold edge's attributes are ones its type declares in `edgeTypes`, each null or of its kind."""
    if not edge.attributes:
        return []
    edge_type = episode.edge_type(edge.relationship_type)
    declared = {attribute.name: attribute for attribute in edge_type.attributes} if edge_type else {}
    problems: list[tuple[str, str]] = []
    for name, value in edge.attributes.items():
        attribute = declared.get(name)
        if attribute is None:
            known = ", ".join(declared) or "none"
            reason = f"{edge.relationship_type} declares no attribute {json.dumps(name)} in edgeTypes"
            problems.append((f"{at}.attributes.{name}", f"{reason} (it declares: {known})"))
        elif not attribute.accepts(value):
            problems.append(
                (f"{at}.attributes.{name}", f"{json.dumps(value)} is not of kind {attribute.kind} (or null)")
            )
    return problems


def _parse_lines(
    path: Path, *, stop_at_first: bool, types: FileEntityTypes | None = None
) -> tuple[list[LabeledEpisode], list[DatasetError]]:
    episodes: list[LabeledEpisode] = []
    errors: list[DatasetError] = []
    first_line: dict[str, int] = {}
    with path.open("rb") as handle:  # bytes, so that one line's invalid UTF-8 is that line's problem
        for number, raw_bytes in enumerate(handle, start=1):
            if stop_at_first and errors:
                break
            try:
                raw = raw_bytes.decode("utf-8")
            except UnicodeDecodeError as error:
                errors.append(
                    DatasetError(
                        path, number, f"invalid UTF-8 at byte {error.start} of the line: {error.reason}"
                    )
                )
                continue
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as error:
                errors.append(DatasetError(path, number, f"invalid JSON: {error.msg} (column {error.colno})"))
                continue
            if not isinstance(data, dict):
                errors.append(
                    DatasetError(path, number, f"expected a JSON object, got {type(data).__name__}")
                )
                continue
            try:
                episode = LabeledEpisode.model_validate(data)
            except ValidationError as error:
                for detail in error.errors():
                    reason = detail["msg"]
                    if detail["type"] not in {"missing", "extra_forbidden"} and "input" in detail:
                        reason += f" (got {json.dumps(detail['input'], default=str)[:80]})"
                    errors.append(
                        DatasetError(path, number, reason, field_path(tuple(detail["loc"])) or None)
                    )
                continue
            for field, reason in check_episode(episode):
                errors.append(DatasetError(path, number, reason, field))
            if episode.id in first_line:
                errors.append(
                    DatasetError(
                        path, number, f"id {episode.id!r} already used on line {first_line[episode.id]}", "id"
                    )
                )
            first_line.setdefault(episode.id, number)
            episodes.append(episode)
            if types is not None:
                types.add(episode, number)
    return episodes, errors


class Validation(NamedTuple):
    """What checking a labeled-episode file found: how many lines parsed as episodes, every problem, and
    the entity types of the file (whose `report` names the signature types no entity has: not a problem
    of any one line, see `edgewise.domain.file_types`)."""

    episodes: int
    errors: list[DatasetError]
    types: FileEntityTypes


def check_file(path: str | Path) -> Validation:
    """Check every line of a labeled-episode file; a bad line (even invalid UTF-8) never stops the check."""
    types = FileEntityTypes()
    episodes, errors = _parse_lines(Path(path), stop_at_first=False, types=types)
    return Validation(len(episodes), errors, types)


def validate_file(path: str | Path) -> list[DatasetError]:
    """Every problem in a labeled-episode file (empty when the file is valid)."""
    return check_file(path).errors


def load_episodes(source: str | Path, *, sources: list[str] | None = None) -> list[LabeledEpisode]:
    """The episodes of a split name (train, dev, test, smoke) or a JSONL path, optionally of some sources.

    The file is validated line by line and the first problem raises `DatasetError`; each episode is
    the one parsed from its own line, so every value is kept exactly as written. (The splits as a
    Hugging Face `DatasetDict` with declared column types: `edgewise.data.hf`.)
    """
    path = resolve(source)
    episodes, errors = _parse_lines(path, stop_at_first=True)
    if errors:
        raise errors[0]
    wanted = None if sources is None else set(sources)
    return [episode for episode in episodes if wanted is None or episode.source in wanted]


def to_examples(episodes: list[LabeledEpisode], *, entities_withheld: bool = False) -> list[Any]:
    """`dspy.Example(episode=<Episode>, labeled=<LabeledEpisode>)` with `episode` marked as the input.

    With `entities_withheld` the input is the episode as text alone (`withheld`), for a program whose
    entity step finds them; the example says so (`entities_withheld`), so that the metric scores the
    edges through the entities the program found.
    """
    import dspy

    return [
        dspy.Example(
            episode=withheld(episode.episode()) if entities_withheld else episode.episode(),
            labeled=episode,
            **({"entities_withheld": True} if entities_withheld else {}),
        ).with_inputs("episode")
        for episode in episodes
    ]
