"""Program names the CLI and benchmarks accept: the seed baselines, the default module, compiled ones.

`seed` and `seed-structured` are the verbatim seed prompt (free text / structured output);
`graphiti` and `graphiti-structured` are Graphiti's own edge prompt, rendered by the installed
graphiti-core (the `[graphiti]` extra), sent and parsed as Graphiti does / with structured output;
`default` is the uncompiled `EdgeExtractor`; anything else is a compiled-program directory or the name
of one shipped with edgewise (see `edgewise.optimize.artifact`).
"""

from __future__ import annotations

from typing import Final

import dspy

from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.seed_prompt import SeedPromptExtractor

BUILTIN_PROGRAMS: Final = ("seed", "seed-structured", "graphiti", "graphiti-structured", "default")


def resolve_program(
    spec: str, *, reflexion_rounds: int | None = None, open_types: bool = False
) -> dspy.Module:
    """A ready program for `spec`; `reflexion_rounds` overrides the program's own setting when given.

    `open_types` lets an `EdgeExtractor` write relationship types outside the episode's list (the seed
    prompts always may: they are the verbatim baseline).
    """
    rounds = reflexion_rounds or 0
    if spec == "seed":
        return SeedPromptExtractor(structured=False, max_reflexion_rounds=rounds)
    if spec == "seed-structured":
        return SeedPromptExtractor(structured=True, max_reflexion_rounds=rounds)
    if spec in ("graphiti", "graphiti-structured"):
        try:
            from edgewise.integrations.graphiti_baseline import GraphitiPromptExtractor
        except ImportError as error:
            raise ValueError(
                f"program {spec!r} renders Graphiti's prompt with graphiti-core: pip install 'edgewise[graphiti]' "
                f"({error})"
            ) from None
        return GraphitiPromptExtractor(structured=spec == "graphiti-structured")
    if spec == "default":
        return EdgeExtractor(max_reflexion_rounds=rounds, closed_types=not open_types)
    from edgewise.optimize.artifact import load

    program = load(spec)
    if reflexion_rounds is not None:
        program.max_reflexion_rounds = reflexion_rounds
    if open_types:
        program.closed_types = False
    return program
