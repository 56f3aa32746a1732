"""`edgewise extract --engine ray`: the batch contract of `edgewise extract`, with the episodes on Ray actors.

The same order as the local engine: flags, input and output checked, the program loaded, the
output claimed (locked, not changed), the model's settings checked, Ray started or joined, and only
then the journal begun (see `edgewise.scale.ray_files`). Ray's read tasks read the input, the actors of
`edgewise.scale.ray_stage` extract it, and the driver journals each record as it comes back; at the end
the records replace the results file in input order, in one rename. The exit status is the local
engine's: 0 every line is a result, 2 some are errors, 1 nothing ran or the run stopped.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType
from typing import Final

from tqdm import tqdm

from edgewise.cli import EXIT_OK, EXIT_SOME_FAILED
from edgewise.cli.options import config_from_args
from edgewise.programs.names import choose_program, resolve_program
from edgewise.runtime.jsonl import BatchSummary, OutputClaimError, claim_output, refuse_same_file
from edgewise.runtime.lm import API_KEY_ENV, LMConfig, LMConfigError, build_lm

DEFAULT_ACTORS: Final = 2
# Reading a chunk of lines takes a millisecond: a few read tasks at a time, each holding a sliver of
# a CPU, keep every actor fed without starting a Python worker per chunk.
READ_TASK_CPUS: Final = 0.1
READ_TASKS: Final = 2
# An actor killed while it starts is replaced this many times in a row before the run gives up
# (Ray Data's own default is to give up at the first).
ACTOR_START_DEATHS: Final = 3
MISSING_RAY: Final = "--engine ray needs Ray: pip install 'edgewise[ray]' (ray[data] 2.40 or later)"


def import_ray() -> ModuleType:
    """Ray, or a one-line error saying which extra to install."""
    try:
        import ray
        import ray.data
    except ImportError as error:
        raise RuntimeError(MISSING_RAY) from error
    return ray


def api_bases(config: LMConfig) -> list[str]:
    """The model servers to spread over the actors: `--api-base` may list several, separated by commas."""
    if not config.api_base:
        return []
    return [base.strip() for base in config.api_base.split(",") if base.strip()]


def _check_paths(args: argparse.Namespace) -> None:
    if args.input is None or args.output is None:
        raise ValueError(
            "--engine ray reads --input (a file or a folder of .jsonl and .parquet files) and writes "
            "--output (.jsonl, or .parquet); stdin and stdout are for --engine local"
        )
    refuse_same_file(args.input, args.output, "edgewise extract")
    if args.input.is_dir() and args.output.resolve().is_relative_to(args.input.resolve()):
        raise OutputClaimError(
            "edgewise extract: the output is inside the input folder, where it would be read as input; "
            "write the results to another folder"
        )


def _start_ray(ray: ModuleType, args: argparse.Namespace, config: LMConfig) -> bool:
    """Join `--address`, reuse this process's Ray, or start a local one; True when this run connected.

    `ray.shutdown()` at the end then stops the local Ray, or leaves the cluster (which keeps running).

    A key given with --api-key reaches a local Ray's workers through the environment they inherit
    when Ray starts; an existing cluster's workers have their own environment, and the key is never
    sent in a task, so there it must be set on the workers.
    """
    key_elsewhere = bool(config.api_key) and config.api_key != os.environ.get(API_KEY_ENV)
    if args.address or ray.is_initialized():
        if key_elsewhere:
            raise LMConfigError(
                f"--api-key cannot reach the workers of a running Ray cluster (a key is never sent in a "
                f"task): set {API_KEY_ENV} or the provider's variable in the workers' environment"
            )
        if ray.is_initialized():
            return False
        ray.init(address=args.address, log_to_driver=False, logging_level=logging.WARNING)
        return True
    previous = os.environ.get(API_KEY_ENV)
    if key_elsewhere:
        os.environ[API_KEY_ENV] = str(config.api_key)
    try:
        ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    finally:
        if key_elsewhere:
            if previous is None:
                os.environ.pop(API_KEY_ENV, None)
            else:
                os.environ[API_KEY_ENV] = previous
    return True


def _quiet_ray_data(ray: ModuleType) -> None:
    """Ray Data's progress bars and banners off (edgewise draws its own bar); actor start-up deaths tolerated."""
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    if hasattr(context, "print_on_execution_start"):
        context.print_on_execution_start = False
    if hasattr(context, "max_consecutive_actor_init_deaths"):
        context.max_consecutive_actor_init_deaths = ACTOR_START_DEATHS
    logging.getLogger("ray.data").setLevel(logging.WARNING)


