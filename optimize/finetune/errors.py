"""`FinetuneError`: a fine-tuning run that cannot start or cannot go on, with what to do about it."""

from __future__ import annotations

from edgewise.domain.errors import EdgewiseError

INSTALL_HINT = "pip install 'edgewise[finetune]'"


class FinetuneError(EdgewiseError, ValueError):
    """A fine-tuning setting, base model, program or checkpoint that a run cannot use; the message says why."""
