"""edgewise: knowledge-graph edge extraction as a compiled, measured DSPy program.

import edgewise
extractor = edgewise.load("runs/prog")          # a compiled program; or edgewise.EdgeExtractor()
with edgewise.open_lm(edgewise.LMConfig(model="openai/gpt-4o-mini")) as lm, edgewise.lm_context(lm):
    result = extractor(episode).result           # ExtractionResult: edges, warnings, usage
"""

import importlib.metadata

import edgewise.runtime.offline  # noqa: F401  (must run before dspy/litellm are imported)
from edgewise.domain.episode import Episode
from edgewise.domain.errors import EdgewiseError
from edgewise.domain.types import (
    Edge,
    EdgeAttribute,
    EdgeType,
    Entity,
    ExtractionResult,
    ExtractionWarning,
)
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.options import ProgramOptions
from edgewise.modules.seed_prompt import SeedPromptExtractor
from edgewise.programs.artifact import load
from edgewise.runtime.lm import LMConfig, build_lm, lm_context, open_lm

__version__ = importlib.metadata.version("edgewise")  # the one place is pyproject.toml

__all__ = [
    "Edge",
    "EdgeAttribute",
    "EdgeExtractor",
    "EdgeType",
    "EdgewiseError",
    "Entity",
    "Episode",
    "ExtractionResult",
    "ExtractionWarning",
    "LMConfig",
    "ProgramOptions",
    "SeedPromptExtractor",
    "build_lm",
    "lm_context",
    "load",
    "open_lm",
]
