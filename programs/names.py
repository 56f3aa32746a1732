"""Program names the CLI and benchmarks accept: the seed baselines, the default module, compiled ones.

`seed` and `seed-structured` are the verbatim seed prompt (free text / structured output);
`graphiti` and `graphiti-structured` are Graphiti's own edge prompt, rendered by the installed
graphiti-core (the `[graphiti]` extra), sent and parsed as Graphiti does / with structured output;
`llama-index` and `llama-index-structured` are LlamaIndex's `SchemaLLMPathExtractor` prompt (the
`[llama-index]` extra: as sent to a model without / with function calling), `langchain` is LangChain's
`LLMGraphTransformer` prompt in its JSON mode (the `[langchain]` extra); these three find their own
entities, as those frameworks do, and so take episodes as text alone;
`default` is the uncompiled `EdgeExtractor`; anything else is a compiled-program directory or the name
of one shipped with edgewise (see `edgewise.programs.artifact`).

Where no program is named (`edgewise extract`, `serve` and `bench` without `--program(s)`,
`EdgewiseLLMClient` without `program=`, the Ray stage), `choose_program` picks the shipped program
compiled for the model in use. Several shipped programs may name one task model (a frozen baseline,
candidates, a newer one), so the choice is written down, not inferred: `optimize/compiled/defaults.json`
maps a local model to its program, and `tests/programs/test_default_program.py` checks it against the shipped
manifests' `task_model`. Any other model (a hosted model string, your own server) gets `default`.
"""

from __future__ import annotations

import importlib
import json
from functools import cache
from importlib import resources
from typing import Final, NamedTuple

import dspy

from edgewise.domain.errors import MissingExtraError, UsageError
from edgewise.local.local_models import LocalModelError, is_local_model, resolve_local_model
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.seed_prompt import SeedPromptExtractor

UNCOMPILED: Final = "default"
DEFAULTS_FILE: Final = "defaults.json"
"""In `optimize/compiled/`: each local model (`local/<name>`) -> the program run on it by default."""


@cache
def shipped_defaults() -> dict[str, str]:
    """The committed model -> default program map (`optimize/compiled/defaults.json`)."""
    from edgewise.programs.artifact import SHIPPED_FOLDER, SHIPPED_PACKAGE

    text = resources.files(SHIPPED_PACKAGE).joinpath(SHIPPED_FOLDER, DEFAULTS_FILE).read_text("utf-8")
    return dict(json.loads(text))


def model_key(model: str) -> str:
    """The name a manifest's `task_model` gives `model`: `local` -> `local/qwen2.5-coder-1.5b`.

    A local name edgewise does not know is returned as given (opening it fails with the known names).
    """
    if not is_local_model(model):
        return model
    try:
        return f"local/{resolve_local_model(model).name}"
    except LocalModelError:
        return model


class ProgramChoice(NamedTuple):
    """The program a command runs, and why: what a one-line notice says before the first result."""

    name: str
    why: str

    def notice(self) -> str:
        """`program qwen2.5-coder-1.5b-program-v2 (the shipped program compiled for local/...)`."""
        return f"program {self.name} ({self.why})"


def choose_program(spec: str | None, model: str) -> ProgramChoice:
    """`spec` when given; otherwise the shipped program compiled for `model`, else the uncompiled one."""
    if spec is not None:
        return ProgramChoice(spec, "named")
    key = model_key(model)
    name = shipped_defaults().get(key)
    if name is None:
        return ProgramChoice(UNCOMPILED, f"the uncompiled program: no shipped program is compiled for {key}")
    if name == UNCOMPILED:
        return ProgramChoice(UNCOMPILED, f"the uncompiled program, the one chosen for {key}")
    return ProgramChoice(
        name, f"the shipped program compiled for {key}; name `default` for the uncompiled one"
    )


