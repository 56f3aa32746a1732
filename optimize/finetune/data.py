"""Training examples: each episode's request as the program sends it, with its gold edges as the reply.

An example is DSPy's chat format (`{"messages": [system, user, assistant]}`), made by the adapter's
`format_finetune_data`, the method `dspy.BootstrapFinetune` calls on its traces. The request is not
rebuilt here: the program runs on the episode with a model that answers every call with an empty
edge list, inside `dspy.context(trace=[])`, and the extract step's entry in DSPy's trace gives the
exact inputs and demos the program passed, so that whatever the program does before its first call
(default types, input order, speaker names) is in the example as it is at inference. Its reply is the
episode's gold edges in the program's reply shape (`reply_edge`, as gold demos show them).

DSPy 3.4's JSON adapter leaves `format_finetune_data` unimplemented; `FinetuneJSONAdapter` supplies
the chat adapter's, which is generic: the adapter's own `format` for the request, and its
`format_assistant_message_content` (a JSON object, for the JSON adapter) for the reply.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

import dspy

from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.types import Edge
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.vocabulary import EDGES_FIELD, VocabularyJSONAdapter
from edgewise.optimize.finetune.errors import FinetuneError
from edgewise.optimize.finetune.settings import PromptChoice
from edgewise.signatures.extract_edges import reply_edge

COMPACT_INSTRUCTIONS: Final = (
    "Extract every fact the CURRENT EPISODE states between two ENTITIES as edges of the RELATIONSHIP "
    "TYPES, with dates resolved against REFERENCE_TIME."
)
"""The compact prompt's whole instruction: a tuned model learns the rules from its training replies."""

_NO_EDGES: Final = json.dumps({EDGES_FIELD: []})
_SHAPE_PROBE: Final = Edge(relationship_type="T", source_entity_name="a", target_entity_name="b", fact="f")
"""An edge written in a reply shape only to learn which reply type that shape uses."""

ChatExample = dict[str, list[dict[str, str]]]
"""`{"messages": [...]}`: DSPy's chat training format (`TrainDataFormat.CHAT`)."""


class FinetuneJSONAdapter(VocabularyJSONAdapter):
    """The runtime's JSON adapter, with DSPy's chat `format_finetune_data` (see the module docstring)."""

    def format_finetune_data(
        self,
        signature: type[dspy.Signature],
        demos: list[dict[str, Any]],
        inputs: dict[str, Any],
        outputs: dict[str, Any],
    ) -> dict[str, list[Any]]:
        return dspy.ChatAdapter.format_finetune_data(self, signature, demos, inputs, outputs)


