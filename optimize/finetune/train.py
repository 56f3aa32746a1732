"""LoRA training on a local model's own GGUF weights: bf16, loss on the reply tokens only, resumable.

The base model is the GGUF file llama-server runs, loaded with transformers and dequantized
(`GgufConfig(dequantize=True)`), so the adapter is trained on the weights it will be added to. peft
puts LoRA pairs on `settings.target_modules` (of the top `settings.top_layers` blocks, or all); only
they are trained. Each example is its chat-template prompt and reply, tokenized apart as the server
sees them (the prompt as text, the reply as generated tokens); the loss is the cross-entropy of the
reply tokens alone, and only the reply positions' logits are computed (`logits_to_keep`), which
spares the vocabulary projection of the whole prompt.

A step runs `settings.batch_size` examples one at a time (no padding) and sums their gradients. The
order is a seeded shuffle per epoch, so step N is the same batch in every session: a checkpoint
(adapter, optimizer, step, losses, minutes) is written every `checkpoint_minutes`, at the end, on
`max_minutes` and on Ctrl-C, and a later run on the same base, data and settings continues from it.
CUDA is used when torch sees a GPU.
"""

from __future__ import annotations

import math
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

import numpy as np

from edgewise.optimize.finetune.checkpoint import Checkpoints
from edgewise.optimize.finetune.errors import INSTALL_HINT, FinetuneError
from edgewise.optimize.finetune.settings import FinetuneSettings

if TYPE_CHECKING:
    import torch

_ADAPTER_NAME: Final = "default"


@dataclass(frozen=True)
class BaseWeights:
    """The base model: the name a manifest gives it, its GGUF file and that file's sha256."""

    name: str
    path: Path
    sha256: str


@dataclass
class TrainResult:
    """What a training session did and left: the adapter's matrices and the run's record."""

    pairs: dict[str, tuple[np.ndarray, np.ndarray]]
    """Module name -> (A, B), float32, as peft holds them."""
    steps: int
    total_steps: int
    resumed_from: int
    minutes: float
    """Training minutes of every session of the run together."""
    losses: list[float]
    """Mean reply-token loss of each step, from the run's first step."""
    examples: int
    left_out_too_long: int
    tokens: dict[str, float]
    device: str
    planned_epochs: int
    dev_loss_before: float | None = None
    dev_loss_after: float | None = None
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return self.steps >= self.total_steps

    @property
    def epochs(self) -> float:
        """Epochs done (a fraction when the run stopped early)."""
        return round(self.planned_epochs * self.steps / max(1, self.total_steps), 3)


def require_training_packages() -> None:
    """Fail with the install command when the `finetune` extra is missing."""
    missing = []
    for name in ("torch", "transformers", "peft", "gguf", "accelerate"):
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise FinetuneError(f"fine-tuning needs {', '.join(missing)}: {INSTALL_HINT}")


class _Tokens:
    """One example as token ids: the prompt's, then the reply's (the only ones with a loss)."""

    def __init__(self, prompt: list[int], reply: list[int]) -> None:
        self.prompt = prompt
        self.reply = reply

    @property
    def ids(self) -> list[int]:
        return self.prompt + self.reply

    def __len__(self) -> int:
        return len(self.prompt) + len(self.reply)


