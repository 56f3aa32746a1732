"""A compiled program's LoRA adapter: the manifest's record of it, and the checked file beside it.

A fine-tuned program folder holds, besides `program.json` and `manifest.json`, the adapter GGUF its
manifest names with its sha256 and the base model it was trained on (`LoraAdapterRecord`). Loading
checks the file against that sha256 (`verified_adapter`), so a changed or damaged adapter is refused
like a changed program; serving checks the model (`LoraAdapter.for_model`), since an adapter added
to weights it was not trained on computes nonsense without any error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from edgewise.local.local_models import ServedWeights, file_sha256, is_local_model, resolve_local_model
from edgewise.modules.extractor import ADAPTER_ATTRIBUTE
from edgewise.programs.artifact_errors import ArtifactError

_SHA256: Final = r"^[0-9a-f]{64}$"


class LoraAdapterRecord(BaseModel):
    """The manifest's `adapter`: which file, its sha256, and the base model it belongs to."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.gguf$")
    """A file name in the program folder (never a path)."""
    sha256: str = Field(pattern=_SHA256)
    size_bytes: int = Field(ge=1)
    base_model: str
    """The model it was trained on, as manifests name models (`local/qwen2.5-coder-0.5b`)."""
    base_sha256: str = Field(pattern=_SHA256)
    """The sha256 of the base model's GGUF file."""
    rank: int = Field(ge=1)
    alpha: float = Field(gt=0)
    tensors: int = Field(ge=1)
    """Adapted weight matrices (each a lora_a / lora_b pair in the file)."""


@dataclass(frozen=True)
class LoraAdapter:
    """A program's adapter file, checked against its record, ready to be served with its base model."""

    path: Path
    record: LoraAdapterRecord

    def for_model(self, model: str) -> Path:
        """The file to start `model`'s server with; refused unless `model` is the base it was trained on."""
        if is_local_model(model):
            spec = resolve_local_model(model)
            name, sha256 = f"local/{spec.name}", spec.sha256
        else:
            name, sha256 = model, None
        if name != self.record.base_model or (sha256 is not None and sha256 != self.record.base_sha256):
            raise ArtifactError(
                f"{self.path.parent} carries a LoRA adapter trained on {self.record.base_model}; it cannot run "
                f"on {name}: use --model {self.record.base_model}, or a program without an adapter"
            )
        return self.path

    def check_served(self, lm: object) -> None:
        """Refuse to run on a local server edgewise started without this adapter (or on another model).

        The tuned program's requests are valid on the base weights too, so nothing else would notice:
        its replies would be the base model's. An LM edgewise did not start (`served_weights` None: a
        server of yours, a test's fake) cannot be checked, and is the caller's to match.
        """
        served: ServedWeights | None = getattr(lm, "served_weights", None)
        if served is None or (served.model, served.adapter_sha256) == (
            self.record.base_model,
            self.record.sha256,
        ):
            return
        raise ArtifactError(
            f"{self.path.parent} is fine-tuned: it runs only with its LoRA adapter on {self.record.base_model}, "
            f"and this LM serves {served.model} "
            + ("without it" if served.adapter_sha256 is None else "with another adapter")
            + "; open the LM with LMConfig(model=..., lora_adapter=program_adapter(program, model)) "
            "(edgewise extract and serve do this themselves)"
        )


def verified_adapter(directory: Path, record: LoraAdapterRecord) -> LoraAdapter:
    """The adapter file `record` names in `directory`, refused when it is missing or its sha256 differs."""
    path = directory / record.file
    if not path.is_file():
        raise ArtifactError(
            f"{directory} is a fine-tuned program whose adapter file {record.file} is missing"
        )
    if file_sha256(path) != record.sha256:
        raise ArtifactError(
            f"{path}: its sha256 is not the one the manifest records; the adapter was changed or damaged "
            "(train it again with `edgewise optimize --optimizer finetune`)"
        )
    return LoraAdapter(path, record)


def program_adapter(program: object, model: str) -> Path | None:
    """The adapter file `program` must be served with on `model`; None when it carries none.

    A fine-tuned program run without its adapter is a different program, and one run on another
    model computes nonsense, so both are refused here (`LoraAdapter.for_model`) rather than run.
    """
    adapter = getattr(program, ADAPTER_ATTRIBUTE, None)
    return adapter.for_model(model) if isinstance(adapter, LoraAdapter) else None