class _NoEdges(dspy.BaseLM):
    """A model that answers every request with an empty edge list: the program's first call is all
    that is wanted of it, and an empty reply makes the program's later steps ask nothing more."""

    supports_response_schema = True
    supported_params = frozenset({"response_format"})

    def __init__(self) -> None:
        super().__init__(
            model="edgewise/no-edges", model_type="chat", temperature=0.0, max_tokens=16, cache=False
        )

    def forward(self, prompt: str | None = None, messages: list[dict[str, Any]] | None = None, **kwargs: Any):
        from litellm import ModelResponse

        replies = max(1, int(kwargs.get("n") or 1))
        return ModelResponse(
            model=self.model,
            choices=[
                {"index": i, "finish_reason": "stop", "message": {"role": "assistant", "content": _NO_EDGES}}
                for i in range(replies)
            ],
            usage={"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        )


def training_program(program: EdgeExtractor, prompt: PromptChoice) -> EdgeExtractor:
    """The program the adapter is trained for and shipped with: `program` as it is, or compact.

    The compact program's extract step has `COMPACT_INSTRUCTIONS` and no demos; its inputs and reply
    shape are the program's, so it loads and runs like any compiled program.
    """
    check_trainable(program)
    tuned = program.deepcopy()
    if prompt == "compact":
        tuned.extract.signature = tuned.extract.signature.with_instructions(COMPACT_INSTRUCTIONS)
        tuned.extract.demos = []
    return tuned


def check_trainable(program: EdgeExtractor) -> None:
    """Refuse a program whose extract reply cannot be written from gold edges alone."""
    options = program.options
    if options.formulation != "edges":
        raise FinetuneError(
            f"fine-tuning trains the extract step; the {options.formulation} formulation does not call it"
        )
    if options.fact_span:
        raise FinetuneError(
            "fine-tuning writes gold replies with facts; a program with fact_span replies "
            "with sentence numbers, which the labels do not give"
        )
    (item,) = program.extract.signature.output_fields[EDGES_FIELD].annotation.__args__
    expected = type(reply_edge(_SHAPE_PROBE, program.output_shape))
    if item is not expected:
        raise FinetuneError(
            f"the program's extract step replies with {item.__name__} items; fine-tuning writes gold replies "
            f"as {expected.__name__} (the {program.output_shape} shape) only"
        )


def extract_request(program: EdgeExtractor, labeled: LabeledEpisode) -> tuple[dspy.Predict, dict[str, Any]]:
    """The extract step and the inputs the program passes it for `labeled` (see the module docstring)."""
    with dspy.context(lm=_NoEdges(), adapter=FinetuneJSONAdapter(), trace=[]):
        failure: Exception | None = None
        try:
            program(episode=labeled.episode())
        except Exception as error:  # noqa: BLE001 - only the first call is needed; it is in the trace
            failure = error
        trace = list(dspy.settings.trace or [])
    for predictor, inputs, _ in trace:
        if predictor is program.extract:
            return predictor, dict(inputs)
    raise FinetuneError(f"episode {labeled.id}: the program made no extract call ({failure or 'no error'})")


def chat_example(program: EdgeExtractor, labeled: LabeledEpisode, adapter: dspy.Adapter) -> ChatExample:
    """`labeled` as one training example: the program's request for it, and its gold edges as the reply."""
    predictor, inputs = extract_request(program, labeled)
    gold = [reply_edge(edge, program.output_shape) for edge in labeled.edges]
    return adapter.format_finetune_data(
        signature=predictor.signature, demos=predictor.demos, inputs=inputs, outputs={EDGES_FIELD: gold}
    )


class TrainingData(NamedTuple):
    """The examples in DSPy's chat format, and what the manifest says of where they came from."""

    examples: list[ChatExample]
    summary: dict[str, Any]

    @property
    def sha256(self) -> str:
        return examples_sha256(self.examples)


def examples_sha256(examples: Sequence[ChatExample]) -> str:
    """The examples' fingerprint: a checkpoint resumes only on the same examples."""
    text = "\n".join(json.dumps(example, sort_keys=True, ensure_ascii=False) for example in examples)
    return hashlib.sha256(text.encode()).hexdigest()


def training_data(
    program: EdgeExtractor, episodes: Sequence[LabeledEpisode], *, exhaustive_only: bool = True
) -> TrainingData:
    """One chat example per episode (episodes with partial labels left out when `exhaustive_only`).

    The summary counts examples per source with each source's license, since an adapter carries
    what it was trained on: a source whose license forbids shipping a model trained on it must show.
    """
    adapter = FinetuneJSONAdapter()
    kept = [episode for episode in episodes if episode.exhaustive or not exhaustive_only]
    sources: dict[str, dict[str, Any]] = {}
    for episode in kept:
        entry = sources.setdefault(episode.source, {"examples": 0, "edges": 0, "licenses": []})
        entry["examples"] += 1
        entry["edges"] += len(episode.edges)
        if episode.license not in entry["licenses"]:
            entry["licenses"].append(episode.license)
    examples = [chat_example(program, episode, adapter) for episode in kept]
    summary = {
        "episodes": len(episodes),
        "examples": len(examples),
        "left_out_partial_labels": len(episodes) - len(kept),
        "sources": dict(sorted(sources.items())),
    }
    return TrainingData(examples, summary)
