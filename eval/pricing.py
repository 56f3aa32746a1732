"""What a run's tokens cost, by LiteLLM's bundled price table."""

from __future__ import annotations

from edgewise.runtime.lm import LMConfig


def price_usd(config: LMConfig, prompt_tokens: int, completion_tokens: int) -> float | None:
    """What LiteLLM's bundled price table says these tokens cost, or None when it has no price.

    Local models cost nothing per token but are not free to run, so they get None ("n/a") rather than
    0. A model behind its own `--api-base` is priced under its model name when LiteLLM knows it.
    """
    if config.is_local:
        return None
    import litellm

    name = config.model
    if config.api_base and "/" not in name:
        name = f"openai/{name}"  # how `build_lm` routes a bare name to a server
    provider = name.split("/", 1)[0] if "/" in name else None
    if name not in litellm.model_cost and provider not in litellm.provider_list:
        return None  # no provider to route to: LiteLLM would print its provider list on stdout
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=name, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    except Exception:  # noqa: BLE001  (LiteLLM raises assorted error types for unpriced models)
        return None
    return float(prompt_cost) + float(completion_cost)
