"""LM construction in one place: hosted LiteLLM models, OpenAI-compatible servers, the local model.

Every command and the Python API get their `dspy.LM` here, so retries, timeouts, structured outputs
and error messages are the same everywhere. The model comes from the caller or the environment
(`EDGEWISE_MODEL`, `EDGEWISE_API_BASE`, `EDGEWISE_API_KEY`), never from a compiled program.
"""

from __future__ import annotations

import copy
import difflib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import Any, Final, Literal

import dspy
from dspy.clients import base_lm
from dspy.utils.callback import with_callbacks
from pydantic import BaseModel, ConfigDict, Field

import edgewise.runtime.offline  # noqa: F401  (offline defaults before LiteLLM loads)
from edgewise.domain.errors import EdgewiseError
from edgewise.local.local_models import LOCAL_PREFIX, ServedWeights, is_local_model
from edgewise.modules.calls import ReplyNote, note_reply
from edgewise.runtime.faults import (
    DEFAULT_RETRY_POLICY,
    RetryPolicy,
    TokenBucket,
    acall_with_retries,
    call_with_retries,
)
from edgewise.runtime.redaction import redact as redact_secrets
from edgewise.runtime.reply_cache import forget_reply, name_endpoint

ResponseFormat = Literal["auto", "json_schema", "json_object", "none"]
DEFAULT_MODEL: Final = LOCAL_PREFIX
_PLACEHOLDER_KEY: Final = "not-needed"
LOCAL_TIMEOUT_S: Final = 900.0
MAX_LIST_ITEMS: Final = 12
MAX_STRING_CHARS: Final = 300
#: The variable an API key is read from when no --api-key is given (Ray workers read it there too).
API_KEY_ENV: Final = "EDGEWISE_API_KEY"


class LMConfigError(EdgewiseError, ValueError):
    """A model, key or endpoint setting the user must fix; the message says what to set."""


class LMConfig(BaseModel):
    """How to reach a model. `api_key` is never written to artifacts, logs or error messages.

    An unknown field is refused (`LMConfig(max_retries=0)` is a `TypeError` naming `num_retries`):
    a misspelled setting would otherwise be dropped without a word and the run go on without it.
    """

    model_config = ConfigDict(extra="forbid")

    model: str = DEFAULT_MODEL
    api_base: str | None = None
    api_key: str | None = Field(default=None, repr=False, exclude=True)
    temperature: float = 0.0
    max_tokens: int = 1024
    num_retries: int = Field(default=DEFAULT_RETRY_POLICY.max_retries, ge=0)
    timeout_s: float = 120.0
    retry_base_s: float = Field(default=DEFAULT_RETRY_POLICY.base_s, gt=0)
    retry_cap_s: float = Field(default=DEFAULT_RETRY_POLICY.cap_s, gt=0)
    max_rps: float | None = Field(default=None, gt=0)
    response_format: ResponseFormat = "auto"
    cache: bool = True
    keep_history: int = Field(default=0, ge=0)
    """LM calls whose prompts and replies DSPy keeps for `inspect_history` (its global list, the LM's
    and each calling module's), a debugging aid; 0 keeps none, as a process that runs for weeks must."""
    local_slots: int = Field(default=1, ge=1)
    """Parallel slots of the bundled local model's server: replies one request may sample (`n`)."""
    lora_adapter: Path | None = None
    """A LoRA adapter GGUF the bundled local model's server adds to its weights (a fine-tuned
    program's: `edgewise.programs.lora_adapter.program_adapter(program, model)` gives it). Only a
    local model takes one: edgewise cannot change the weights of a server it did not start."""

    def __init__(self, /, **data: Any) -> None:
        unknown = sorted(set(data) - set(type(self).model_fields))
        if unknown:
            raise TypeError(unknown_fields_message(unknown))
        super().__init__(**data)

    @classmethod
    def from_env(cls, **overrides: Any) -> LMConfig:
        """Fill unset fields from EDGEWISE_MODEL / EDGEWISE_API_BASE / EDGEWISE_API_KEY."""
        env = {
            "model": os.environ.get("EDGEWISE_MODEL"),
            "api_base": os.environ.get("EDGEWISE_API_BASE"),
            "api_key": os.environ.get(API_KEY_ENV),
        }
        values = {k: v for k, v in env.items() if v} | {k: v for k, v in overrides.items() if v is not None}
        return cls(**values)

    @property
    def is_local(self) -> bool:
        return is_local_model(self.model)


def unknown_fields_message(unknown: list[str]) -> str:
    """`LMConfig has no field max_retries (did you mean num_retries?); its fields: model, ...`.

    Values are never part of the message, so a key given under a wrong name is not echoed.
    """
    fields = list(LMConfig.model_fields)
    named = []
    for name in unknown:
        close = difflib.get_close_matches(name, fields, n=1)
        named.append(f"{name} (did you mean {close[0]}?)" if close else name)
    plural = "s" if len(unknown) > 1 else ""
    return f"LMConfig has no field{plural} {', '.join(named)}; its fields: {', '.join(fields)}"


