"""`LocalLoraProvider`: DSPy's fine-tuning interface (`dspy.Provider`, `TrainingJob`) for local models.

DSPy fine-tunes through an LM's provider: `lm.finetune(train_data, train_data_format, train_kwargs)`
starts a `TrainingJob` whose thread calls `provider.finetune(job, model, ...)`, and the model string
it returns becomes the tuned LM (`lm.copy(model=...)`); `dspy.BootstrapFinetune` drives it with the
traces of a program. DSPy's own `LocalProvider` trains Hugging Face weights and serves them with
sglang; this one trains a LoRA adapter on the GGUF file edgewise's local runtime runs (`train`) and
writes it as a GGUF adapter (`gguf_adapter`). The returned model string is the base model's: the
adapter travels with the compiled program, whose folder the runtime reads it from, and the job keeps
what the training did (`LoraTrainingJob.outcome`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TextIO

from dspy.clients.provider import Provider, TrainingJob
from dspy.clients.utils_finetune import TrainDataFormat

from edgewise.local.local_models import ensure_model_file, file_sha256, is_local_model, resolve_local_model
from edgewise.optimize.finetune.data import examples_sha256
from edgewise.optimize.finetune.errors import FinetuneError
from edgewise.optimize.finetune.gguf_adapter import AdapterFile, read_base, write_lora_adapter
from edgewise.optimize.finetune.settings import FinetuneSettings
from edgewise.optimize.finetune.train import BaseWeights, TrainResult, train_lora

ADAPTER_FILE: Final = "adapter.gguf"
"""The adapter's file name, in the training folder and in the program folder."""


def base_weights(model: str, base_file: Path | None = None) -> BaseWeights:
    """The GGUF a model string stands for: a local model's assembled file, or `base_file` itself.

    A local model is named as manifests name it (`local/qwen2.5-coder-0.5b`) and checked by its
    pinned sha256; any other GGUF (`base_file`) is named `gguf:<file name>` and hashed here.
    """
    if base_file is not None:
        return BaseWeights(f"gguf:{base_file.name}", base_file, file_sha256(base_file))
    if not is_local_model(model):
        raise FinetuneError(
            f"fine-tuning trains a local model's weights; {model!r} is not one (use --model local/<name>)"
        )
    spec = resolve_local_model(model)
    return BaseWeights(f"local/{spec.name}", ensure_model_file(spec), spec.sha256)


@dataclass(frozen=True)
class FinetuneOutcome:
    """A finished training session: the base it trained, what it did, and the adapter it wrote."""

    base: BaseWeights
    result: TrainResult
    adapter: AdapterFile
    settings: FinetuneSettings


class LoraTrainingJob(TrainingJob):
    """DSPy's training job, with where the run stands (`status`) and what it left (`outcome`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.outcome: FinetuneOutcome | None = None

    def status(self) -> str:
        if self.outcome is None:
            return "running" if self.running() else "pending"
        return "complete" if self.outcome.result.complete else "stopped"


class LocalLoraProvider(Provider):
    """Trains LoRA adapters of local models; see the module docstring.

    `state_dir` holds the checkpoints and the written adapter; `base_file` trains a GGUF file that is
    not a registered local model; `dev_data` are chat examples scored before and after training.
    """

    def __init__(
        self,
        state_dir: Path,
        *,
        base_file: Path | None = None,
        dev_data: Sequence[dict[str, Any]] = (),
        progress: TextIO | None = sys.stderr,
        fresh: bool = False,
    ) -> None:
        super().__init__()
        self.finetunable = True
        self.TrainingJob = LoraTrainingJob
        self.state_dir = Path(state_dir)
        self.base_file = base_file
        self.dev_data = list(dev_data)
        self.progress = progress
        self.fresh = fresh

    @staticmethod
    def is_provider_model(model: str) -> bool:
        return is_local_model(model)

    def finetune(  # type: ignore[override]  # DSPy's base declares it static; DSPy calls it on the instance
        self,
        job: TrainingJob,
        model: str,
        train_data: list[dict[str, Any]],
        train_data_format: TrainDataFormat | str | None,
        train_kwargs: dict[str, Any] | None = None,
    ) -> str:
        """Train an adapter of `model` on `train_data` (chat examples) with `train_kwargs` (the fields
        of `FinetuneSettings`) and write it; returns `model` (see the module docstring)."""
        if train_data_format not in (TrainDataFormat.CHAT, TrainDataFormat.CHAT.value):
            raise FinetuneError(f"LocalLoraProvider trains on chat examples, not {train_data_format}")
        settings = FinetuneSettings.model_validate(train_kwargs or {})
        base = base_weights(model, self.base_file)
        tensors = read_base(base.path)
        result = train_lora(
            base,
            train_data,
            settings,
            self.state_dir,
            data_sha256=examples_sha256(train_data),
            dev_examples=self.dev_data,
            progress=self.progress,
            fresh=self.fresh,
        )
        adapter = write_lora_adapter(
            self.state_dir / ADAPTER_FILE, result.pairs, alpha=settings.alpha, base=tensors
        )
        outcome = FinetuneOutcome(base, result, adapter, settings)
        if isinstance(job, LoraTrainingJob):
            job.outcome = outcome
        return model
