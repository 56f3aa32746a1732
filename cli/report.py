"""`edgewise report`: rebuild a bench folder's results.html from the files the bench wrote there."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pydantic import ValidationError

from edgewise.cli import add_command
from edgewise.domain.errors import FileContentError
from edgewise.domain.names import field_path
from edgewise.eval.bench_records import BenchReport
from edgewise.eval.html_report import RESULTS_HTML, write_html
from edgewise.eval.report import PLOT_PNG, RESULTS_JSON

HELP = "rebuild results.html of a bench folder (no model, no data split needed)"
DESCRIPTION = """Rebuild the page a bench writes, results.html, from the folder's results.json, plot.png,
episodes.jsonl and predictions.jsonl: the results table and the plot, then every episode's text with its
entity mentions highlighted, its gold edges and each program's edges, each marked matched, missed,
spurious, reversed, mistyped or wrong date (the verdicts of errors.jsonl). Filters pick episodes by
source, program, verdict, or where program A beats program B on the episode's F1. The file is
self-contained: it opens offline in any browser and loads nothing."""

EXAMPLES = """examples:
  edgewise report runs/bench-20250101-120000
  edgewise report benchmarks/results/test-1.5b --output /tmp/test-1.5b.html

A folder from an older bench, without episodes.jsonl and predictions.jsonl, gets the table and plot only."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "report", HELP, DESCRIPTION, EXAMPLES)
    parser.add_argument(
        "results_dir",
        type=Path,
        metavar="RESULTS_DIR",
        help="a folder `edgewise bench --out` wrote. Example: runs/bench-smoke",
    )
    parser.add_argument(
        "--output",
        type=Path,
        help=f"where to write the page (default: RESULTS_DIR/{RESULTS_HTML}). Example: --output /tmp/bench.html",
    )
    parser.set_defaults(func=run)


def load_report(results_dir: Path) -> BenchReport:
    """The folder's results.json, or an error naming the file and the field that is wrong."""
    path = results_dir / RESULTS_JSON
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: RESULTS_DIR must be a folder written by `edgewise bench`")
    try:
        return BenchReport.model_validate_json(path.read_bytes())
    except ValidationError as error:
        first = error.errors()[0]
        where = field_path(tuple(first["loc"]))
        raise FileContentError(
            f"{path}: not a bench results.json: " + (f"field {where!r}: " if where else "") + first["msg"]
        ) from None


def run(args: argparse.Namespace) -> int:
    results_dir: Path = args.results_dir
    if not results_dir.is_dir():
        raise FileNotFoundError(f"{results_dir} is not a folder")
    report = load_report(results_dir)
    written = write_html(report, results_dir, plot=(results_dir / PLOT_PNG).is_file(), output=args.output)
    size_kb = written.stat().st_size / 1024
    print(f"edgewise report: wrote {written} ({size_kb:.0f} KiB)", file=sys.stderr)
    return 0
