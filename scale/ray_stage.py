"""A compiled edgewise program as a Ray Data stage: a dataset of episodes in, one output record per row out.

    import ray, edgewise
    from edgewise.scale.ray_stage import extract
    episodes = ray.data.read_parquet("s3://bucket/episodes/")       # the seed's fields as columns
    records = extract(episodes, program="runs/prog", lm=edgewise.LMConfig(model="openai/qwen2.5"),
                      concurrency=8, api_bases=["http://vllm-0:8000/v1", "http://vllm-1:8000/v1"])
    records.write_parquet("s3://bucket/edges/")

Ray schedules, retries and moves the data; edgewise adds no scheduler of its own. The stage is a
`map_batches` over a fixed pool of actors (`ActorPoolStrategy`). Each actor loads the program once,
builds its own LM, and runs every row through `edgewise.runtime.episode_runner`, the per-line step of
`edgewise extract`, so a row means what a JSONL line means there: an input error is an error record
without a model call, a failed episode an error record with its reason, ids are kept.

What reaches the workers is the model's settings, never a key: an actor reads `EDGEWISE_API_KEY`
(or the provider's own variable) from its own environment, so no key sits in a task, the object
store or Ray's logs. The program is resolved once, on the driver, and that program object is what
every actor gets (Ray serializes it with the actor's arguments): the actors run exactly what the
driver checked, and a worker needs no access to the driver's disk. Several model servers
(`api_bases`) are spread over the actors: actor i talks to `api_bases[i % len(api_bases)]`.

A killed actor is restarted and its unfinished batches run again (Ray Data's actor pools default
to `max_restarts=-1` and `max_task_retries=-1`); a batch's rows come back only when the whole batch
is done, so a retried batch yields each row once. Model-request faults (429, 5xx, dropped connections) are retried inside the
actor by the same retry layer as everywhere else.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any, Final

import dspy

try:
    import pyarrow as pa
    import ray
    import ray.data
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "edgewise's Ray Data stage needs Ray: pip install 'edgewise[ray]' (ray[data] 2.40 or later)"
    ) from error

from edgewise.domain.errors import UsageError
from edgewise.modules.program_io import input_model
from edgewise.programs.lora_adapter import program_adapter
from edgewise.programs.names import ProgramChoice, choose_program, resolve_program
from edgewise.runtime.episode_runner import LineRecord, extract_records
from edgewise.runtime.jsonl import encode_record
from edgewise.runtime.lm import API_KEY_ENV, LMConfig, build_lm, lm_context
from edgewise.runtime.reply_cache import use_reply_cache
from edgewise.scale.rows import SOURCE_COLUMN, input_line

# The variable an actor reads its key from (LMConfig.from_env); the provider's own one works as well.

OUTPUT_SCHEMA: Final = pa.schema(
    [
        ("id", pa.string()),  # the input's id, as text (null when the row has none)
        ("line", pa.int64()),  # the input's line column (null when it has none)
        ("source", pa.string()),  # the input's source column (null when it has none)
        (
            "error",
            pa.string(),
        ),  # the error's reason ("invalid_input", "server_error", ...); null for a result
        (
            "record",
            pa.string(),
        ),  # the output record as one JSON line, exactly as `edgewise extract` writes it
        ("requests", pa.int64()),  # model requests the row took, retries included
        ("retries", pa.string()),  # JSON object: retried model requests by fault reason
    ]
)
DEFAULT_CONCURRENCY: Final = 2
DEFAULT_WORKERS: Final = 4
# An actor mostly waits on its model server, so it asks Ray for a fraction of a CPU.
DEFAULT_ACTOR_CPUS: Final = 0.25
# Rows per actor call: enough for `workers` threads to stay busy, few enough that a killed actor
# repeats little and results come back often.
_MIN_BATCH_ROWS: Final = 32
_BATCH_ROWS_PER_WORKER: Final = 4


def resolve_once(
    program: str | dspy.Module | None,
    lm: LMConfig,
    *,
    reflexion_rounds: int | None = None,
    open_types: bool = False,
    find_entities: bool = False,
) -> tuple[dspy.Module, ProgramChoice | None]:
    """The program the actors run, resolved here once, and the choice behind a name (None for an object).

    A name or folder is resolved as `edgewise extract --program` resolves it (left out: the program
    `choose_program` picks for `lm`'s model). A program object is taken as it is: `reflexion_rounds`,
    `open_types` and `find_entities` apply to a name only, so with an object they are refused (set them on the object
    instead). A program that needs a LoRA adapter
    is refused here (`ArtifactError`, from `program_adapter`): the adapter runs only on the local model
    edgewise starts, which Ray actors never do.
    """
    choice = None
    if isinstance(program, dspy.Module):
        if reflexion_rounds is not None or open_types or find_entities:
            raise UsageError(
                "reflexion_rounds, open_types and find_entities apply when the program is resolved from "
                "a name; set them on the program object instead (program.with_entity_step())"
            )
        resolved = program
    else:
        choice = choose_program(program, lm.model)
        resolved = resolve_program(
            choice.name, reflexion_rounds=reflexion_rounds, open_types=open_types, find_entities=find_entities
        )
    program_adapter(resolved, lm.model)
    return resolved, choice


def lm_settings(config: LMConfig, concurrency: int) -> dict[str, Any]:
    """The model settings an actor gets: everything but the key; `max_rps` shared out over the actors."""
    settings = config.model_dump(exclude={"api_key"})
    if config.max_rps:
        settings["max_rps"] = config.max_rps / concurrency
    return settings


@ray.remote(num_cpus=0)
class EndpointCounter:
    """Hands each starting actor the next number, so that actor i takes api_bases[i % n]."""

    def __init__(self) -> None:
        self.started = 0

    def next(self) -> int:
        number = self.started
        self.started += 1
        return number


class EpisodeStage:
    """The callable class behind `extract`: one per actor, holding the program and its LM."""

    def __init__(
        self,
        *,
        program: str | dspy.Module,
        settings: dict[str, Any],
        api_bases: Sequence[str],
        endpoint_counter: Any,
        episode_timeout_s: float | None,
        workers: int,
        reflexion_rounds: int | None = None,
        open_types: bool = False,
    ) -> None:
        """`program` is the driver's resolved program (what `extract` passes), or a name to resolve here
        (with `reflexion_rounds` and `open_types`) for a stage built by hand."""
        if isinstance(program, dspy.Module):
            self.program = program
        else:
            self.program = resolve_program(program, reflexion_rounds=reflexion_rounds, open_types=open_types)
        if api_bases:
            number = ray.get(endpoint_counter.next.remote()) if endpoint_counter is not None else 0
            settings = {**settings, "api_base": api_bases[number % len(api_bases)]}
        # The key comes from this worker's environment (EDGEWISE_API_KEY), never from the task.
        self.config = LMConfig.from_env(**settings)
        if self.config.cache:
            use_reply_cache()  # an actor is a process of its own, serving batches for as long as Ray runs
        self.lm = build_lm(self.config)
        self.api_base = self.config.api_base
        self.episode_timeout_s = episode_timeout_s
        self.workers = workers

    def __call__(self, batch: pa.Table) -> pa.Table:
        rows = batch.to_pylist()
        model = input_model(self.program)
        items = [input_line(row, model=model) for row in rows]
        with lm_context(self.lm):
            done = list(
                extract_records(
                    self.program,
                    items,
                    config=self.config,
                    timeout_s=self.episode_timeout_s,
                    workers=self.workers,
                )
            )
        return output_table(done, [row.get(SOURCE_COLUMN) for row in rows])


def output_table(done: Sequence[LineRecord], sources: Sequence[str | None]) -> pa.Table:
    """The stage's rows for one batch (see OUTPUT_SCHEMA); a row's source is kept in its record too."""
    columns: dict[str, list[Any]] = {name: [] for name in OUTPUT_SCHEMA.names}
    for line, source in zip(done, sources, strict=True):
        record = line.record
        if source is not None:
            record = {"id": record["id"], SOURCE_COLUMN: source, **record}
        columns["id"].append(line.item.id)
        columns["line"].append(line.item.line)
        columns["source"].append(source)
        columns["error"].append(record["error"]["reason"] if "error" in record else None)
        columns["record"].append(encode_record(record).decode("utf-8").rstrip("\n"))
        columns["requests"].append(line.requests)
        columns["retries"].append(json.dumps(dict(sorted(line.retries.items()))))
    return pa.table(columns, schema=OUTPUT_SCHEMA)


def batch_rows(workers: int) -> int:
    """The default rows per batch for `workers` episodes at a time in an actor."""
    return max(_MIN_BATCH_ROWS, _BATCH_ROWS_PER_WORKER * workers)


def check_settings(lm: LMConfig, *, concurrency: int, workers: int, api_bases: Sequence[str]) -> None:
    """Refuse, before Ray runs anything, what the actors could not do."""
    if concurrency < 1:
        raise UsageError(f"concurrency must be >= 1, got {concurrency}")
    if workers < 1:
        raise UsageError(f"workers must be >= 1, got {workers}")
    if any(not base for base in api_bases):
        raise UsageError("api_bases must be non-empty URLs")
    if lm.is_local:
        raise UsageError(
            "the bundled local model does not run inside Ray actors: give the model servers' URLs "
            "(api_bases / --api-base, e.g. vLLM or llama.cpp servers) or a hosted model"
        )
    if lm.api_key and lm.api_key != os.environ.get(API_KEY_ENV):
        raise UsageError(
            f"an API key is never sent to Ray workers: set {API_KEY_ENV} (or the provider's own "
            "variable) in the workers' environment and leave LMConfig.api_key unset"
        )


def extract(
    dataset: ray.data.Dataset,
    *,
    program: str | dspy.Module | None = None,
    lm: LMConfig | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    api_bases: Sequence[str] = (),
    workers: int = DEFAULT_WORKERS,
    episode_timeout_s: float | None = None,
    reflexion_rounds: int | None = None,
    open_types: bool = False,
    find_entities: bool = False,
    batch_size: int | None = None,
    num_cpus: float = DEFAULT_ACTOR_CPUS,
) -> ray.data.Dataset:
    """`dataset`'s rows extracted by `program` on `concurrency` actors: one output row per input row.

    `program` is a name or folder as `edgewise extract --program` takes (left out, the shipped program
    compiled for `lm`'s model runs, else `default`: `edgewise.programs.names.choose_program`), or a
    program object. It is resolved here once (`resolve_once`; `reflexion_rounds` and `open_types`
    apply to a name), so a bad program fails on the driver before any actor starts, and the actors
    get the resolved program itself.

    A row is an episode in the seed's JSON shape (`episodeContent`, `entities`, `referenceTime`, ...,
    and an optional `id`) as `ray.data.read_parquet` or `read_json` gives it, or a `raw` column
    holding one JSONL line (bytes or text). Optional `line` and `source` columns say where the row
    came from; they are kept in its record. The output rows follow `OUTPUT_SCHEMA`; their order is
    Ray's (set `DataContext.execution_options.preserve_order` to keep the input's). An actor takes
    one block at a time, so give the dataset at least `concurrency` blocks (`override_num_blocks=`
    on the read, or `repartition`); `batch_size` rows (default `batch_rows(workers)`) go to each call.

    `lm` is the model's settings (default `LMConfig.from_env()`); its key stays on the driver, each
    actor reads its own from its environment. `api_bases` spread several model servers over the
    actors (default: `lm.api_base` for all). `workers` episodes run at once inside each actor, and
    `lm.max_rps` is shared out over the actors.
    """
    config = lm or LMConfig.from_env()
    check_settings(config, concurrency=concurrency, workers=workers, api_bases=api_bases)
    resolved, _ = resolve_once(
        program, config, reflexion_rounds=reflexion_rounds, open_types=open_types, find_entities=find_entities
    )
    bases = list(api_bases)
    # What every actor is constructed with (what Ray serializes): the program and settings, never a key.
    arguments = {
        "program": resolved,
        "settings": lm_settings(config, concurrency),
        "api_bases": bases,
        "endpoint_counter": EndpointCounter.remote() if len(bases) > 1 else None,
        "episode_timeout_s": episode_timeout_s,
        "workers": workers,
    }
    return dataset.map_batches(
        EpisodeStage,
        batch_size=batch_size or batch_rows(workers),
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=concurrency),
        fn_constructor_kwargs=arguments,
        num_cpus=num_cpus,
        # Fault tolerance is Ray Data's default for an actor pool (`max_restarts=-1`: a killed actor
        # comes back; `max_task_retries=-1`: the batches it held run again), so nothing is passed here.
    )
