"""A program is an ordered list of steps: the list its options name, recorded in its manifest.

The requests every shipped program (and the uncompiled program with each lever) sends are compared
with those recorded before the program became a list of steps (`tests/fixtures/steps/steps_requests.json`:
sha256 of each episode's requests and result, three smoke episodes, a model that answers every
request with a value its response schema allows).
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from fakes import SchemaLM
from paths import FIXTURES, ROOT

from edgewise.modules.extractor import STEPS, EdgeExtractor, program_steps
from edgewise.modules.options import FLAT_NAMES, ProgramOptions
from edgewise.programs.artifact import (
    MANIFEST_FILE,
    STEPS_SETTING,
    ArtifactError,
    load,
    new_manifest,
    read_manifest,
    save,
    shipped_programs,
)
from edgewise.programs.names import resolve_program
from edgewise.runtime.lm import lm_context

RECORDED = json.loads((FIXTURES / "steps" / "steps_requests.json").read_text())
EPISODES = [json.loads(line) for line in (ROOT / "data/episodes/smoke.jsonl").read_text().splitlines()[:3]]

VARIANTS: dict[str, dict[str, Any]] = {
    "reflexion1": {"max_reflexion_rounds": 1},
    "open_types": {"closed_types": False},
    "compact": {"output_shape": "compact"},
    "compact-text-dates": {"output_shape": "compact-text-dates"},
}
OPTION_SETS: dict[str, dict[str, Any]] = {
    "pairs": {"formulation": "pairs"},
    "entities": {"formulation": "entities"},
    "signatures": {"type_signatures": True, "unseen_types_open": True},
    "typed_grammar": {"type_signatures": True, "typed_grammar": True, "retype": "unique"},
    "retype_ask": {"type_signatures": True, "retype": "ask"},
    "glean2_forced": {"gleaning": 2, "glean_forced": True},
    "samples3": {"samples": 3, "votes": 2},
    "fact_span": {"fact_span": True},
    "precision": {"precision": True},
    "dates": {"fact_dates": True, "date_guards": True},
    "speaker_names": {"speaker_names": True},
    "seed_order": {"input_order": "seed"},
    "per_episode": {"attributes": "per-episode"},
    "in_extraction": {"attributes": "in-extraction", "attribute_grounding": True},
    "default_types": {"default_types": True},
    "quoted": {"quoted_text_check": True},
    "speaker_marks": {"speaker_marks": True},
    "entities_seed_order": {"formulation": "entities", "input_order": "seed", "samples": 2, "votes": 1},
    "pairs_seed_order_precision": {"formulation": "pairs", "input_order": "seed", "precision": True},
    "many": {
        "type_signatures": True, "typed_grammar": True, "retype": "ask", "gleaning": 1, "precision": True,
        "fact_dates": True, "date_guards": True, "speaker_names": True, "attribute_grounding": True,
        "quoted_text_check": True, "speaker_marks": True, "attributes": "per-episode",
    },
}  # fmt: skip


def _program(name: str) -> Any:
    kind, _, key = name.partition(":")
    if kind == "shipped":
        return load(key)
    if kind == "builtin":
        return resolve_program(key)
    if kind == "variant":
        return EdgeExtractor(**VARIANTS[key])
    return EdgeExtractor(options=ProgramOptions(**OPTION_SETS[key]))


def _resolved(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        node: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        schema = {**node, **{key: value for key, value in schema.items() if key != "$ref"}}
    return schema


class _Instance:
    """A value `schema` allows; enum choices rotate with a counter, so the edges differ from each other."""

    def __init__(self, counter: int) -> None:
        self.counter = counter

    def of(self, schema: dict[str, Any], root: dict[str, Any], key: str = "") -> Any:
        schema = _resolved(schema, root)
        self.counter += 1
        if "enum" in schema:
            values = schema["enum"]
            return values[self.counter % len(values)] if values else None
        if "const" in schema:
            return schema["const"]
        for combination in ("anyOf", "oneOf"):
            if combination in schema:
                options = [
                    option for option in schema[combination] if _resolved(option, root).get("type") != "null"
                ] or schema[combination]
                return self.of(options[self.counter % len(options)], root, key)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind == "object" or "properties" in schema:
            return {name: self.of(part, root, name) for name, part in schema.get("properties", {}).items()}
        if kind == "array":
            count = min(max(schema.get("minItems", 0), 2), schema.get("maxItems", 3))
            if "prefixItems" in schema:
                return [self.of(part, root, key) for part in schema["prefixItems"]]
            return [self.of(schema.get("items", {}), root, key) for _ in range(count)]
        if kind == "integer":
            return schema.get("minimum", 1)
        if kind == "number":
            return 1.0
        if kind == "boolean":
            return self.counter % 3 != 0
        if kind == "null":
            return None
        if key in ("validAt", "valid_at"):
            return "2020-01-01T00:00:00Z"
        if key in ("invalidAt", "invalid_at"):
            return None
        return f"text {key}"


_FIXED = json.dumps(
    {"edges": [{"relationshipType": "KNOWS", "sourceEntityName": "A", "targetEntityName": "B", "fact": "f"}]}
)


def _reply(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str | list[str]:
    """A reply each response schema allows (a fixed edges JSON where the request has none)."""
    response_format = kwargs.get("response_format")
    n = kwargs.get("n") or 1
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        schema = response_format["json_schema"]["schema"]
        replies = [json.dumps(_Instance(index).of(schema, schema)) for index in range(n)]
        return replies if n > 1 else replies[0]
    return [_FIXED] * n if n > 1 else _FIXED


def _fingerprint(calls: list[dict[str, Any]], result: dict[str, Any]) -> str:
    canonical = json.loads(json.dumps({"calls": calls, "result": result}, default=str))
    return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()


def test_the_recorded_requests_cover_every_shipped_program() -> None:
    assert {f"shipped:{name}" for name in shipped_programs()} <= set(RECORDED)


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_a_program_sends_the_requests_and_returns_the_result_recorded_before(name: str) -> None:
    program = _program(name)
    for index, episode in enumerate(EPISODES):
        lm = SchemaLM(_reply)
        with lm_context(lm):
            result = program(episode).result.model_dump(mode="json")
        assert lm.calls, name
        assert _fingerprint(lm.calls, result) == RECORDED[name][index], f"{name}, episode {index}"


def test_forward_runs_the_steps_the_options_name_in_order() -> None:
    assert EdgeExtractor().step_names == [
        "inputs",
        "vocabulary",
        "extract",
        "postprocess",
        "attributes_per_edge",
    ]
    options = ProgramOptions(
        default_types=True, type_signatures=True, retype="ask", gleaning=1, fact_dates=True, date_guards=True,
        precision=True, attributes="per-episode", attribute_grounding=True, max_reflexion_rounds=1,
    )  # fmt: skip
    assert EdgeExtractor(options=options).step_names == [
        "default_types", "inputs", "vocabulary", "extract", "glean", "reflexion", "postprocess", "retype",
        "fact_dates", "date_guards", "verify", "attributes_per_episode", "attribute_grounding",
    ]  # fmt: skip
    assert EdgeExtractor(options=ProgramOptions(formulation="pairs")).step_names == [
        "inputs", "label_pairs", "postprocess", "attributes_per_edge",
    ]  # fmt: skip
    assert [step.name for step in program_steps(options)] == EdgeExtractor(options=options).step_names
    assert len({step.name for _, step in STEPS}) == len(STEPS)


def test_forward_is_the_list_of_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step added to the list runs, in its place, on the extraction the others see."""
    seen: list[str] = []

    class Note:
        name = "note"

        def __call__(self, extraction: Any) -> None:
            seen.append(f"{len(extraction.edges)} edges")

    program = EdgeExtractor()
    steps = list(program.steps)
    monkeypatch.setattr(EdgeExtractor, "steps", property(lambda self: (*steps, Note())))
    lm = SchemaLM(_reply)
    with lm_context(lm):
        result = program(EPISODES[0]).result
    assert seen == [f"{len(result.edges)} edges"]


