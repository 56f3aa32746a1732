"""`edgewise extract`: JSONL episodes in, one JSONL result (or error) line per input line out."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, redirect_stdout
from pathlib import Path
from typing import IO, Any

from edgewise.cli import EXIT_OK, EXIT_SOME_FAILED, add_command
from edgewise.cli.extract_ray import DEFAULT_ACTORS
from edgewise.cli.flags import above, at_least
from edgewise.cli.options import (
    add_lm_arguments,
    add_no_progress_argument,
    add_open_types_argument,
    add_program_argument,
    config_from_args,
    program_flags,
)
from edgewise.domain.errors import UsageError
from edgewise.domain.file_types import FileEntityTypes
from edgewise.modules.program_io import input_model
from edgewise.programs.lora_adapter import program_adapter
from edgewise.programs.names import choose_program, resolve_program
from edgewise.runtime.episode_runner import LineRecord, extract_records
from edgewise.runtime.jsonl import (
    BatchSummary,
    InputLine,
    ResumePoint,
    claim_output,
    read_episode_lines,
    refuse_same_file,
    write_record,
)
from edgewise.runtime.lm import lm_context, open_lm
from edgewise.runtime.reply_cache import use_reply_cache
from edgewise.scale.batch_report import report_summary, run_started

HELP = "extract edges from JSONL episodes"
DESCRIPTION = """Extract temporal graph edges from episodes, one JSON object per line.

Each input line is an episode: {"id": ..., "episodeContent": ..., "previousEpisodes": [...],
"entities": [{"name": ...}], "referenceTime": "2025-01-01T00:00:00Z", "edgeTypes": [...]}.
Each output line carries the input's "id" and "line" and either the seed's {"edges": [...]} plus
"warnings" and "usage", or an "error" object (kind, reason, line, field, message). Output keeps
input order and each line is written as soon as it and every line before it are done, so --resume
continues a stopped or killed run without losing or repeating an episode. stdout carries only
these lines. --output is never the input, is locked against a second run, and is emptied only once
the model is ready. Exit status: 0 every line is a result, 2 some lines are errors, 1 nothing ran
(usage, configuration or file error; the message is on stderr), 3 a bug in edgewise
(EDGEWISE_DEBUG=1 prints its traceback), 130 interrupted.

Without --program the shipped program compiled for --model runs (qwen2.5-coder-1.5b-program-v2 on
the local 1.5B), and the uncompiled one (default) on any other model; a line on stderr names the
program before the first result.

Failed model requests (429, 5xx, timeouts, dropped connections, 2xx replies that are not JSON) are
retried with exponential backoff and jitter (--max-retries, Retry-After honoured); an episode past
--episode-timeout fails with reason "deadline". The last stderr line sums up: done, failed by
reason, retried model requests by reason. Before it, one line per signature type (sourceTypes,
targetTypes) that no entity of the whole input has: a misspelling, most likely (a type that only
some episodes lack is a shared schema, and fine). It does not change the exit status.