def resolve_program(
    spec: str, *, reflexion_rounds: int | None = None, open_types: bool = False, find_entities: bool = False
) -> dspy.Module:
    """A ready program for `spec`; `reflexion_rounds` overrides the program's own setting when given.

    `open_types` lets an `EdgeExtractor` write relationship types outside the episode's list (the seed
    prompts always may: they are the verbatim baseline). `find_entities` adds the entity step
    (`EdgeExtractor.with_entity_step`), so that episodes may come as text alone; the seed prompts and
    Graphiti's prompt have none, and refuse it; LlamaIndex's and LangChain's prompts always find them.
    """
    program = _resolved(spec, reflexion_rounds=reflexion_rounds, open_types=open_types)
    if not find_entities or getattr(program, "finds_entities", False):
        return program
    if not isinstance(program, EdgeExtractor):
        raise UsageError(f"program {spec!r} has no entity step; find entities with an edgewise program")
    return program.with_entity_step()


class _FrameworkProgram(NamedTuple):
    """A peer's own prompt as a bench program: where it lives, what renders it, and its extra."""

    module: str
    cls: str
    renders: str
    extra: str
    structured: bool | None  # None: the program has one mode


FRAMEWORK_PROGRAMS: Final[dict[str, _FrameworkProgram]] = {
    "graphiti": _FrameworkProgram(
        "graphiti_baseline", "GraphitiPromptExtractor", "Graphiti's prompt with graphiti-core", "graphiti", False
    ),
    "graphiti-structured": _FrameworkProgram(
        "graphiti_baseline", "GraphitiPromptExtractor", "Graphiti's prompt with graphiti-core", "graphiti", True
    ),
    "llama-index": _FrameworkProgram(
        "llama_index_baseline", "LlamaIndexPathExtractor", "LlamaIndex's prompt with llama-index-core",
        "llama-index", False,
    ),
    "llama-index-structured": _FrameworkProgram(
        "llama_index_baseline", "LlamaIndexPathExtractor", "LlamaIndex's prompt with llama-index-core",
        "llama-index", True,
    ),
    "langchain": _FrameworkProgram(
        "langchain_baseline", "LangChainGraphExtractor", "LangChain's prompt with langchain-experimental",
        "langchain", None,
    ),
}  # fmt: skip
"""The peers' prompts that `--program` and `--programs` take by name; each needs its framework's extra."""
BUILTIN_PROGRAMS: Final = ("seed", "seed-structured", *FRAMEWORK_PROGRAMS, UNCOMPILED)
"""Every program name that is not a compiled folder: the seed prompt, the peers' prompts, the uncompiled one."""


def _framework_program(spec: str) -> dspy.Module:
    """The bench program `spec` names, or a `MissingExtraError` that says which extra to install."""
    entry = FRAMEWORK_PROGRAMS[spec]
    try:
        module = importlib.import_module(f"edgewise.programs.{entry.module}")
    except ImportError as error:
        raise MissingExtraError(
            f"program {spec!r} renders {entry.renders}: pip install 'edgewise[{entry.extra}]' ({error})"
        ) from None
    program_class = getattr(module, entry.cls)
    return program_class() if entry.structured is None else program_class(structured=entry.structured)


def _resolved(spec: str, *, reflexion_rounds: int | None, open_types: bool) -> dspy.Module:
    rounds = reflexion_rounds or 0
    if spec == "seed":
        return SeedPromptExtractor(structured=False, max_reflexion_rounds=rounds)
    if spec == "seed-structured":
        return SeedPromptExtractor(structured=True, max_reflexion_rounds=rounds)
    if spec in FRAMEWORK_PROGRAMS:
        return _framework_program(spec)
    if spec == UNCOMPILED:
        return EdgeExtractor(max_reflexion_rounds=rounds, closed_types=not open_types)
    from edgewise.programs.artifact import load

    program = load(spec)
    if reflexion_rounds is not None:
        program.max_reflexion_rounds = reflexion_rounds
    if open_types:
        program.closed_types = False
    return program
