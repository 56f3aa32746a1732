"""Compiling the edge extractor: optimizer runs, and the compiled-program artifact they produce.

from edgewise.optimize import OptimizeSettings, optimize, load
report = optimize(task_lm=lm, train="train", dev="dev", out="runs/prog",
                  settings=OptimizeSettings(optimizer="mipro"))
extractor = load("runs/prog")
"""

from edgewise.optimize.artifact import ArtifactError, Manifest, load, save, shipped_programs
from edgewise.optimize.run import BudgetExhausted, OptimizeReport, evaluate_program, optimize
from edgewise.optimize.settings import DEFAULTS, OptimizeSettings

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