def _saved(program: EdgeExtractor, folder: Path) -> Path:
    manifest = new_manifest(
        program,
        task_model="any",
        optimizer="none",
        settings={"program_options": program.options.model_dump()},
    )
    return save(program, folder, manifest)


def test_a_program_built_from_a_list_of_steps_round_trips_through_its_manifest(tmp_path: Path) -> None:
    options = ProgramOptions(
        formulation="entities", type_signatures=True, retype="ask", gleaning=1, precision=True,
        speaker_names=True, quoted_text_check=True, attributes="per-episode",
    )  # fmt: skip
    program = EdgeExtractor(options=options)
    folder = _saved(program, tmp_path / "prog")
    written = json.loads((folder / MANIFEST_FILE).read_text())
    assert written["settings"][STEPS_SETTING] == program.step_names
    assert read_manifest(folder).settings[STEPS_SETTING] == program.step_names
    loaded = load(folder)
    assert loaded.step_names == program.step_names
    assert loaded.options == program.options
    assert [name for name, _ in loaded.named_predictors()] == [name for name, _ in program.named_predictors()]


def test_a_manifest_whose_steps_its_settings_do_not_build_is_refused(tmp_path: Path) -> None:
    folder = _saved(EdgeExtractor(options=ProgramOptions(precision=True)), tmp_path / "prog")
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    manifest["settings"][STEPS_SETTING].remove("verify")
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest))
    with pytest.raises(ArtifactError, match="records the steps"):
        load(folder)


