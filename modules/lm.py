"""LM construction in one place: hosted LiteLLM models, OpenAI-compatible servers, the local model.

Every command and the Python API get their `dspy.LM` here, so retries, timeouts, structured outputs
and error messages are the same everywhere. The model comes from the caller or the environment
(`EDGEWISE_MODEL`, `EDGEWISE_API_BASE`, `EDGEWISE_API_KEY`), never from a compiled program.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final, Literal

import dspy
from pydantic import BaseModel, Field

import edgewise._offline  # noqa: F401  (offline defaults before LiteLLM loads)

ResponseFormat = Literal["auto", "json_schema", "json_object", "none"]
LOCAL_PREFIX: Final = "local"
DEFAULT_MODEL: Final = LOCAL_PREFIX
_PLACEHOLDER_KEY: Final = "not-needed"


class LMConfigError(ValueError):
    """A model, key or endpoint setting the user must fix; the message says what to set."""


class LMConfig(BaseModel):
    """How to reach a model. `api_key` is never written to artifacts, logs or error messages."""

    model: str = DEFAULT_MODEL
    api_base: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    temperature: float = 0.0
    max_tokens: int = 2048
    num_retries: int = 3
    timeout_s: float = 120.0
    response_format: ResponseFormat = "auto"
    cache: bool = True

    @classmethod
    def from_env(cls, **overrides: Any) -> LMConfig:
        """Fill unset fields from EDGEWISE_MODEL / EDGEWISE_API_BASE / EDGEWISE_API_KEY."""
        env = {
            "model": os.environ.get("EDGEWISE_MODEL"),
            "api_base": os.environ.get("EDGEWISE_API_BASE"),
            "api_key": os.environ.get("EDGEWISE_API_KEY"),
        }
        values = {k: v for k, v in env.items() if v} | {k: v for k, v in overrides.items() if v is not None}
        return cls(**values)

    @property
    def is_local(self) -> bool:
        return self.model == LOCAL_PREFIX or self.model.startswith(LOCAL_PREFIX + "/")


class EdgewiseLM(dspy.LM):
    """`dspy.LM` that states whether the endpoint takes a JSON schema as `response_format`.

    LiteLLM knows this for hosted models but not for a self-hosted OpenAI-compatible server (vLLM,
    llama.cpp, Ollama), which does take one; without it, small models return unparseable JSON.
    """

    def __init__(self, model: str, *, response_format: ResponseFormat = "auto", **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.response_format_mode = response_format

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


def _check_credentials(config: LMConfig) -> None:
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
        "num_retries": config.num_retries,
        "cache": config.cache,
        "timeout": config.timeout_s,
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
        yield build_lm(config)
        return
    from edgewise.modules.local_models import resolve_local_model
    from edgewise.modules.local_server import LocalServer

    spec = resolve_local_model(config.model)
    with LocalServer(spec) as server:
        yield build_lm(
            config.model_copy(update={"response_format": "json_schema" if config.response_format == "auto"
                                      else config.response_format}),
            model_name=f"openai/{server.model_name}",
            api_base=server.api_base,
        )


@contextmanager
def lm_context(lm: dspy.BaseLM) -> Iterator[None]:
    """Run edgewise programs with `lm` and the JSON adapter (structured outputs where supported)."""
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        yield


def add_lm_arguments(parser: argparse.ArgumentParser) -> None:
    """The model flags every subcommand shares."""
    group = parser.add_argument_group("model")
    group.add_argument(
        "--model",
        help="LiteLLM model string, or 'local' / 'local/qwen2.5-coder-0.5b' for the bundled offline model "
        "(default: $EDGEWISE_MODEL, else 'local'). Example: --model openai/gpt-4o-mini",
    )
    group.add_argument(
        "--api-base",
        help="base URL of an OpenAI-compatible server (vLLM, Ollama, llama.cpp) (default: $EDGEWISE_API_BASE). "
        "Example: --api-base http://127.0.0.1:8000/v1",
    )
    group.add_argument(
        "--api-key",
        help="API key for the model or server (default: $EDGEWISE_API_KEY, then the provider's own variable). "
        "Example: --api-key sk-...",
    )
    group.add_argument(
        "--temperature", type=float, default=0.0, help="sampling temperature (default 0). Example: --temperature 0.2"
    )
    group.add_argument(
        "--max-tokens", type=int, default=2048, help="reply token limit per call (default 2048). Example: --max-tokens 1024"
    )
    group.add_argument(
        "--max-retries",
        type=int,
        default=3,
        help="retries with backoff on rate limits, 5xx, timeouts (default 3). Example: --max-retries 5",
    )
    group.add_argument(
        "--timeout", type=float, default=120.0, help="seconds per LM request (default 120). Example: --timeout 30"
    )
    group.add_argument(
        "--response-format",
        choices=["auto", "json_schema", "json_object", "none"],
        default="auto",
        help="structured output: auto = JSON schema for local/--api-base servers and models LiteLLM knows "
        "support it; none = free text. Example: --response-format json_object",
    )
    group.add_argument(
        "--no-cache", action="store_true", help="do not reuse DSPy's cache of earlier replies. Example: --no-cache"
    )


def config_from_args(args: argparse.Namespace) -> LMConfig:
    return LMConfig.from_env(
        model=args.model,
        api_base=args.api_base,
        api_key=args.api_key,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        num_retries=args.max_retries,
        timeout_s=args.timeout,
        response_format=args.response_format,
        cache=not args.no_cache,
    )


def redact(text: str, config: LMConfig | None) -> str:
    """Remove the API key from a message (provider errors sometimes echo request headers)."""
    secrets = [s for s in (config.api_key if config else None, os.environ.get("EDGEWISE_API_KEY")) if s]
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, "***")
    return text
