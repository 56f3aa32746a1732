"""The flags several commands share: the model flags (`--model`, `--api-base`, retries, ...) and
`--open-types`, each defined once, with the `LMConfig` they make."""

from __future__ import annotations

import argparse
from typing import Any, Final

from pydantic import ValidationError

from edgewise.cli.flags import above, at_least, dest
from edgewise.runtime.faults import DEFAULT_RETRY_POLICY
from edgewise.runtime.lm import LMConfig, LMConfigError

# The model flags that take a number: (flag, its type and bound, the LMConfig field it sets, meaning,
# an example value). The default is the field's own, and the help's "(default ...)" states it; None is
# no limit.
_NUMBER_FLAGS: Final = (
    ("--temperature", at_least(0, whole=False), "temperature", "sampling temperature", "0.2"),
    (
        "--max-tokens",
        at_least(1),
        "max_tokens",
        "reply token limit per call; bounds a small model that loops",
        "2048",
    ),
    (
        "--max-retries",
        at_least(0),
        "num_retries",
        (
            "retries per model request on rate limits, 5xx, timeouts, dropped connections and 2xx "
            "replies that are not JSON; exponential backoff with jitter, Retry-After honoured"
        ),
        "5",
    ),
    (
        "--retry-backoff",
        above(0),
        "retry_base_s",
        (
            "backoff scale in seconds when the provider gives no Retry-After: retry n waits between half "
            f"and all of this times 2**n, at most {DEFAULT_RETRY_POLICY.cap_s:g} s"
        ),
        "0.5",
    ),
    (
        "--max-rps",
        above(0),
        "max_rps",
        "at most this many model requests a second, retries included, shared by all workers",
        "5",
    ),
    ("--timeout", above(0), "timeout_s", "seconds per LM request", "30"),
    (
        "--keep-history",
        at_least(0),
        "keep_history",
        (
            "for debugging: the last N model calls (prompt and reply) DSPy keeps in memory, for "
            "dspy.inspect_history; 0 keeps none, so that a long run or a service holds no per-call state"
        ),
        "20",
    ),
    (
        "--local-slots",
        at_least(1),
        "local_slots",
        (
            "parallel slots of the bundled local model's server (--model local): a program that samples "
            "k replies per request needs k"
        ),
        "3",
    ),
)


def add_lm_arguments(parser: argparse.ArgumentParser, *, cache_flag: bool = True) -> None:
    """The model flags every subcommand shares; `cache_flag=False` where the cache is always off (bench)."""
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
    for flag, number, field, meaning, example in _NUMBER_FLAGS:
        default = LMConfig.model_fields[field].default
        shown = "(default: no limit)" if default is None else f"(default {default:g})"
        group.add_argument(
            flag, type=number, default=default, help=f"{meaning} {shown}. Example: {flag} {example}"
        )
    group.add_argument(
        "--response-format",
        choices=["auto", "json_schema", "json_object", "none"],
        default="auto",
        help="structured output: auto = JSON schema for local/--api-base servers and models LiteLLM knows "
        "support it; none = free text. Example: --response-format json_object",
    )
    if cache_flag:
        group.add_argument(
            "--no-cache",
            action="store_true",
            help="do not reuse or store replies in edgewise's reply cache (~/.cache/edgewise/replies, or "
            "$EDGEWISE_CACHE/replies). Example: --no-cache",
        )


# The flag that sets each LMConfig field, so that a value refused by the config names what to change.
_FLAG_OF_FIELD: Final = {
    "model": "--model",
    "api_base": "--api-base",
    "api_key": "--api-key",
    "response_format": "--response-format",
    **{field: flag for flag, _type, field, _meaning, _example in _NUMBER_FLAGS},
}


def config_from_args(args: argparse.Namespace) -> LMConfig:
    """The `LMConfig` of the model flags; a value the config refuses is an `LMConfigError` naming its flag.

    Each field comes from its flag in `_FLAG_OF_FIELD`; a flag the command lacks leaves the field to
    the environment or its default, as does `--no-cache` (the cache on) where the command has none.
    """
    values = {field: getattr(args, dest(flag), None) for field, flag in _FLAG_OF_FIELD.items()}
    try:
        return LMConfig.from_env(**values, cache=not getattr(args, "no_cache", False))
    except ValidationError as error:
        fields = [str((detail["loc"] or ("model settings",))[0]) for detail in error.errors()]
        problems = "; ".join(
            f"{_FLAG_OF_FIELD.get(name, name)}: {detail['msg']}"
            for name, detail in zip(fields, error.errors(), strict=True)
        )
        raise LMConfigError(problems) from None


def program_flags(args: argparse.Namespace) -> dict[str, Any]:
    """How the flags shape a program resolved by name (`--reflexion-rounds`, `--open-types`,
    `--find-entities`), as `resolve_program` and the Ray driver take them; both extract engines use it."""
    return {
        "reflexion_rounds": args.reflexion_rounds,
        "open_types": args.open_types,
        "find_entities": args.find_entities,
    }


def add_open_types_argument(parser: argparse.ArgumentParser) -> None:
    """`--open-types`, shared by the commands that build an `EdgeExtractor` (extract, bench, optimize)."""
    parser.add_argument(
        "--open-types",
        action="store_true",
        help="let the model write relationship types outside the episode's edgeTypes, as the seed prompt "
        "allows (default: only the listed types on a self-hosted server). Example: --open-types",
    )


_PROGRAM_HELP: Final = (
    "compiled program directory or shipped name, or default (the uncompiled program) / seed / "
    "seed-structured / graphiti / graphiti-structured / llama-index / llama-index-structured / langchain "
    "(the peers' own prompts; LlamaIndex's and LangChain's find their own entities) "
    "(default: the shipped program compiled for --model, "
    "qwen2.5-coder-1.5b-program-v2 for local; default for any other model). "
    "Example: --program runs/prog"
)


def add_program_argument(parser: argparse.ArgumentParser) -> None:
    """`--program`, the one program a command runs (extract, serve); bench takes a list, `--programs`.

    Left out, it is None: the command chooses the program compiled for its model (`choose_program`).
    """
    parser.add_argument("--program", default=None, help=_PROGRAM_HELP)


def add_no_progress_argument(parser: argparse.ArgumentParser, *, bars: str = "bar") -> None:
    """`--no-progress`, for the commands that draw progress on stderr (extract one bar, bench several)."""
    parser.add_argument(
        "--no-progress", action="store_true", help=f"no progress {bars} on stderr. Example: --no-progress"
    )
