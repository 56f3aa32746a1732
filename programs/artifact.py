"""The compiled-program artifact: a directory with `program.json` (DSPy state) and `manifest.json`.

State only, never pickle: loading an artifact runs no code from it. An artifact is data, never
configuration: `program.json` may hold only what a compile writes (`programs.program_state` checks it
before DSPy sees it) and `manifest.json` only the `Manifest` fields, so no file can choose the model,
its endpoint or its settings. The manifest fingerprints the signatures' fields so that a program
compiled for other inputs/outputs fails to load with a clear message instead of producing silently
wrong prompts. Writes are atomic: a crash leaves the previous artifact (or none), never a
half-written one that loads.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import resources
from importlib.metadata import version
from pathlib import Path
from typing import Any, Final

import dspy
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.options import ProgramOptions
from edgewise.programs.artifact_errors import ArtifactError, refusal
from edgewise.programs.lora_adapter import ADAPTER_ATTRIBUTE, LoraAdapterRecord, verified_adapter
from edgewise.programs.program_state import clean_saved_state, restorable_state

PROGRAM_FILE: Final = "program.json"
MANIFEST_FILE: Final = "manifest.json"
# The shipped programs are `edgewise optimize` artifacts, committed where the optimizer's runs are
# kept; they are package data, read here without importing the optimizer.
SHIPPED_PACKAGE: Final = "edgewise.optimize"
SHIPPED_FOLDER: Final = "compiled"
_FOLDER_MODE: Final = 0o755
STEPS_SETTING: Final = "steps"
"""The key of a manifest's `settings` that lists the program's steps (`EdgeExtractor.step_names`)."""
_MANIFEST_HOLDS: Final = (
    "a manifest records how a program was compiled; it holds no configuration "
    "(the model, its endpoint and its settings come from the caller)"
)


class Manifest(BaseModel):
    """What was compiled, from what, with what result: enough to reproduce and to trust a program.

    Unknown keys are refused: a manifest that names an endpoint or an LM is not one a compile wrote.
    `settings` and `notes` record the compile; `load` reads only the program's shape from `settings`.
    """

    model_config = ConfigDict(extra="forbid")

    edgewise_version: str
    dspy_version: str
    signature_fingerprints: dict[str, str]
    task_model: str
    teacher_model: str | None = None
    optimizer: str
    settings: dict[str, Any] = Field(default_factory=dict)
    data_hashes: dict[str, str] = Field(default_factory=dict)
    dev_score_before: float | None = None
    dev_score_after: float | None = None
    status: str = "complete"
    created_at: str = Field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    notes: dict[str, Any] = Field(default_factory=dict)
    adapter: LoraAdapterRecord | None = None
    """A fine-tuned program's LoRA adapter file in the folder (`edgewise.programs.lora_adapter`)."""


def _annotation_name(annotation: Any) -> str:
    """`list[CompactEdge]` -> "list[CompactEdge]": the item type is part of the shape (a bare
    `__name__` says only "list"), without module paths that would change when code moves."""
    arguments = getattr(annotation, "__args__", None)
    name = getattr(annotation, "__name__", None) or str(annotation)
    if arguments and getattr(annotation, "__origin__", None) is not None:
        return f"{name}[{', '.join(_annotation_name(argument) for argument in arguments)}]"
    return name


def signature_fingerprints(program: dspy.Module) -> dict[str, str]:
    """sha256 of each predictor's field names, roles and types (not its instructions, which are tuned)."""
    fingerprints: dict[str, str] = {}
    for name, predictor in program.named_predictors():
        signature = predictor.signature
        shape = [
            [role, field_name, _annotation_name(field.annotation)]
            for role, fields in (("in", signature.input_fields), ("out", signature.output_fields))
            for field_name, field in fields.items()
        ]
        fingerprints[name] = hashlib.sha256(json.dumps(shape).encode()).hexdigest()[:16]
    return fingerprints