--engine ray runs the episodes on Ray Data actors (the ray extra), on this machine or a cluster
(--address), with the same contract: --input is a JSONL or Parquet file or a folder of them (a
record then names its file in "source"), --output a .jsonl or .parquet file. Records are journaled
in OUTPUT.partial as they come back and replace --output in input order, in one rename, at the end;
--resume continues from the journal (or from a finished --output) and skips the lines it holds."""

EXAMPLES = """examples:
  edgewise extract --input episodes.jsonl --output edges.jsonl
  echo '{"episodeContent": "Ana joined Acme in 2021.", "entities": [{"name": "Ana"}, {"name": "Acme"}], "referenceTime": "2025-01-01T00:00:00Z"}' | edgewise extract --model openai/gpt-4o-mini
  edgewise extract --program runs/prog --input big.jsonl --output out.jsonl --workers 8 --resume
  edgewise extract -i big.jsonl -o out.jsonl --workers 16 --max-rps 10 --episode-timeout 120
  edgewise extract --engine ray --actors 4 --workers 8 -i episodes/ -o edges.parquet --model openai/qwen2.5 --api-base http://10.0.0.5:8000/v1,http://10.0.0.6:8000/v1"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "extract", HELP, DESCRIPTION, EXAMPLES)
    parser.add_argument(
        "--input",
        "-i",
        type=Path,
        help="episodes JSONL file (default: stdin); with --engine ray also a Parquet file or a folder of "
        ".jsonl and .parquet files. Example: --input episodes.jsonl",
    )
    parser.add_argument(
        "--output",
        "-o",
        type=Path,
        help="results JSONL file (default: stdout); with --engine ray a .jsonl or .parquet file. "
        "Example: --output edges.jsonl",
    )
    add_program_argument(parser)
    parser.add_argument(
        "--baseline",
        choices=["seed", "seed-structured"],
        help="run the verbatim seed prompt instead of --program. Example: --baseline seed",
    )
    parser.add_argument(
        "--reflexion-rounds",
        type=at_least(0),
        help="rounds of missed-fact review (default: the program's own, 0 for default). Example: --reflexion-rounds 1",
    )
    add_open_types_argument(parser)
    parser.add_argument(
        "--find-entities",
        action="store_true",
        help="add the entity step to the program: a line without entities has them found in its text "
        "first (given entities are kept as they are); entityTypes, when a line has them, are the types "
        "the step may give. Without it such a line is an input error. Example: --find-entities",
    )
    parser.add_argument(
        "--workers",
        type=at_least(1),
        default=1,
        help="episodes extracted concurrently, in each actor with --engine ray (default 1). Example: --workers 8",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue a stopped run: keep the complete lines of --output, run its error lines again "
        "(all but input errors), then extract the rest; refused (exit 1, output unchanged) unless each "
        "kept line carries the id of the same input line. Example: --output out.jsonl --resume",
    )
    parser.add_argument(
        "--episode-timeout",
        type=above(0),
        help="seconds one episode may take, counted from the start of its first model request (so the "
        "run's own warm-up never counts), retries and waits included; a later episode fails with reason "
        '"deadline" (default: no limit). Example: --episode-timeout 120',
    )
    engine = parser.add_argument_group("engine")
    engine.add_argument(
        "--engine",
        choices=["local", "ray"],
        default="local",
        help="local: threads in this process (--workers); ray: Ray Data actors (--actors, each running "
        "--workers episodes), reading a JSONL or Parquet file or a folder of them and writing .jsonl or "
        ".parquet; --api-base may then list several servers, comma-separated, spread over the actors "
        "(default local; needs the ray extra). Example: --engine ray --actors 8",
    )
    engine.add_argument(
        "--address",
        help="Ray cluster to join, as `ray.init` takes it (default: start a local Ray for the run and stop it "
        "after). Example: --address ray://head:10001",
    )
    engine.add_argument(
        "--actors",
        type=at_least(1),
        help=f"Ray actors extracting at once, each loading the program once (default {DEFAULT_ACTORS}). "
        "Example: --actors 8",
    )
    parser.add_argument(
        "--summary-json",
        type=Path,
        help="also write the end-of-run summary as JSON to this file. Example: --summary-json summary.json",
    )
    add_no_progress_argument(parser)
    add_lm_arguments(parser)
    parser.set_defaults(func=run)


def _descriptor(stream: IO[Any]) -> int | None:
    """The file descriptor behind a standard stream, or None when it has none (a test's StringIO)."""
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def _refuse_ray_only_settings(args: argparse.Namespace) -> None:
    """What only --engine ray does is refused by the local engine, not silently done another way."""
    ray_only = [flag for flag, value in (("--address", args.address), ("--actors", args.actors)) if value]
    if ray_only:
        raise UsageError(f"{' and '.join(ray_only)} need --engine ray")
    if args.input is not None and args.input.is_dir():
        raise UsageError(f"--input {args.input} is a folder: folders of episodes need --engine ray")
    for flag, path in (("--input", args.input), ("--output", args.output)):
        if path is not None and path.suffix.lower() == ".parquet":
            raise UsageError(f"{flag} {path} is Parquet: Parquet files need --engine ray")
    if args.api_base and "," in args.api_base:
        raise UsageError("several --api-base servers need --engine ray (the local engine talks to one)")


