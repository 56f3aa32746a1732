"""What a fine-tuning run may do: the LoRA shape, the batch, the schedule and the time it may take.

One pydantic model, so that the command line, `LocalLoraProvider.finetune`'s `train_kwargs` and a
checkpoint all say the same thing and a setting no run can use fails before any weight is loaded.
Every default is a starting point whose effect is measured, not a tuned value.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

PromptChoice = Literal["compact", "full"]
PROMPTS: Final[tuple[str, ...]] = ("compact", "full")

QWEN2_TARGETS: Final = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""Every linear layer of a Qwen2 block: attention and MLP."""


class FinetuneSettings(BaseModel):
    """A fine-tuning run's settings; `record()` is what the manifest and the checkpoint keep of them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: PromptChoice = "compact"
    """compact: the program's extract step with a one-line instruction and no demos (fewer tokens per
    example, so more examples per hour); full: the program's extract request as it is."""
    rank: int = Field(default=16, ge=1, le=512)
    alpha: float = Field(default=32.0, gt=0)
    """LoRA's scale is alpha / rank, in peft and in llama.cpp alike."""
    target_modules: tuple[str, ...] = QWEN2_TARGETS
    top_layers: int | None = Field(default=None, ge=1)
    """Only the top N transformer blocks carry adapters (None: all); backpropagation then stops below them."""
    learning_rate: float = Field(default=2e-4, gt=0)
    warmup_steps: int = Field(default=10, ge=0)
    epochs: int = Field(default=2, ge=1)
    batch_size: int = Field(default=4, ge=1)
    """Examples per optimizer step; each is run alone (no padding) and their gradients summed."""
    seq_len: int = Field(default=4096, ge=16)
    """Longest example in tokens; a longer one is left out (a cut prompt is one the model never sees)."""
    exhaustive_only: bool = True
    """Train only on episodes whose labels cover every fact: a partial label teaches leaving facts out."""
    max_minutes: float | None = Field(default=None, gt=0)
    """Stop after a checkpoint once this many minutes of this session have passed; a rerun resumes."""
    checkpoint_minutes: float = Field(default=10.0, gt=0)
    seed: int = 0
    dev_size: int | None = Field(default=24, ge=0)
    """Dev episodes whose reply loss is measured before and after training (None: all, 0: none)."""
    max_grad_norm: float = Field(default=1.0, gt=0)

    @field_validator("target_modules")
    @classmethod
    def _some_targets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("at least one target module is needed")
        return value

    def record(self) -> dict[str, Any]:
        """The settings as the manifest records them (the time limits are not part of the result)."""
        return self.model_dump(mode="json", exclude={"max_minutes", "checkpoint_minutes"})

    def training_key(self) -> dict[str, Any]:
        """What a checkpoint must agree on to be resumed: everything that changes the steps taken."""
        return self.model_dump(mode="json", exclude={"max_minutes", "checkpoint_minutes", "dev_size"})
