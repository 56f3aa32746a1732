"""The OpenAPI document is the contract: Schemathesis, every check, against the served app.

The app runs as `edgewise serve` runs it (uvicorn on 127.0.0.1), backed by the mock model, which
injects faults into a fifth of its replies (`openapi_service.FAULTS`). Schemathesis generates
schema-valid and schema-violating requests from `/openapi.json` and checks every answer: no valid
request refused, no invalid one accepted, no undocumented status, every body matching its schema.

One setting says what the document cannot: a provider failure is answered 502 or 503, as
documented; only a 500 is a server error. No hook adjusts the generated bodies: every rule of
`Episode` is in its JSON Schema (a signature may name any entity type, see `EdgeType`).
Bounded: a fixed seed and `MAX_EXAMPLES` per operation and phase.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("schemathesis", reason="the dev extra installs schemathesis")

from openapi_service import served_app

MAX_EXAMPLES = 40
SCHEMATHESIS_CONFIG = """\
[checks.not_a_server_error]
expected-statuses = ["2xx", "3xx", "4xx", "502", "503"]
"""


def test_schemathesis_finds_no_difference_between_the_document_and_the_service(tmp_path: Path) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(SCHEMATHESIS_CONFIG)
    env = {key: value for key, value in os.environ.items() if key != "SCHEMATHESIS_HOOKS"}
    with served_app() as url:
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "schemathesis.cli",
                "--config-file",
                str(config),
                "run",
                f"{url}/openapi.json",
                "--checks",
                "all",
                "--max-examples",
                str(MAX_EXAMPLES),
                "--seed",
                "0",
                "--workers",
                "1",
                "--request-timeout",
                "30",
                "--no-shrink",
                "--report",
                "junit",
                "--report-dir",
                str(tmp_path / "report"),
            ],
            check=False,
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-6000:]
    assert "No issues found" in output and "3 selected / 3 total" in output, output[-3000:]