def run(args: argparse.Namespace) -> int:
    """Extract every line; the exit status is 0 when every line is a result, 2 when some are errors.

    The order is the batch contract's: flags, input and output checked, the program loaded, the
    output claimed (locked, not yet changed), the model opened (key, provider, local server), and
    only then the output emptied or resumed. Anything printed while the batch runs (LiteLLM's
    banners, a library's debug print) goes to stderr: stdout carries only the result lines.
    """
    if args.resume and args.output is None:
        raise UsageError("--resume needs --output (the file to continue)")
    if args.engine == "ray":
        from edgewise.cli.extract_ray import run_ray

        with redirect_stdout(sys.stderr):
            return run_ray(args)
    _refuse_ray_only_settings(args)
    results_stream = sys.stdout
    source_file = args.input or _descriptor(sys.stdin)
    refuse_same_file(source_file, args.output or _descriptor(results_stream), "edgewise extract")
    with redirect_stdout(sys.stderr):
        return _run_batch(args, results_stream)


def _run_batch(args: argparse.Namespace, results_stream: IO[str]) -> int:
    config = config_from_args(args)
    if config.cache:
        use_reply_cache()
    choice = choose_program(args.baseline or args.program, config.model)
    program = resolve_program(choice.name, **program_flags(args))
    model = input_model(program)
    config = config.model_copy(update={"lora_adapter": program_adapter(program, config.model)})
    started = time.monotonic()
    summary = BatchSummary()
    with ExitStack() as stack:
        source = str(args.input) if args.input else "<stdin>"
        stream_in = stack.enter_context(open(args.input, "rb")) if args.input else sys.stdin.buffer
        claimed = stack.enter_context(claim_output(args.output)) if args.output else None
        lm = stack.enter_context(open_lm(config))
        stack.enter_context(lm_context(lm))
        # The model is ready: from here on the run has started and the output may change.
        # A resumed run reads the input lines its kept output answers while checking them (stdin too).
        resumed = (
            claimed.begin(resume=args.resume, answered=stream_in, source=source, model=model)
            if claimed
            else ResumePoint(0, Counter())
        )
        progress = stack.enter_context(
            run_started(summary, resumed, choice.notice(), progress=not args.no_progress)
        )
        types = FileEntityTypes()

        def run_lines(items: Iterable[InputLine]) -> Iterator[LineRecord]:
            """Each line's record, counted in the summary and the progress bar."""
            records = extract_records(
                program,
                _noting_types(items, types),
                config=config,
                timeout_s=args.episode_timeout,
                workers=args.workers,
            )
            for done in records:
                summary.count(done.record, done.requests, done.retries)
                progress.update(1)
                yield done

        if claimed and resumed.retry:  # the kept error lines first, put in place all at once
            claimed.replace_lines({done.item.line: done.record for done in run_lines(resumed.retry)})
        stream_out = claimed.stream if claimed else getattr(results_stream, "buffer", results_stream)
        lines = read_episode_lines(stream_in, source, first_line=resumed.lines + 1, model=model)
        for done in run_lines(lines):
            write_record(stream_out, done.record)
    summary.wall_s = time.monotonic() - started
    report_summary(summary, summary_json=args.summary_json, notes=types.report(source))
    return EXIT_OK if summary.all_done else EXIT_SOME_FAILED


def _noting_types(items: Iterable[InputLine], types: FileEntityTypes) -> Iterator[InputLine]:
    """`items` unchanged, each episode's entity and signature types noted in `types` on the way.

    A resumed run notes the lines it runs (the rest, and the kept error lines it runs again), not
    the ones an earlier run already answered.
    """
    for item in items:
        if item.episode is not None:
            types.add(item.episode, item.line)
        yield item