def save(
    program: EdgeExtractor,
    out_dir: str | Path,
    manifest: Manifest,
    extra_files: Mapping[str, Path] | None = None,
) -> Path:
    """Write the artifact atomically: build it in a sibling temp folder, then swap it in.

    `extra_files` (name in the folder -> file to copy) are the files the manifest names, such as a
    fine-tuned program's adapter, which is checked against its record before the swap.
    """
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    previous = _previous_dir(out_dir)
    if not out_dir.exists() and previous.is_dir():
        previous.rename(out_dir)  # an earlier save stopped between its two renames: put the old one back
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    staging.chmod(_FOLDER_MODE)  # mkdtemp makes it private; an artifact is meant to be shared
    try:
        program.save(str(staging / PROGRAM_FILE))
        clean_saved_state(program, staging / PROGRAM_FILE, out_dir / PROGRAM_FILE)
        (staging / MANIFEST_FILE).write_text(manifest.model_dump_json(indent=2) + "\n")
        for name, source in (extra_files or {}).items():
            if Path(name).name != name or name in (PROGRAM_FILE, MANIFEST_FILE):
                raise ValueError(
                    f"an artifact's extra file is a plain name other than its own files, not {name!r}"
                )
            shutil.copyfile(source, staging / name)
        if manifest.adapter is not None:
            verified_adapter(staging, manifest.adapter)
        for file in staging.iterdir():
            with open(file, "rb") as handle:
                os.fsync(handle.fileno())
        if out_dir.exists():
            shutil.rmtree(previous, ignore_errors=True)
            out_dir.rename(previous)
        staging.rename(out_dir)
        shutil.rmtree(previous, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out_dir


def _previous_dir(out_dir: Path) -> Path:
    return out_dir.with_name(f".{out_dir.name}.previous")


def shipped_programs() -> dict[str, Path]:
    """Compiled programs that come with edgewise, by folder name."""
    root = resources.files(SHIPPED_PACKAGE).joinpath(SHIPPED_FOLDER)
    if not root.is_dir():
        return {}
    return {
        entry.name: Path(str(entry)) for entry in root.iterdir() if entry.joinpath(MANIFEST_FILE).is_file()
    }


def resolve_artifact_dir(path_or_name: str | Path) -> Path:
    path = Path(path_or_name)
    if path.is_dir():
        return path
    shipped = shipped_programs()
    if str(path_or_name) in shipped:
        return shipped[str(path_or_name)]
    known = ", ".join(sorted(shipped)) or "none"
    if _previous_dir(path).is_dir():
        raise ArtifactError(
            f"no compiled program at {str(path)!r}, but a save into it was interrupted: the previous program "
            f"is intact in {_previous_dir(path)} (the next save there restores it)"
        )
    raise ArtifactError(f"no compiled program at {str(path)!r} (shipped programs: {known})")


def read_manifest(directory: Path) -> Manifest:
    """The artifact's manifest; an `ArtifactError` that never quotes the file when it is not one.

    The file may be anything (a symlink to a private file, say): a refusal gives where the JSON
    breaks, or the key at fault, and no text of the file.
    """
    manifest_path = directory / MANIFEST_FILE
    if not manifest_path.is_file() or not (directory / PROGRAM_FILE).is_file():
        raise ArtifactError(
            f"{directory} is not a compiled program: it needs {PROGRAM_FILE} and {MANIFEST_FILE}"
        )
    data = _json_file(manifest_path, "a manifest")
    if not isinstance(data, dict):
        raise ArtifactError(f"{manifest_path}: unreadable manifest: not a JSON object")
    try:
        return Manifest.model_validate(data)
    except ValidationError as error:
        raise refusal(manifest_path, error, _MANIFEST_HOLDS) from None


def _json_file(path: Path, kind: str) -> Any:
    """`path` parsed as UTF-8 JSON; refused, saying only where it breaks and that `kind` is a JSON file."""
    data = path.read_bytes()
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ArtifactError(
            f"{path} is not JSON: it is not UTF-8 text (byte {error.start} is {data[error.start]:#04x}); "
            f"{kind} is a JSON file"
        ) from None
    except json.JSONDecodeError as error:
        raise ArtifactError(
            f"{path} is not JSON ({error.msg} at line {error.lineno} column {error.colno}); {kind} is a JSON file"
        ) from None
    except RecursionError:
        raise ArtifactError(f"{path} is not JSON that can be read: it is nested too deep") from None


def load(path_or_name: str | Path) -> EdgeExtractor:
    """A ready `EdgeExtractor` from a compiled artifact; the LM comes from the caller, not the file."""
    directory = resolve_artifact_dir(path_or_name)
    manifest = read_manifest(directory)
    program = _built(manifest, directory / MANIFEST_FILE)
    expected = signature_fingerprints(program)
    if manifest.signature_fingerprints != expected:
        changed = sorted(
            name
            for name in set(expected) | set(manifest.signature_fingerprints)
            if expected.get(name) != manifest.signature_fingerprints.get(name)
        )
        raise ArtifactError(
            f"{directory} was compiled for other signatures (differs in: {', '.join(changed)}); "
            "recompile it with `edgewise optimize` for this edgewise version"
        )
    for name, built, running in (
        ("edgewise", manifest.edgewise_version, version("edgewise")),
        ("dspy", manifest.dspy_version, dspy.__version__),
    ):
        if built != running:
            warnings.warn(f"{directory} was compiled with {name} {built}, running {running}", stacklevel=2)
    state_path = directory / PROGRAM_FILE
    # Read once, checked, and only the checked values handed to DSPy (never its own `load`, which
    # would read the file again and restore any key it holds onto the predictors).
    state = restorable_state(program, _read_state_file(state_path), state_path)
    try:
        program.load_state(state)
    except Exception as error:
        raise ArtifactError(f"{state_path}: cannot load program state: {error}") from error
    for predictor in program.predictors():
        predictor.lm = None  # the model comes from the caller, never from the file
    if manifest.adapter is not None:
        setattr(program, ADAPTER_ATTRIBUTE, verified_adapter(directory, manifest.adapter))
    return program


def _built(manifest: Manifest, manifest_path: Path) -> EdgeExtractor:
    """The uncompiled program of the shape the manifest's `settings` record.

    `program_options` may use the flat option names every manifest has; the task settings
    (`reflexion_rounds`, `closed_types`, `output_shape`), where recorded, replace the options' own. A
    manifest that records its `steps` must describe a program that runs exactly those steps.
    """
    settings = manifest.settings
    try:
        options = ProgramOptions.model_validate(settings.get("program_options") or {})
    except ValidationError as error:
        raise refusal(
            manifest_path,
            error,
            "not a program option of this edgewise version",
            ("settings", "program_options"),
        ) from None
    try:
        program = EdgeExtractor(
            max_reflexion_rounds=int(settings["reflexion_rounds"])
            if "reflexion_rounds" in settings
            else None,
            closed_types=bool(settings["closed_types"]) if "closed_types" in settings else None,
            output_shape=settings.get("output_shape"),
            options=options,
        )
    except (TypeError, ValueError) as error:
        raise ArtifactError(f"{manifest_path}: its settings do not describe a program: {error}") from None
    recorded = settings.get(STEPS_SETTING)
    if recorded is not None and recorded != program.step_names:
        raise ArtifactError(
            f"{manifest_path}: it records the steps {recorded}, but its settings build the steps "
            f"{program.step_names}; recompile it with `edgewise optimize` for this edgewise version"
        )
    return program


# Every pickle of protocol 2 and later opens with the PROTO opcode and its protocol number.
_PICKLE_PROTO: Final = 0x80
_PICKLE_PROTOCOLS: Final = range(2, 6)


def _read_state_file(path: Path) -> Any:
    """`program.json` parsed; refused, with a message that says what the file is, unless it is UTF-8 JSON.

    DSPy's own parser reports a pickle (or any binary file) as "str is not valid UTF-8: surrogates
    not allowed", which does not tell the user that a pickle was given, nor that edgewise never loads one.
    """
    data = path.read_bytes()
    if len(data) > 1 and data[0] == _PICKLE_PROTO and data[1] in _PICKLE_PROTOCOLS:
        raise ArtifactError(
            f"{path} is not JSON (it looks like a Python pickle); edgewise never loads pickles, since loading "
            "one can run any code: save the program's state as JSON (program.save('program.json'))"
        )
    return _json_file(path, "a compiled program's state")


def new_manifest(program: EdgeExtractor, **fields: Any) -> Manifest:
    """The manifest of `program` as compiled now; its `settings` gain the program's steps, in order,
    which `load` checks against the steps the settings build."""
    settings = dict(fields.pop("settings", None) or {})
    step_names = getattr(program, "step_names", None)
    if step_names is not None:
        settings[STEPS_SETTING] = list(step_names)
    return Manifest(
        edgewise_version=version("edgewise"),
        dspy_version=dspy.__version__,
        signature_fingerprints=signature_fingerprints(program),
        settings=settings,
        **fields,
    )