def test_options_are_grouped_and_read_and_written_by_their_flat_names() -> None:
    flat = ProgramOptions(samples=3, votes=2, gleaning=0, fact_dates=True, max_reflexion_rounds=1)
    grouped = ProgramOptions(
        sampling={"samples": 3, "votes": 2}, dates={"from_facts": True}, task={"max_reflexion_rounds": 1}
    )
    assert flat == grouped
    assert (flat.sampling.samples, flat.samples, flat.dates.from_facts, flat.fact_dates) == (3, 3, True, True)
    assert list(flat.model_dump()) == list(FLAT_NAMES)
    assert flat.changed() == {"samples": 3, "votes": 2, "fact_dates": True, "max_reflexion_rounds": 1}
    assert ProgramOptions.model_validate(flat.model_dump()) == flat
    assert flat.model_copy(update={"precision": True}).checks.precision is True


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"samples": 2, "votes": 3}, "votes"),
        ({"max_reflexion_rounds": -1}, "max_reflexion_rounds must be >= 0"),
        ({"output_shape": "prose"}, "unknown output shape"),
        ({"formulation": "pairs", "max_reflexion_rounds": 1}, "runs no reflexion rounds"),
        ({"formulation": "pairs", "gleaning": 1}, "pairwise formulation"),
        ({"attributes": "in-extraction", "output_shape": "compact"}, "seed reply shape"),
        ({"bogus": True}, "bogus"),
    ],
)
def test_each_group_and_the_rules_between_groups_refuse_what_no_program_runs(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ProgramOptions(**options)


def test_every_shipped_manifest_loads_its_flat_options_into_their_groups() -> None:
    for name, folder in shipped_programs().items():
        settings = read_manifest(folder).settings
        options = ProgramOptions.model_validate(settings.get("program_options") or {})
        recorded = settings.get("program_options") or {}
        assert {key: options.model_dump()[key] for key in recorded} == recorded, name
        assert load(name).step_names == EdgeExtractor(options=options).step_names, name


def test_no_function_of_the_program_takes_warnings_or_usage() -> None:
    """The per-call context (`modules.call_context`) carries them; nothing threads them by hand."""
    threaded = []
    for path in sorted((ROOT / "modules").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                threaded += [
                    f"{path.name}:{node.name}({argument.arg})"
                    for argument in arguments
                    if argument.arg in ("warnings", "usage")
                ]
    assert threaded == []
