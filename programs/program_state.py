"""What a compiled program's `program.json` may hold: the allow-list between the file and DSPy.

DSPy's `Predict.load_state` sets every key of a predictor's state that it does not know as an
attribute of the predictor, and a predictor's `config` goes with every model call: a `program.json`
whose `extract` holds `"config": {"api_base": ...}` would send the user's key and episodes to
another server. So the state is checked here before DSPy sees any of it, against what a compile
writes: per step, its signature's instructions and field texts, its demos, and DSPy's (empty)
`traces` and `train`, with `lm` null; at the top, those steps, DSPy's `metadata` and the learned
type signatures. Any other key is refused (`ArtifactError`, naming the file and the key), and DSPy
is handed a state rebuilt from the checked values only. Saving goes through the same check, so a
program that saves is a program that loads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.type_signatures import STATE_KEY as TYPE_SIGNATURES_KEY
from edgewise.modules.type_signatures import TypeSignatures
from edgewise.programs.artifact_errors import ArtifactError, refusal, shown_key

METADATA_KEY: Final = "metadata"
HOLDS: Final = (
    "a compiled program holds only its steps' instructions, field texts and demos; which model is "
    "called, where and how comes from the caller, never from the file"
)


class _State(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FieldText(_State):
    """One signature field's texts, as DSPy's `Signature.dump_state` writes them."""

    prefix: str
    description: str


class SignatureText(_State):
    """A step's instructions and field texts: what instruction optimizers tune."""

    instructions: str
    fields: list[FieldText]


class PredictorState(_State):
    """One step as a compile writes it. The demos are text shown to the model, never settings."""

    signature: SignatureText
    demos: list[dict[str, JsonValue]] = Field(default_factory=list)
    traces: list[JsonValue] = Field(default_factory=list)
    train: list[JsonValue] = Field(default_factory=list)
    lm: None = None


class StateMetadata(_State):
    """DSPy's note of the versions that wrote the file (the manifest is what edgewise checks)."""

    dependency_versions: dict[str, str] = Field(default_factory=dict)


_Model = TypeVar("_Model", bound=BaseModel)


def restorable_state(program: EdgeExtractor, state: Any, path: Path) -> dict[str, Any]:
    """The state DSPy may restore into `program`: `state` checked against the allow-list and rebuilt.

    Raises `ArtifactError` for a key that is not on the list, a step of `program` with no state, a
    value of the wrong kind, or field texts that do not match the step's signature.
    """
    if not isinstance(state, dict):
        raise ArtifactError(f"{path}: a compiled program's state is a JSON object")
    predictors = dict(program.named_predictors())
    allowed = {*predictors, METADATA_KEY, TYPE_SIGNATURES_KEY}
    for key in state:
        if key not in allowed:
            raise ArtifactError(f"{path}: key {shown_key((key,))!r} is not allowed: {HOLDS}")
    missing = sorted(set(predictors) - set(state))
    if missing:
        raise ArtifactError(f"{path}: no state for the program's step(s) {', '.join(missing)}")
    restored: dict[str, Any] = {}
    for name, predictor in predictors.items():
        checked = _checked(PredictorState, state[name], path, name)
        expected = len(predictor.signature.fields)
        if len(checked.signature.fields) != expected:
            raise ArtifactError(
                f"{path}: key '{name}.signature.fields' has {len(checked.signature.fields)} field texts; "
                f"the step's signature has {expected} fields"
            )
        restored[name] = checked.model_dump(mode="json")
    restored[METADATA_KEY] = _checked(
        StateMetadata, state.get(METADATA_KEY) or {}, path, METADATA_KEY
    ).model_dump()
    if state.get(TYPE_SIGNATURES_KEY) is not None:
        signatures = _checked(TypeSignatures, state[TYPE_SIGNATURES_KEY], path, TYPE_SIGNATURES_KEY)
        restored[TYPE_SIGNATURES_KEY] = signatures.model_dump(mode="json")
    return restored


def _checked(model: type[_Model], value: Any, path: Path, key: str) -> _Model:
    try:
        return model.model_validate(value)
    except ValidationError as error:
        raise refusal(path, error, HOLDS, (key,)) from None


def clean_saved_state(program: EdgeExtractor, path: Path, shown_as: Path) -> None:
    """Rewrite the state DSPy saved at `path` with `lm` null, after checking it as loading does.

    A predictor compiled with its LM attached makes DSPy write that LM's settings into the file; the
    model is the caller's, so `lm` is always null. Checking here means a compile that wrote anything
    off the list fails when it saves (named as `shown_as`), not when someone loads it.
    """
    state = json.loads(path.read_text(encoding="utf-8"))
    for name, _ in program.named_predictors():
        if isinstance(state.get(name), dict):
            state[name]["lm"] = None
    restorable_state(program, state, shown_as)
    path.write_text(json.dumps(state, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
