"""A LoRA adapter as the GGUF file llama.cpp's `llama-server --lora FILE` loads, written with `gguf`.

The file holds the adapter's metadata (`general.type` "adapter", `general.architecture` the base
model's, `adapter.type` "lora", `adapter.lora.alpha`) and, for each adapted weight of the base model,
a pair `<base tensor name>.lora_a` / `.lora_b` named as the base GGUF names that weight
(`blk.3.attn_q.weight.lora_a`). The matrices are peft's as they are: A is (rank, in) and B is
(out, rank) in numpy order, which GGUF stores as ne = [in, rank] and [rank, out]; llama.cpp checks
that A's ne[0] and B's ne[1] are the base tensor's and adds (alpha / rank) * B @ A x to its output.

Every pair is checked against the base GGUF before anything is written: a name the base does not
have, or a shape that does not fit its tensor, is an error here rather than a server that will not start.
Only bases whose GGUF weights are laid out as the Hugging Face ones are accepted (`qwen2`): for
`llama` the converter permutes the query and key rows, which B would have to follow.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Final, NamedTuple

import numpy as np

from edgewise.local.local_models import file_sha256
from edgewise.optimize.finetune.errors import FinetuneError

SUPPORTED_ARCHITECTURES: Final = ("qwen2",)
_PEFT_PREFIX: Final = "base_model.model."


class BaseTensors(NamedTuple):
    """What the adapter must fit: the base GGUF's architecture, block count and weight shapes."""

    architecture: str
    blocks: int
    shapes: dict[str, tuple[int, ...]]
    """Tensor name -> its numpy shape (GGUF's ne reversed): (out, in) for a weight matrix."""


class AdapterFile(NamedTuple):
    """A written adapter: where, its sha256 and size, and the base tensors it adapts."""

    path: Path
    sha256: str
    size_bytes: int
    tensors: tuple[str, ...]


def read_base(base: Path) -> BaseTensors:
    """The architecture, block count and tensor shapes of a base GGUF (its data is not read)."""
    import gguf

    reader = gguf.GGUFReader(str(base))
    architecture = _string(reader, "general.architecture")
    if architecture not in SUPPORTED_ARCHITECTURES:
        raise FinetuneError(
            f"{base.name}: a {architecture} model; adapters are written for {', '.join(SUPPORTED_ARCHITECTURES)} "
            "models only"
        )
    blocks = int(reader.fields[f"{architecture}.block_count"].parts[-1][0])
    shapes = {tensor.name: tuple(int(n) for n in reversed(tensor.shape)) for tensor in reader.tensors}
    return BaseTensors(architecture, blocks, shapes)


def _string(reader: object, key: str) -> str:
    field = reader.fields.get(key)  # type: ignore[attr-defined]
    if field is None:
        raise FinetuneError(f"the base GGUF has no {key}")
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def gguf_tensor_name(module: str, base: BaseTensors) -> str:
    """The base GGUF's name for the weight of a Hugging Face module (`model.layers.3.self_attn.q_proj`
    -> `blk.3.attn_q.weight`), peft's `base_model.model.` prefix allowed."""
    import gguf

    arch = next(key for key, name in gguf.MODEL_ARCH_NAMES.items() if name == base.architecture)
    mapped = gguf.get_tensor_name_map(arch, base.blocks).get_name(module.removeprefix(_PEFT_PREFIX))
    if mapped is None:
        raise FinetuneError(f"no {base.architecture} GGUF tensor for the module {module}")
    return f"{mapped}.weight"


def write_lora_adapter(
    path: Path, pairs: Mapping[str, tuple[np.ndarray, np.ndarray]], *, alpha: float, base: BaseTensors
) -> AdapterFile:
    """Write `pairs` (module name -> (A, B)) as a LoRA GGUF at `path`, atomically; see the module docstring."""
    import gguf

    if not pairs:
        raise FinetuneError("the adapter has no tensors")
    tensors: list[tuple[str, np.ndarray, np.ndarray]] = []
    for module, (lora_a, lora_b) in sorted(pairs.items()):
        name = gguf_tensor_name(module, base)
        shape = base.shapes.get(name)
        if shape is None:
            raise FinetuneError(f"the base model has no tensor {name} (for {module})")
        out_features, in_features = shape
        rank = lora_a.shape[0]
        if lora_a.shape != (rank, in_features) or lora_b.shape != (out_features, rank):
            raise FinetuneError(
                f"{module}: LoRA shapes A {lora_a.shape} and B {lora_b.shape} do not fit {name} {shape}"
            )
        tensors.append((name, lora_a, lora_b))
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(handle)
    try:
        writer = gguf.GGUFWriter(staging, base.architecture)
        writer.add_type(gguf.GGUFType.ADAPTER)
        writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
        writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(alpha))
        for name, lora_a, lora_b in tensors:
            writer.add_tensor(f"{name}.lora_a", np.ascontiguousarray(lora_a, dtype=np.float16))
            writer.add_tensor(f"{name}.lora_b", np.ascontiguousarray(lora_b, dtype=np.float16))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.chmod(staging, 0o644)
        os.replace(staging, path)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise
    return AdapterFile(path, file_sha256(path), path.stat().st_size, tuple(name for name, _, _ in tensors))
