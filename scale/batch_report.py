"""The summary of an `edgewise extract` run, written one way by both engines (local and Ray).

The local engine (`edgewise.cli.extract`) and the Ray driver (`edgewise.scale.ray_driver`) count
their lines into one `BatchSummary`. Where a resumed run starts from (its summary, the notice, the
progress bar) and what the last stderr line and `--summary-json` say are written here once, so the
two engines cannot drift apart. It needs no Ray: the local engine imports it too.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from tqdm import tqdm

from edgewise.runtime.jsonl import BatchSummary, ResumePoint

PREFIX: Final = "edgewise extract"


def run_started(
    summary: BatchSummary, point: ResumePoint, notice: str, *, progress: bool, total: int | None = None
) -> tqdm:
    """The run has started: note where it went on in `summary`, name the program on stderr, open the bar.

    A resumed run goes on after `point.lines` kept lines; the kept error lines it leaves as they are
    stay counted by reason, and those it runs again (`point.retry`) count as this run's lines when
    they are done, so the bar starts below the kept lines by that many. The caller closes the bar.
    """
    summary.resumed_after, summary.resumed_failed = point.lines, point.failed
    summary.rerun = len(point.retry)
    print(f"{PREFIX}: {notice}", file=sys.stderr)
    return tqdm(
        desc="episodes",
        unit="ep",
        file=sys.stderr,
        disable=not progress,
        total=total,
        initial=point.lines - len(point.retry),
    )


def report_summary(
    summary: BatchSummary, *, summary_json: Path | None = None, notes: Iterable[str] = ()
) -> None:
    """Print `notes` and then the summary line on stderr, and write `summary_json` when one is given.

    The summary line is the last line a run prints (scripts read it there); notes are what the run
    noticed on the way (signature types no entity has, lines Ray answered twice).
    """
    for note in notes:
        print(f"{PREFIX}: {note}", file=sys.stderr)
    print(f"{PREFIX}: {summary.text()}", file=sys.stderr)
    if summary_json is not None:
        Path(summary_json).write_text(json.dumps(summary.to_json_dict(), indent=2) + "\n")