class EdgewiseLM(dspy.LM):
    """`dspy.LM` that states whether the endpoint takes a JSON schema, and retries with jitter.

    LiteLLM knows the first for hosted models but not for a self-hosted OpenAI-compatible server
    (vLLM, llama.cpp, Ollama), which does take one; without it, small models return unparseable JSON.

    Retries: DSPy makes one attempt per call (its own `num_retries` is 0 here) and tenacity repeats
    it under `retry_policy` (`num_retries` sets its `max_retries`), after `rate_limiter` allows each
    request; see `edgewise.runtime.faults` for why DSPy's own retries are off.

    History: DSPy keeps every call's prompt, reply and response object in three lists, each bounded
    only at 10,000 entries; this LM keeps the last `keep_history` calls in each (none by default).

    Replies: each is noted for the program step that asked (`edgewise.modules.calls.note_reply`):
    whether it stopped at the token limit, and how to remove it from DSPy's cache when the step
    cannot use it. DSPy's outputs carry neither, so a request is sent as `dspy.BaseLM.__call__` sends
    it (DSPy's prepare, execute and finalize), with the reply read between execute and finalize.
    """

    def __init__(
        self,
        model: str,
        *,
        response_format: ResponseFormat = "auto",
        num_retries: int = DEFAULT_RETRY_POLICY.max_retries,
        retry_policy: RetryPolicy | None = None,
        rate_limiter: TokenBucket | None = None,
        keep_history: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(model, num_retries=0, **kwargs)
        self.response_format_mode = response_format
        self.retry_policy = retry_policy or RetryPolicy(max_retries=num_retries)
        self.rate_limiter = rate_limiter
        self.keep_history = keep_history
        self.served_weights: ServedWeights | None = None
        """Set by `open_lm` on the local model it starts; None for a server edgewise did not start."""

    def _request_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.kwargs.get("api_base") and kwargs.get("response_format") is not None:
            bounded = bounded_response_format(kwargs["response_format"])
            return {**kwargs, "response_format": bounded}
        return kwargs

    def __call__(self, prompt: Any = None, *, messages: Any = None, **kwargs: Any) -> Any:
        kwargs = self._request_kwargs(kwargs)
        return call_with_retries(
            lambda: self._send(prompt, messages=messages, **kwargs), self.retry_policy, self.rate_limiter
        )

    async def acall(self, prompt: Any = None, *, messages: Any = None, **kwargs: Any) -> Any:
        kwargs = self._request_kwargs(kwargs)
        return await acall_with_retries(
            lambda: self._asend(prompt, messages=messages, **kwargs), self.retry_policy, self.rate_limiter
        )

    @with_callbacks
    def _send(self, prompt: Any = None, *, messages: Any = None, **kwargs: Any) -> Any:
        """One attempt, as `dspy.BaseLM.__call__` makes it, its reply noted (see the class docstring)."""
        from dspy.clients._deprecation import warn_openai_messages
        from dspy.clients.execution import execute, finalize, prepare

        call = prepare(self, prompt, messages, kwargs)
        warn_openai_messages(self, messages)
        result = execute(self, call)
        note_reply(reply_note(self, call, result, asynchronous=False))
        return finalize(self, call, result)

    @with_callbacks
    async def _asend(self, prompt: Any = None, *, messages: Any = None, **kwargs: Any) -> Any:
        """One attempt, as `dspy.BaseLM.acall` makes it, its reply noted (see the class docstring)."""
        import asyncio

        from dspy.clients._deprecation import warn_openai_messages
        from dspy.clients.execution import aexecute, finalize, prepare

        call = await asyncio.to_thread(prepare, self, prompt, messages, kwargs, asynchronous=True)
        warn_openai_messages(self, messages)
        result = await aexecute(self, call)
        note_reply(reply_note(self, call, result, asynchronous=True))
        return finalize(self, call, result)

    def update_history(self, entry: dict[str, Any]) -> None:
        """DSPy's record of one call, kept for the last `keep_history` calls only: in the LM's and the
        calling modules' lists (DSPy's `max_history_size`) and in DSPy's global list, which DSPy bounds
        at 10,000 whatever that setting says."""
        if self.keep_history == 0:
            return
        with dspy.context(max_history_size=self.keep_history):
            super().update_history(entry)
        excess = len(base_lm.GLOBAL_HISTORY) - self.keep_history
        if excess > 0:
            del base_lm.GLOBAL_HISTORY[:excess]

    def copy(self, **kwargs: Any) -> EdgewiseLM:
        """As `dspy.LM.copy`; `num_retries` changes edgewise's retry policy, never DSPy's own count."""
        retries = kwargs.pop("num_retries", None)
        copied = super().copy(**kwargs)
        if retries is not None:
            copied.retry_policy = copied.retry_policy._replace(max_retries=retries)
        return copied

    @property
    def supports_response_schema(self) -> bool:
        if self.response_format_mode == "auto":
            return bool(self.kwargs.get("api_base")) or super().supports_response_schema
        return self.response_format_mode == "json_schema"

    @property
    def supported_params(self) -> set[str]:
        params = set(super().supported_params)
        if self.response_format_mode == "none":
            return params - {"response_format"}
        if self.response_format_mode != "auto" or self.kwargs.get("api_base"):
            params.add("response_format")
        return params


def finish_reasons(result: Any) -> list[str | None]:
    """Why each reply of a DSPy call result ended (`stop`, `length`, ...): read from lm15's responses,
    or from the choices of a LiteLLM response on DSPy's compatibility path."""
    if result.responses:
        return [response.finish_reason for response in result.responses]
    raw = result.raw
    choices = raw.get("choices") if isinstance(raw, dict) else getattr(raw, "choices", None)
    return [
        choice.get("finish_reason") if isinstance(choice, dict) else getattr(choice, "finish_reason", None)
        for choice in choices or []
    ]


def reply_note(lm: dspy.BaseLM, call: Any, result: Any, *, asynchronous: bool) -> ReplyNote:
    """The note on one reply: cut at the token limit or not, and how to remove it from DSPy's cache
    (under the request DSPy stored it by; nothing to remove when the call did not use the cache)."""
    truncated = "length" in finish_reasons(result)
    if not call.cache:
        return ReplyNote(truncated, lambda: None)
    request = call.key(lm, asynchronous)
    return ReplyNote(truncated, lambda: forget_reply(request))


def _bound_schema(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("type") == "array":
            node.setdefault("maxItems", MAX_LIST_ITEMS)
        elif node.get("type") == "string" and "enum" not in node:
            node.setdefault("maxLength", MAX_STRING_CHARS)
        for value in node.values():
            _bound_schema(value)
    elif isinstance(node, list):
        for value in node:
            _bound_schema(value)


def bounded_response_format(response_format: Any) -> Any:
    """A JSON-schema `response_format` whose lists and strings have an upper length.

    A small model under grammar-constrained decoding can append edges (or characters) until it
    hits max_tokens; a self-hosted server (llama.cpp, vLLM) turns these bounds into its grammar, so
    the loop ends early instead of costing a minute of CPU. Hosted providers are left as they are.
    (The episode's names and types are already `enum`s: the reply type carries them, see
    `edgewise.modules.vocabulary`.)
    """
    if isinstance(response_format, type) and issubclass(response_format, BaseModel):
        from litellm.utils import type_to_response_format_param

        response_format = type_to_response_format_param(response_format)
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return response_format
    bounded = copy.deepcopy(response_format)
    _bound_schema(bounded["json_schema"].get("schema"))
    return bounded


def _check_provider(model: str, api_base: str | None) -> None:
    """Refuse a model string LiteLLM cannot route, before any request (and before any output is touched).

    LiteLLM's own check prints a "Provider List" banner on stdout, where `edgewise extract` writes
    its JSONL; the banner goes to stderr instead and the failure becomes one `LMConfigError` line.
    """
    import litellm

    try:
        with redirect_stdout(sys.stderr):
            litellm.get_llm_provider(model=model, api_base=api_base)
    except Exception as error:  # LiteLLM raises BadRequestError (and others) on a string it cannot route
        provider = model.split("/", 1)[0] if "/" in model else None
        what = f"LiteLLM has no provider {provider!r}" if provider else "LiteLLM cannot tell its provider"
        fix = (
            f"for an OpenAI-compatible server write --model openai/{model}"
            if api_base
            else "use a LiteLLM model string such as openai/gpt-4o-mini, 'local' for the bundled model, "
            "or --api-base URL for an OpenAI-compatible server"
        )
        raise LMConfigError(f"unknown model {model!r}: {what}; {fix}") from error


def _check_credentials(config: LMConfig) -> None:
    _check_provider(config.model, config.api_base)
    if config.api_key or config.api_base:
        return
    import litellm

    try:
        check = litellm.validate_environment(model=config.model)
    except Exception as error:  # LiteLLM raises on model strings it cannot route
        raise LMConfigError(
            f"unknown model {config.model!r}: use a LiteLLM model string such as openai/gpt-4o-mini, "
            "'local', or an OpenAI-compatible server with --api-base"
        ) from error
    missing = check.get("missing_keys") or []
    if missing:
        raise LMConfigError(
            f"model {config.model!r} needs {', '.join(missing)}: set it in the environment "
            "(or EDGEWISE_API_KEY / --api-key)"
        )


def build_lm(config: LMConfig, *, model_name: str | None = None, api_base: str | None = None) -> EdgewiseLM:
    """A ready LM for `config`; `model_name`/`api_base` override it (the local server fills them)."""
    config = config.model_copy(update={k: v for k, v in {"api_base": api_base}.items() if v})
    model = model_name or config.model
    if config.api_base and "/" not in model:
        model = f"openai/{model}"
    if not api_base:
        _check_credentials(config.model_copy(update={"model": model}))
    kwargs: dict[str, Any] = {
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "cache": config.cache,
        "timeout": config.timeout_s,
        "retry_policy": RetryPolicy(
            max_retries=config.num_retries, base_s=config.retry_base_s, cap_s=config.retry_cap_s
        ),
        "rate_limiter": TokenBucket(config.max_rps) if config.max_rps else None,
        "keep_history": config.keep_history,
    }
    if config.api_base:
        kwargs["api_base"] = config.api_base
        kwargs["api_key"] = config.api_key or _PLACEHOLDER_KEY
    elif config.api_key:
        kwargs["api_key"] = config.api_key
    return EdgewiseLM(model, response_format=config.response_format, **kwargs)


@contextmanager
def open_lm(config: LMConfig) -> Iterator[EdgewiseLM]:
    """Yield the LM; for `local` models, start the managed llama.cpp server first and stop it after."""
    if not config.is_local:
        if config.lora_adapter is not None:
            raise LMConfigError(
                f"a LoRA adapter ({config.lora_adapter.name}) runs only on the local model edgewise starts "
                f"(--model local/<name>); {config.model} is served elsewhere, so start that server with "
                "the adapter (llama-server --lora FILE) and run a program without one"
            )
        yield build_lm(config)
        return
    from edgewise.local.local_models import file_sha256, resolve_local_model
    from edgewise.local.local_server import LocalServer

    spec = resolve_local_model(config.model)
    adapter = config.lora_adapter
    local = config.model_copy(
        update={
            "response_format": "json_schema" if config.response_format == "auto" else config.response_format,
            # A local server is busy, not down, when it is slow: a retried request would only queue
            # behind the abandoned one on its single slot, so wait longer instead.
            "timeout_s": max(config.timeout_s, LOCAL_TIMEOUT_S),
        }
    )
    weights = f"{LOCAL_PREFIX}/{spec.name}@sha256:{spec.sha256}"
    adapter_sha256 = None if adapter is None else file_sha256(adapter)
    if adapter_sha256 is not None:
        weights += f"+lora@sha256:{adapter_sha256}"
    with LocalServer(spec, slots=config.local_slots, lora=adapter) as server:
        # Its port is new every run: cached replies are found by the weights it serves (the model
        # file, and the adapter added to it).
        name_endpoint(server.api_base, weights)
        lm = build_lm(
            local,
            model_name=f"openai/{server.model_name}",
            api_base=server.api_base,
        )
        lm.served_weights = ServedWeights(model=f"{LOCAL_PREFIX}/{spec.name}", adapter_sha256=adapter_sha256)
        yield lm


@contextmanager
def lm_context(lm: dspy.BaseLM) -> Iterator[None]:
    """Run edgewise programs with `lm` and the JSON adapter (structured outputs where supported); the
    adapter sends each episode's vocabulary in the response schema only (`VocabularyJSONAdapter`).
    DSPy keeps the history `lm` says (`LMConfig.keep_history`; none for an LM built elsewhere) and no
    trace (`history_settings`)."""
    from edgewise.modules.vocabulary import VocabularyJSONAdapter

    keep = getattr(lm, "keep_history", 0)
    with dspy.context(lm=lm, adapter=VocabularyJSONAdapter(), **history_settings(keep_history=keep)):
        yield


def history_settings(*, keep_history: int = 0) -> dict[str, Any]:
    """DSPy's settings for what a run keeps of its calls: no trace, and LM history only when
    `keep_history` > 0 (the LM then keeps that many calls, see `EdgewiseLM.update_history`).

    DSPy appends every LM call to its history lists and every predictor call (the predictor, its
    arguments, its prediction) to `settings.trace`, each bounded only at 10,000 entries, so a long run
    grows by each call's prompt, reply and response object until it holds 10,000 of each. Nothing in
    edgewise reads them; an optimizer that needs a trace opens its own (`dspy.context(trace=[])`).
    """
    return {"disable_history": keep_history == 0, "trace": None}


def redact(text: str, config: LMConfig | None) -> str:
    """`text` without the configured API key, key-like environment values or key-shaped strings."""
    return redact_secrets(text, [config.api_key if config else None], max_chars=None)