def tokenized(tokenizer: Any, example: dict[str, Any]) -> _Tokens:
    """`example`'s prompt as the chat template renders it for generation, and its reply as generated.

    The reply is the template's text after the prompt: the assistant's content and the end-of-turn
    token, which teaches the model where to stop (whitespace after it is left out).
    """
    messages = example["messages"]
    if not messages or messages[-1].get("role") != "assistant":
        raise FinetuneError("a training example ends with the assistant's reply")
    prompt = tokenizer.apply_chat_template(messages[:-1], tokenize=False, add_generation_prompt=True)
    whole = tokenizer.apply_chat_template(messages, tokenize=False)
    if not whole.startswith(prompt):
        raise FinetuneError("the chat template renders the prompt differently with the reply after it")
    reply = whole[len(prompt) :].rstrip()

    def encode(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    return _Tokens(encode(prompt), encode(reply))


def load_base(base: BaseWeights, device: str) -> tuple[Any, Any]:
    """The tokenizer and the dequantized bf16 model of a GGUF file."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is in the file; never ask a hub
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    folder, name = str(base.path.parent), base.path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, dtype=torch.bfloat16, quantization_config=GgufConfig(dequantize=True)
    )
    model.config.use_cache = False
    return tokenizer, model.to(device)


def with_lora(model: Any, settings: FinetuneSettings) -> Any:
    """`model` with LoRA pairs on the settings' target modules; everything else frozen."""
    import torch
    from peft import LoraConfig, get_peft_model

    blocks = int(model.config.num_hidden_layers)
    top = settings.top_layers
    if top is not None and top > blocks:
        raise FinetuneError(f"top_layers {top}: the model has {blocks} blocks")
    config = LoraConfig(
        r=settings.rank,
        lora_alpha=settings.alpha,
        target_modules=list(settings.target_modules),
        lora_dropout=0.0,
        bias="none",
        task_type="CAUSAL_LM",
        layers_to_transform=list(range(blocks - top, blocks)) if top is not None else None,
        layers_pattern="layers" if top is not None else None,
    )
    torch.manual_seed(settings.seed)  # A's initial values; B starts at zero
    return get_peft_model(model, config)


def reply_loss(model: Any, tokens: _Tokens, device: str) -> torch.Tensor:
    """Summed cross-entropy of the reply tokens; logits only for the positions that predict them."""
    import torch
    from torch.nn import functional

    ids = torch.tensor([tokens.ids], device=device)
    keep = len(tokens.reply) + 1
    logits = model(input_ids=ids, logits_to_keep=keep).logits[0, :-1].float()
    targets = torch.tensor(tokens.reply, device=device)
    return functional.cross_entropy(logits, targets, reduction="sum")


def mean_loss(model: Any, examples: Sequence[_Tokens], device: str) -> float | None:
    """Mean reply-token loss over `examples` (None: no examples)."""
    import torch

    if not examples:
        return None
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for tokens in examples:
            total += float(reply_loss(model, tokens, device))
            count += len(tokens.reply)
    return total / max(1, count)


def learning_rate(settings: FinetuneSettings, step: int, total: int) -> float:
    """Linear warm-up over `warmup_steps`, then linear decay to zero at the last step: a function of
    the step alone, so a resumed run needs no scheduler state."""
    warm = min(1.0, (step + 1) / (settings.warmup_steps + 1))
    return settings.learning_rate * warm * max(0.0, 1.0 - step / max(1, total))


def batch_order(count: int, settings: FinetuneSettings) -> list[list[int]]:
    """Every step's example indices, epoch after epoch, each epoch a seeded shuffle."""
    steps: list[list[int]] = []
    for epoch in range(settings.epochs):
        order = random.Random(f"{settings.seed}:{epoch}").sample(range(count), count)
        steps.extend(
            order[start : start + settings.batch_size] for start in range(0, count, settings.batch_size)
        )
    return steps


def lora_pairs(model: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each adapted module's (A, B) as float32 arrays, by module name."""
    from peft.tuners.lora import LoraLayer

    pairs = {}
    for name, module in model.named_modules():
        if isinstance(module, LoraLayer) and _ADAPTER_NAME in module.lora_A:
            lora_a = module.lora_A[_ADAPTER_NAME].weight.detach().float().cpu().numpy()
            lora_b = module.lora_B[_ADAPTER_NAME].weight.detach().float().cpu().numpy()
            pairs[name] = (lora_a, lora_b)
    return pairs


def train_lora(
    base: BaseWeights,
    examples: Sequence[dict[str, Any]],
    settings: FinetuneSettings,
    state_dir: Path,
    *,
    data_sha256: str,
    dev_examples: Sequence[dict[str, Any]] = (),
    progress: TextIO | None = sys.stderr,
    fresh: bool = False,
) -> TrainResult:
    """Train (or go on training) a LoRA adapter of `base` on chat `examples`; see the module docstring.

    `state_dir` holds the checkpoints; `data_sha256` is the examples' fingerprint, part of what a
    checkpoint must match to be resumed; `fresh` discards a checkpoint instead. `dev_examples` are
    scored (mean reply-token loss) before the first step and after the last.
    """
    require_training_packages()
    import peft
    import torch
    import transformers
    from peft import get_peft_model_state_dict, set_peft_model_state_dict
    from tqdm import tqdm

    started = time.monotonic()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    checkpoints = Checkpoints(
        state_dir, {**settings.training_key(), "base_sha256": base.sha256, "data_sha256": data_sha256}
    )
    if fresh:
        checkpoints.clear()
    saved = checkpoints.read()
    tokenizer, model = load_base(base, device)
    all_tokens = [tokenized(tokenizer, example) for example in examples]
    kept = [tokens for tokens in all_tokens if len(tokens) <= settings.seq_len]
    if not kept:
        raise FinetuneError(f"no training example fits --seq-len {settings.seq_len} tokens")
    dev_tokens = [t for t in (tokenized(tokenizer, e) for e in dev_examples) if len(t) <= settings.seq_len]
    model = with_lora(model, settings)
    trainable = [parameter for parameter in model.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=settings.learning_rate, weight_decay=0.0)
    steps = batch_order(len(kept), settings)
    step, losses, prior_s, dev_before = 0, [], 0.0, None
    if saved is not None:
        set_peft_model_state_dict(model, saved["adapter"])
        optimizer.load_state_dict(saved["optimizer"])
        step, losses, prior_s = int(saved["step"]), list(saved["losses"]), float(saved["seconds"])
        dev_before = saved.get("dev_loss_before")
    else:
        dev_before = mean_loss(model, dev_tokens, device)
    resumed_from = step

    def save() -> None:
        checkpoints.write(
            get_peft_model_state_dict(model, save_embedding_layers=False),
            optimizer.state_dict(),
            {
                "step": step,
                "total_steps": len(steps),
                "losses": losses,
                "seconds": prior_s + time.monotonic() - started,
                "dev_loss_before": dev_before,
            },
        )

    bar = tqdm(
        total=len(steps), initial=step, desc="finetune", unit="step", file=progress, disable=progress is None
    )
    last_save = time.monotonic()
    try:
        while step < len(steps):
            model.train()
            batch = [kept[index] for index in steps[step]]
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(settings, step, len(steps))
            optimizer.zero_grad(set_to_none=True)
            reply_tokens = sum(len(tokens.reply) for tokens in batch)
            total = 0.0
            for tokens in batch:
                loss = reply_loss(model, tokens, device) / reply_tokens
                loss.backward()
                total += float(loss.detach())
            if not math.isfinite(total):
                raise FinetuneError(f"step {step + 1}: the loss is {total}; lower --lr")
            torch.nn.utils.clip_grad_norm_(trainable, settings.max_grad_norm)
            optimizer.step()
            losses.append(round(total, 5))
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{sum(losses[-10:]) / len(losses[-10:]):.3f}", **_peak_memory())
            now = time.monotonic()
            out_of_time = settings.max_minutes is not None and now - started >= settings.max_minutes * 60
            if step == len(steps) or out_of_time or now - last_save >= settings.checkpoint_minutes * 60:
                save()
                last_save = now
            if out_of_time:
                break
    except KeyboardInterrupt:
        save()
        raise
    finally:
        bar.close()
    dev_after = mean_loss(model, dev_tokens, device) if step >= len(steps) else None
    return TrainResult(
        pairs=lora_pairs(model),
        steps=step,
        total_steps=len(steps),
        resumed_from=resumed_from,
        minutes=round((prior_s + time.monotonic() - started) / 60, 2),
        losses=losses,
        examples=len(kept),
        left_out_too_long=len(all_tokens) - len(kept),
        tokens=_token_stats(kept),
        device=device,
        planned_epochs=settings.epochs,
        dev_loss_before=dev_before,
        dev_loss_after=dev_after,
        versions={
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "peft": peft.__version__,
        },
    )


def _peak_memory() -> dict[str, str]:
    """The process's peak resident memory for the progress bar, where the platform reports it.

    A long run on a CPU grows over its steps (docs/results.md measures it; its cause is not settled).
    Seen on the bar, it can be stopped and resumed from its checkpoint (a fresh process) before the
    kernel kills it.
    """
    try:
        import resource
    except ImportError:  # Windows
        return {}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return {"peak": f"{peak / (2**30 if sys.platform == 'darwin' else 2**20):.1f}GB"}


def _token_stats(examples: Sequence[_Tokens]) -> dict[str, float]:
    """Mean prompt and reply tokens per example and the longest example: what a step's time follows."""
    count = max(1, len(examples))
    return {
        "prompt_mean": round(sum(len(t.prompt) for t in examples) / count, 1),
        "reply_mean": round(sum(len(t.reply) for t in examples) / count, 1),
        "longest": max((len(t) for t in examples), default=0),
    }
