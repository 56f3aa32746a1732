"""Loading a program for inference imports no optimizer and no bench.

A service, a batch job or a Ray actor calls `edgewise.load` and then runs episodes: the optimizer's
run, dispatch, metering and selection, and `edgewise.eval`, are not theirs to pay for at start-up or
to keep in memory. The check runs in a fresh interpreter, where `sys.modules` holds what that one
call imported and nothing the test session imported before.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Final

SHIPPED_PROGRAM: Final = "qwen2.5-coder-1.5b-program"
NOT_FOR_INFERENCE: Final = (
    "edgewise.optimize.run",
    "edgewise.optimize.dispatch",
    "edgewise.optimize.metering",
    "edgewise.optimize.selection",
    "edgewise.eval",
)

_PROBE: Final = f"""
import json, sys
import edgewise
program = edgewise.load({SHIPPED_PROGRAM!r})
print(json.dumps({{"program": type(program).__name__, "modules": sorted(sys.modules)}}))
"""


def test_load_imports_nothing_of_the_optimizer_or_the_bench(tmp_path) -> None:
    run = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    seen = json.loads(run.stdout.splitlines()[-1])
    assert seen["program"] == "EdgeExtractor"
    assert "edgewise.programs.artifact" in seen["modules"]
    loaded = [
        name
        for name in seen["modules"]
        if any(name == banned or name.startswith(banned + ".") for banned in NOT_FOR_INFERENCE)
    ]
    assert loaded == []
