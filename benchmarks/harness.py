"""What the benchmark scripts share: their argument parser, progress lines, and the checks of a results file.

The scripts run as `python benchmarks/<name>.py`, so this folder is on `sys.path` and they import
this module by its bare name.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def script_parser(doc: str) -> argparse.ArgumentParser:
    """The parser of a script whose module docstring is its `--help`, printed as written."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def progress(line: str) -> None:
    """One progress line on stderr, shown at once (stdout carries the report)."""
    print(line, file=sys.stderr, flush=True)


def read_records(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of an `edgewise extract` results file, in file order."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def id_checks(records: list[dict[str, Any]], ids: list[str]) -> dict[str, Any]:
    """The batch contract read back: input ids missing from the records, ids repeated, and whether the
    records hold exactly the input ids in input order."""
    seen = Counter(record.get("id") for record in records)
    return {
        "lost": sum(1 for id_ in ids if seen[id_] == 0),
        "duplicated": sum(count - 1 for count in seen.values() if count > 1),
        "in_order": [record.get("id") for record in records] == ids,
    }
