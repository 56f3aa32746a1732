"""The program behind the service: run in a bounded thread pool under the service's LM, each failure
turned into the `ServiceError` a client sees and logged without secrets."""

from __future__ import annotations

import asyncio
import logging
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any

import dspy

from edgewise.runtime.redaction import redact
from edgewise.runtime.runner import run_episode
from edgewise.service.errors import provider_failure
from edgewise.signatures.episode import Episode
from edgewise.signatures.errors import REASON_INTERNAL
from edgewise.signatures.types import ExtractionResult

logger = logging.getLogger("edgewise.service")


class ProgramRunner:
    """Runs the program in a bounded thread pool under the service's LM; one per app."""

    def __init__(self, program: dspy.Module, lm: dspy.BaseLM | None, workers: int, secrets: set[str]) -> None:
        self.program = program
        self.lm = lm
        self.workers = workers
        self.secrets = secrets
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=self.workers, thread_name_prefix="edgewise-serve"
                )
            return self._executor

    def shutdown(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    def _lm_scope(self) -> AbstractContextManager[Any]:
        """The service's LM, or `dspy.configure`'s; either way DSPy keeps no record of the calls
        beyond what the LM's `keep_history` says (a service runs for weeks)."""
        from edgewise.runtime.lm import history_settings, lm_context

        if self.lm is None:
            return dspy.context(**history_settings())
        return lm_context(self.lm)

    def _extract_sync(self, episode: Episode) -> ExtractionResult:
        with self._lm_scope():
            outcome = run_episode(self.program, episode)
        if outcome.error is not None:
            raise outcome.error
        if not isinstance(outcome.result, ExtractionResult):
            raise TypeError(
                f"the program returned {type(outcome.result).__name__} as .result, not an ExtractionResult"
            )
        return outcome.result

    async def extract(self, episode: Episode) -> ExtractionResult:
        """The program's result, or a `ServiceError` saying why not (secrets removed, failure logged)."""
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self.executor(), self._extract_sync, episode)
        except Exception as error:  # noqa: BLE001 - every failure becomes a status and a reason
            failure = provider_failure(error, self.secrets)
            if failure.body.reason == REASON_INTERNAL:
                trace = "".join(traceback.format_exception(error))
                logger.error("extraction failed: %s", redact(trace, self.secrets).replace("\n", " | "))
            else:
                logger.warning("extraction failed: %s: %s", failure.body.reason, failure.body.message)
            raise failure from None