def _read_pool(ray: ModuleType) -> dict[str, object]:
    """At most READ_TASKS read tasks at once: `compute=TaskPoolStrategy(size=...)`, or `concurrency=` before it."""
    pool = getattr(ray.data, "TaskPoolStrategy", None)
    return {"compute": pool(size=READ_TASKS)} if pool is not None else {"concurrency": READ_TASKS}


def run_ray(args: argparse.Namespace) -> int:
    """Extract every line of --input on Ray; the exit status is the local engine's (0, 2, or 1 via an error)."""
    _check_paths(args)
    ray = import_ray()
    from edgewise.scale import ray_stage
    from edgewise.scale.ray_files import ResultsFile, index_input, pending_chunks, read_chunks

    config = config_from_args(args)
    bases = api_bases(config)
    stage_config = config.model_copy(update={"api_key": None, "api_base": bases[0] if bases else None})
    actors = args.actors or DEFAULT_ACTORS
    ray_stage.check_settings(stage_config, concurrency=actors, workers=args.workers, api_bases=bases)
    choice = choose_program(args.baseline or args.program, config.model)
    program = choice.name
    resolve_program(program, reflexion_rounds=args.reflexion_rounds, open_types=args.open_types)
    # A chunk of input is one batch of one actor: the unit Ray hands out, retries and returns.
    index = index_input(args.input, lines_per_chunk=ray_stage.batch_rows(args.workers))
    started = time.monotonic()
    summary = BatchSummary()
    with ExitStack() as stack:
        claimed = stack.enter_context(claim_output(args.output))
        for base in bases or [None]:  # provider and key checked for each server, no request sent
            build_lm(config.model_copy(update={"api_base": base}))
        if _start_ray(ray, args, config):
            stack.callback(ray.shutdown)
        _quiet_ray_data(ray)
        # Ray is up: from here on the run has started and the journal may change.
        results = ResultsFile(args.output, index)
        stack.callback(results.close)
        kept = results.begin(resume=args.resume)
        summary.resumed_after, summary.resumed_failed = kept.lines, kept.failed
        print(f"edgewise extract: {choice.notice()}", file=sys.stderr)
        progress = stack.enter_context(
            tqdm(
                desc="episodes",
                unit="ep",
                file=sys.stderr,
                disable=args.no_progress,
                total=index.lines,
                initial=kept.lines,
            )
        )
        chunks = pending_chunks(index, results.done())
        if chunks:
            lines = ray.data.from_items(chunks, override_num_blocks=len(chunks)).map_batches(
                read_chunks, batch_size=1, batch_format="pyarrow", num_cpus=READ_TASK_CPUS, **_read_pool(ray)
            )
            records = ray_stage.extract(
                lines,
                program=program,
                lm=stage_config,
                concurrency=actors,
                api_bases=bases,
                workers=args.workers,
                episode_timeout_s=args.episode_timeout,
                reflexion_rounds=args.reflexion_rounds,
                open_types=args.open_types,
            )
            try:
                for batch in records.iter_batches(batch_format="pyarrow", batch_size=None):
                    texts = batch.column("record").to_pylist()
                    requests = batch.column("requests").to_pylist()
                    retries = batch.column("retries").to_pylist()
                    for position, record in results.add(texts):
                        summary.count(record, requests[position], Counter(json.loads(retries[position])))
                    progress.update(batch.num_rows)
            except ray.exceptions.RayError as error:
                reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                raise RuntimeError(
                    f"the Ray run stopped ({reason}); the records so far are in {results.journal}, "
                    "and --resume continues from them"
                ) from error
        lacking, first = results.missing()
        if lacking:
            raise RuntimeError(
                f"{lacking} input lines have no record after the run (first: {first}); the records so far "
                f"are in {results.journal}, and --resume extracts the rest"
            )
        results.finish(before_replace=lambda: setattr(claimed, "started", True))
    summary.wall_s = time.monotonic() - started
    print(f"edgewise extract: {summary.text()}", file=sys.stderr)
    if results.duplicates:
        print(
            f"edgewise extract: {results.duplicates} records answered a line twice; kept one each",
            file=sys.stderr,
        )
    if args.summary_json is not None:
        Path(args.summary_json).write_text(json.dumps(summary.to_json_dict(), indent=2) + "\n")
    return EXIT_OK if summary.all_done else EXIT_SOME_FAILED
