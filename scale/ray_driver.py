"""The Ray driver: files of episodes in, one results file out, on the batch contract of `edgewise extract`.

    from edgewise import LMConfig
    from edgewise.scale.ray_driver import extract_files
    summary = extract_files("episodes/", "edges.parquet", lm=LMConfig(model="openai/qwen2.5"),
                            api_bases=["http://10.0.0.5:8000/v1", "http://10.0.0.6:8000/v1"])

`edgewise extract --engine ray` is this function behind its flags. The order is the local engine's:
input and output checked, the program resolved (once: the actors get that program), the output
claimed (locked, not changed), the model's settings checked, Ray started or joined, and only then
the journal begun (see `edgewise.scale.ray_files`). Ray's read tasks read the input, the actors of
`edgewise.scale.ray_stage` extract it, and the driver journals each record as it comes back; at the
end the records replace the results file in input order, in one rename. Like the command, it prints
the program's name, a progress bar (`progress=True`) and the summary on stderr, and returns the
summary: `summary.all_done` is False when some lines are errors. A run that cannot start or that
stops raises (an `EdgewiseError`, `OSError` or `RuntimeError` saying what to do).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import dspy

from edgewise.domain.errors import MissingExtraError
from edgewise.runtime.jsonl import BatchSummary, OutputClaimError, claim_output, refuse_same_file
from edgewise.runtime.lm import API_KEY_ENV, LMConfig, LMConfigError, build_lm
from edgewise.scale.batch_report import PREFIX, report_summary, run_started

DEFAULT_ACTORS: Final = 2
DEFAULT_WORKERS: Final = 1  # `edgewise extract --workers`' default
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
        raise MissingExtraError(MISSING_RAY) from error
    return ray


def check_paths(input_path: Path, output_path: Path) -> None:
    """Refuse an output that is the input, or that lies in the input folder (it would be read as input)."""
    refuse_same_file(input_path, output_path, PREFIX)
    if input_path.is_dir() and output_path.resolve().is_relative_to(input_path.resolve()):
        raise OutputClaimError(
            f"{PREFIX}: the output is inside the input folder, where it would be read as input; "
            "write the results to another folder"
        )


def check_model(config: LMConfig, api_bases: Sequence[str]) -> None:
    """The provider and key checked on the driver, as each actor will check them, with no request sent.

    Every server is addressed with the same model string (an `--api-base` server as `openai/...`),
    so one check answers for all of them: the LM an actor would build on the first server is built
    and dropped, which runs `runtime.lm`'s own check.
    """
    build_lm(config.model_copy(update={"api_base": api_bases[0] if api_bases else None}))


def start_ray(ray: ModuleType, address: str | None, config: LMConfig) -> bool:
    """Join `address`, reuse this process's Ray, or start a local one; True when this run connected.

    `ray.shutdown()` at the end then stops the local Ray, or leaves the cluster (which keeps running).

    A key given in `config` reaches a local Ray's workers through the environment they inherit
    when Ray starts; an existing cluster's workers have their own environment, and the key is never
    sent in a task, so there it must be set on the workers.
    """
    key_elsewhere = bool(config.api_key) and config.api_key != os.environ.get(API_KEY_ENV)
    if address or ray.is_initialized():
        if key_elsewhere:
            raise LMConfigError(
                f"--api-key cannot reach the workers of a running Ray cluster (a key is never sent in a "
                f"task): set {API_KEY_ENV} or the provider's variable in the workers' environment"
            )
        if ray.is_initialized():
            return False
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
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


def extract_files(
    input_path: Path | str,
    output_path: Path | str,
    *,
    program: str | dspy.Module | None = None,
    lm: LMConfig | None = None,
    api_bases: Sequence[str] = (),
    actors: int = DEFAULT_ACTORS,
    workers: int = DEFAULT_WORKERS,
    address: str | None = None,
    resume: bool = False,
    episode_timeout_s: float | None = None,
    reflexion_rounds: int | None = None,
    open_types: bool = False,
    find_entities: bool = False,
    progress: bool = False,
    summary_json: Path | str | None = None,
) -> BatchSummary:
    """Extract every line of `input_path` on Ray into `output_path`; the summary of the run.

    `input_path` is a JSONL or Parquet file or a folder of them; `output_path` a `.jsonl` or
    `.parquet` file, written as `edgewise extract --engine ray` writes it. `program` is a name or
    folder as `--program` takes (left out: the one `choose_program` picks for `lm`'s model) or a
    program object; `lm` the model's settings (default `LMConfig.from_env()`), its key kept on the
    driver. `api_bases` lists the model servers, spread over the `actors` (default: `lm.api_base`);
    each actor runs `workers` episodes at once. `address` joins a Ray cluster; without it a Ray this
    process already runs is used, else a local one is started and stopped after. `resume` continues
    a stopped run as `--resume` does; `summary_json` also writes the summary there as JSON.
    `find_entities` adds the entity step to a program given by name (`--find-entities`).
    """
    input_path, output_path = Path(input_path), Path(output_path)
    check_paths(input_path, output_path)
    ray = import_ray()
    from edgewise.scale import ray_stage
    from edgewise.scale.ray_files import RayRunError, ResultsFile, index_input, pending_chunks, read_chunks

    config = lm or LMConfig.from_env()
    bases = list(api_bases) or ([config.api_base] if config.api_base else [])
    stage_config = config.model_copy(update={"api_key": None, "api_base": bases[0] if bases else None})
    # The actors' settings: checked here, before Ray starts, and given to the stage as they were checked.
    actor_settings: dict[str, Any] = {
        "lm": stage_config,
        "concurrency": actors,
        "workers": workers,
        "api_bases": bases,
    }
    ray_stage.check_settings(**actor_settings)
    resolved, choice = ray_stage.resolve_once(
        program, config, reflexion_rounds=reflexion_rounds, open_types=open_types, find_entities=find_entities
    )
    notice = choice.notice() if choice else f"program {type(resolved).__name__} (a program object)"
    # A chunk of input is one batch of one actor: the unit Ray hands out, retries and returns.
    index = index_input(input_path, lines_per_chunk=ray_stage.batch_rows(workers))
    started = time.monotonic()
    summary = BatchSummary()
    with ExitStack() as stack:
        claimed = stack.enter_context(claim_output(output_path))
        check_model(config, bases)
        if start_ray(ray, address, config):
            stack.callback(ray.shutdown)
        _quiet_ray_data(ray)
        # Ray is up: from here on the run has started and the journal may change.
        results = ResultsFile(output_path, index)
        stack.callback(results.close)
        kept = results.begin(resume=resume)
        bar = stack.enter_context(run_started(summary, kept, notice, progress=progress, total=index.lines))
        chunks = pending_chunks(index, results.done())
        if chunks:
            lines = ray.data.from_items(chunks, override_num_blocks=len(chunks)).map_batches(
                read_chunks, batch_size=1, batch_format="pyarrow", num_cpus=READ_TASK_CPUS, **_read_pool(ray)
            )
            records = ray_stage.extract(
                lines, program=resolved, episode_timeout_s=episode_timeout_s, **actor_settings
            )
            try:
                for batch in records.iter_batches(batch_format="pyarrow", batch_size=None):
                    texts = batch.column("record").to_pylist()
                    requests = batch.column("requests").to_pylist()
                    retries = batch.column("retries").to_pylist()
                    for position, record in results.add(texts):
                        summary.count(record, requests[position], Counter(json.loads(retries[position])))
                    bar.update(batch.num_rows)
            except ray.exceptions.RayError as error:
                reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                raise RayRunError(
                    f"the Ray run stopped ({reason}); the records so far are in {results.journal}, "
                    "and --resume continues from them"
                ) from error
        lacking, first = results.missing()
        if lacking:
            raise RayRunError(
                f"{lacking} input lines have no record after the run (first: {first}); the records so far "
                f"are in {results.journal}, and --resume extracts the rest"
            )
        results.finish(before_replace=lambda: setattr(claimed, "started", True))
    summary.wall_s = time.monotonic() - started
    twice = (
        [f"{results.duplicates} records answered a line twice; kept one each"] if results.duplicates else []
    )
    report_summary(summary, summary_json=Path(summary_json) if summary_json else None, notes=twice)
    return summary
