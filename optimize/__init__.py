"""Compiling the edge extractor: optimizer runs, and the compiled-program artifact they produce.

from edgewise.optimize import OptimizeSettings, optimize, load
report = optimize(task_lm=lm, train="train", dev="dev", out="runs/prog",
                  settings=OptimizeSettings(optimizer="mipro"))
extractor = load("runs/prog")

The names resolve on first use, so that reading a shipped program (package data under this
package's `compiled/`) does not import the optimizer.
"""

from __future__ import annotations

import importlib
from typing import Any, Final

_WHERE: Final = {
    "ArtifactError": "edgewise.programs.artifact",
    "Manifest": "edgewise.programs.artifact",
    "load": "edgewise.programs.artifact",
    "save": "edgewise.programs.artifact",
    "shipped_programs": "edgewise.programs.artifact",
    "BudgetExhausted": "edgewise.optimize.run",
    "OptimizeReport": "edgewise.optimize.run",
    "evaluate_program": "edgewise.optimize.run",
    "optimize": "edgewise.optimize.run",
    "DEFAULTS": "edgewise.optimize.settings",
    "OptimizeSettings": "edgewise.optimize.settings",
}

__all__ = [
    "DEFAULTS",
    "ArtifactError",
    "BudgetExhausted",
    "Manifest",
    "OptimizeReport",
    "OptimizeSettings",
    "evaluate_program",
    "load",
    "optimize",
    "save",
    "shipped_programs",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
