"""A fine-tuning run: examples from the train split, a LoRA adapter trained on them, the program saved.

The program is the model's default program (or `--program`), as it is or with the compact prompt
(`data.training_program`); its requests for the train episodes, with the gold edges as replies, are
the training data, and a sample of dev episodes the held-out loss. Training goes through DSPy's
fine-tuning interface (`LocalLoraProvider.finetune` with a `TrainingJob`), run in this thread so that
Ctrl-C reaches it and leaves a checkpoint. The result is a program folder like every optimizer's,
with the adapter GGUF beside `program.json` and named in the manifest with its sha256 and base model;
the checkpoints live beside it in `<out>.training/`, since the program folder is replaced whole on
every save. A run stopped by `max_minutes` saves what it has (status `interrupted`) and the next run
with the same arguments resumes it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from dspy.clients.utils_finetune import TrainDataFormat

from edgewise.data.sampling import stratified_sample
from edgewise.modules.extractor import EdgeExtractor
from edgewise.optimize.finetune.data import TrainingData, training_data, training_program
from edgewise.optimize.finetune.errors import FinetuneError
from edgewise.optimize.finetune.provider import ADAPTER_FILE, FinetuneOutcome, LocalLoraProvider, base_weights
from edgewise.optimize.finetune.settings import FinetuneSettings
from edgewise.optimize.splits import Dataset, Split, load_split
from edgewise.programs.artifact import Manifest, new_manifest, save
from edgewise.programs.lora_adapter import LoraAdapterRecord
from edgewise.programs.names import choose_program, resolve_program

OPTIMIZER = "finetune"
DEFAULT_SETTINGS = FinetuneSettings()


def training_dir(out: Path) -> Path:
    """Where a run keeps its checkpoints and adapter: beside the program folder, not in it."""
    return out.with_name(f"{out.name}.training")


@dataclass(frozen=True)
class FinetuneReport:
    """What a run did: the program folder, its manifest, and the training outcome."""

    out_dir: Path
    manifest: Manifest
    outcome: FinetuneOutcome

    def summary(self) -> str:
        result = self.outcome.result
        adapter = self.outcome.adapter
        lines = [
            (
                f"finetune: {result.steps}/{result.total_steps} steps ({result.epochs} epochs) on "
                f"{result.examples} examples in {result.minutes} min on {result.device}"
            ),
            f"loss: first step {result.losses[0]:.3f}, last step {result.losses[-1]:.3f}"
            if result.losses
            else "loss: no step taken",
        ]
        if result.dev_loss_before is not None:
            after = f"{result.dev_loss_after:.3f}" if result.dev_loss_after is not None else "not measured"
            lines.append(f"dev reply loss: before {result.dev_loss_before:.3f}, after {after}")
        lines.append(f"adapter: {self.out_dir / ADAPTER_FILE} ({adapter.size_bytes / 1e6:.1f} MB)")
        if not result.complete:
            lines.append("stopped before the last step: run the same command again to resume")
        return "\n".join(lines)


def finetune(
    *,
    model: str,
    train: Dataset,
    dev: Dataset,
    out: str | Path,
    settings: FinetuneSettings = DEFAULT_SETTINGS,
    program: str | None = None,
    base_file: Path | None = None,
    progress: TextIO | None = sys.stderr,
    fresh: bool = False,
) -> FinetuneReport:
    """Train a LoRA adapter of `model` for `program` (default: the model's) and save the tuned program.

    `model` is a local model (`local/qwen2.5-coder-0.5b`); `base_file` trains another GGUF file
    instead (named `gguf:<file>` in the manifest; the local runtime serves only registered models).
    `fresh` discards the checkpoints of an earlier run into `out`.
    """
    out_dir = Path(out)
    base_weights(model, base_file)  # an unknown or hosted model fails here, before any example is made
    choice = choose_program(program, model)
    start = resolve_program(choice.name)
    if not isinstance(start, EdgeExtractor):
        raise FinetuneError(f"fine-tuning trains an edgewise program's extract step; {program!r} is not one")
    tuned = training_program(start, settings.prompt)
    train_split, dev_split = load_split(train, "train"), load_split(dev, "dev")
    train_data = training_data(tuned, train_split.episodes, exhaustive_only=settings.exhaustive_only)
    if not train_data.examples:
        raise FinetuneError(f"no training example in {train_split.name}")
    dev_data = training_data(
        tuned, _dev_sample(dev_split, settings), exhaustive_only=settings.exhaustive_only
    )
    provider = LocalLoraProvider(
        training_dir(out_dir), base_file=base_file, dev_data=dev_data.examples, progress=progress, fresh=fresh
    )
    job = provider.TrainingJob(
        model=model,
        train_data=train_data.examples,
        train_data_format=TrainDataFormat.CHAT,
        train_kwargs=settings.model_dump(),
    )
    provider.finetune(job, model, job.train_data, job.train_data_format, job.train_kwargs)
    outcome = job.outcome
    assert outcome is not None
    manifest = _manifest(tuned, outcome, train_split, dev_split, train_data, dev_data, choice.name)
    save(tuned, out_dir, manifest, {ADAPTER_FILE: outcome.adapter.path})
    return FinetuneReport(out_dir, manifest, outcome)


def _dev_sample(dev: Split, settings: FinetuneSettings) -> list[Any]:
    if settings.dev_size is None:
        return dev.episodes
    return stratified_sample(dev.episodes, settings.dev_size, seed=settings.seed)


def _manifest(
    tuned: EdgeExtractor,
    outcome: FinetuneOutcome,
    train: Split,
    dev: Split,
    train_data: TrainingData,
    dev_data: TrainingData,
    program: str,
) -> Manifest:
    """The manifest: the program's shape (what `load` rebuilds), the settings, the data and the adapter."""
    result, adapter, base = outcome.result, outcome.adapter, outcome.base
    return new_manifest(
        tuned,
        task_model=base.name,
        optimizer=OPTIMIZER,
        settings={
            "reflexion_rounds": tuned.max_reflexion_rounds,
            "closed_types": tuned.closed_types,
            "output_shape": tuned.output_shape,
            "program_options": tuned.options.model_dump(),
            "program": program,
            **outcome.settings.record(),
        },
        data_hashes={"train": train.sha256, "dev": dev.sha256},
        status="complete" if result.complete else "interrupted",
        adapter=LoraAdapterRecord(
            file=ADAPTER_FILE,
            sha256=adapter.sha256,
            size_bytes=adapter.size_bytes,
            base_model=base.name,
            base_sha256=base.sha256,
            rank=outcome.settings.rank,
            alpha=outcome.settings.alpha,
            tensors=len(adapter.tensors),
        ),
        notes={
            "training": {
                "train": {"file": train.name, **train_data.summary},
                "dev": {"file": dev.name, **dev_data.summary},
                "examples_used": result.examples,
                "left_out_too_long": result.left_out_too_long,
                "tokens": result.tokens,
                "steps": result.steps,
                "total_steps": result.total_steps,
                "epochs": result.epochs,
                "minutes": result.minutes,
                "loss_first_step": result.losses[0] if result.losses else None,
                "loss_last_steps": _tail_mean(result.losses),
                "dev_loss_before": result.dev_loss_before,
                "dev_loss_after": result.dev_loss_after,
                "device": result.device,
                "versions": result.versions,
            }
        },
    )


def _tail_mean(losses: list[float], count: int = 10) -> float | None:
    """Mean loss of the last `count` steps (one step's loss is noisy)."""
    tail = losses[-count:]
    return round(sum(tail) / len(tail), 5) if tail else None
