"""A training run's checkpoint: the adapter, the optimizer and the progress, resumed only by the same run.

"The same run" is a key of everything that changes the steps taken (the settings, the base model's
sha256, the examples' fingerprint); a checkpoint with another key is refused with what differs,
so that a changed setting never silently continues someone else's adapter.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

from edgewise.optimize.finetune.errors import FinetuneError

CHECKPOINT_FILE: Final = "checkpoint.pt"
CHECKPOINT_INFO: Final = "checkpoint.json"


class Checkpoints:
    """The run's state in `folder`: `checkpoint.pt` (the adapter, the optimizer and how far the run got,
    read with `weights_only`) and `checkpoint.json` (what run it belongs to, and the progress again for
    people to read), each replaced atomically."""

    def __init__(self, folder: Path, key: dict[str, Any]) -> None:
        self.folder = folder
        self.key = key

    def read(self) -> dict[str, Any] | None:
        """The saved state of this run, None when there is none; another run's is refused."""
        info_path = self.folder / CHECKPOINT_INFO
        if not info_path.is_file():
            return None
        info = json.loads(info_path.read_text(encoding="utf-8"))
        saved = info.get("key", {})
        differs = sorted(name for name in set(saved) | set(self.key) if saved.get(name) != self.key.get(name))
        if differs:
            raise FinetuneError(
                f"{self.folder} holds a checkpoint of another run (it differs in: {', '.join(differs)}); "
                "start afresh (--fresh) or train into another --out"
            )
        import torch

        # The tensor file carries its own progress too: it is the truth when a crash fell between the two writes.
        return torch.load(self.folder / CHECKPOINT_FILE, map_location="cpu", weights_only=True)

    def write(self, adapter: dict[str, Any], optimizer: dict[str, Any], info: dict[str, Any]) -> None:
        import torch

        self.folder.mkdir(parents=True, exist_ok=True)
        staging = self.folder / f".{CHECKPOINT_FILE}.partial"
        torch.save({"adapter": adapter, "optimizer": optimizer, **info}, staging)
        os.replace(staging, self.folder / CHECKPOINT_FILE)
        text = json.dumps({"key": self.key, **info}, indent=2) + "\n"
        staging_info = self.folder / f".{CHECKPOINT_INFO}.partial"
        staging_info.write_text(text, encoding="utf-8")
        os.replace(staging_info, self.folder / CHECKPOINT_INFO)

    def clear(self) -> None:
        for name in (CHECKPOINT_FILE, CHECKPOINT_INFO):
            (self.folder / name).unlink(missing_ok=True)
